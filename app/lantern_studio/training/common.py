"""Shared pieces of the training commands: the run log, atomic writes, the learning-rate
schedule. The loop itself (budget, checkpoint, resume, stop) is :mod:`.loop`."""

from __future__ import annotations

import hashlib
import json
import math
import sys
import time
from pathlib import Path

import torch
from safetensors.torch import load_file

from ..engine.files import atomic_write


def say(msg: str) -> None:
    """A progress line of a one-off command (``train data``): to stderr, at once."""
    print(msg, file=sys.stderr, flush=True)


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


def tensors_digest(tensors) -> str:
    """sha256 over named tensors (a state dict, or a safetensors file's path): each name, dtype, shape and
    bytes in name order. Equal digests mean identical weights; a file's own bytes also carry its metadata,
    whose order varies between writers, so weights are compared by this, never by the file's hash."""
    if not isinstance(tensors, dict):
        tensors = load_file(str(tensors))  # a file's tensors, on the CPU
    h = hashlib.sha256()
    for name, t in sorted(tensors.items()):
        t = t.detach().cpu().contiguous()
        h.update(f"{name}|{str(t.dtype).removeprefix('torch.')}|{tuple(t.shape)}|".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


def atomic_torch_save(obj, path: Path) -> None:
    atomic_write(path, lambda p: torch.save(obj, p))


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write(path, lambda p: Path(p).write_text(text, encoding="utf-8"))


def write_json(path: Path, obj: dict) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=str))
