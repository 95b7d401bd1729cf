"""Shared pieces of the training commands: resumable checkpoints, wall-time
budgets, logging, learning-rate schedule."""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import torch

from ..engine.checkpoints import atomic_write


class RunLog:
    """Prints progress lines and appends them to ``run_dir/log.txt``."""

    def __init__(self, run_dir: Path, quiet: bool = False):
        self.path = Path(run_dir) / "log.txt"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.quiet = quiet

    def __call__(self, msg: str) -> None:
        line = f"[{time.strftime('%H:%M:%S')}] {msg}"
        if not self.quiet:
            print(line, file=sys.stderr, flush=True)
        with open(self.path, "a") as f:
            f.write(line + "\n")


def cosine_lr(step: int, total: int, peak: float, warmup: int, floor: float = 0.1) -> float:
    if step < warmup:
        return peak * (step + 1) / warmup
    t = min(1.0, (step - warmup) / max(1, total - warmup))
    return peak * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * t)))


def atomic_torch_save(obj, path: Path) -> None:
    atomic_write(path, lambda p: torch.save(obj, p))


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write(path, lambda p: Path(p).write_text(text, encoding="utf-8"))


def save_checkpoint(path: Path, **state) -> None:
    atomic_torch_save(state, path)


def load_checkpoint(path: Path):
    """A resumable checkpoint (model, optimizer, step, torch RNG states) or None."""
    if not Path(path).is_file():
        return None
    return torch.load(path, map_location="cpu", weights_only=True)


class Budget:
    """Stops a loop when the wall budget is spent; says when to checkpoint."""

    def __init__(self, minutes: float | None, every_seconds: float = 180.0):
        self.t0 = time.time()
        self.deadline = None if not minutes else self.t0 + minutes * 60
        self.every = every_seconds
        self.last = self.t0

    def spent(self) -> bool:
        return self.deadline is not None and time.time() >= self.deadline

    def checkpoint_due(self) -> bool:
        if time.time() - self.last >= self.every:
            self.last = time.time()
            return True
        return False

    @property
    def elapsed(self) -> float:
        return time.time() - self.t0


def write_json(path: Path, obj: dict) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=str))
