"""Shared pieces of the training commands: resumable checkpoints, wall-time
budgets, logging, learning-rate schedule."""

from __future__ import annotations

import json
import math
import signal
import sys
import threading
import time
from pathlib import Path

import torch

from ..engine.files import atomic_write


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


class StopSignals:
    """SIGTERM and SIGINT ask a training loop to stop after its current step (``requested`` names the
    signal) instead of killing it mid-step, so it can checkpoint first; ``restore()`` puts the old
    handlers back. Outside the main thread (signals cannot be caught there) it never asks."""

    def __init__(self):
        self.requested: str | None = None
        self._old = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                self._old[sig] = signal.signal(sig, self._ask)

    def _ask(self, signum, _frame) -> None:
        self.requested = signal.Signals(signum).name

    def restore(self) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old = {}


def write_json(path: Path, obj: dict) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=str))


def run_resumable(a, *, out: Path, log_name: str, checkpoint: str, check, build, describe) -> int:
    """The life of a resumable training command (``train vq``, ``train recogniser``).

    ``check(a)`` raises ValueError naming a bad option; ``build(log)`` loads the data and returns a set-up trainer (with ``step``,
    ``data.note``, ``ckpt_path``, ``stop_reason``, ``loop(stop_flag)``,
    ``save_checkpoint()`` and ``export(out)``), raising FileNotFoundError or
    ValueError for bad input; ``describe(trainer)`` is the line logged before
    training. Exit codes: 0 done or stopped by budget/--stop-after (the weights
    so far are exported, so a budgeted run always leaves usable ones), 2 bad
    input, 130 Ctrl-C, 143 SIGTERM (both checkpoint first; the same command
    resumes). A re-run with nothing left to train keeps an existing export.
    """
    try:
        check(a)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    a.run.mkdir(parents=True, exist_ok=True)
    with open(a.run / log_name, "a", encoding="utf-8") as log_file:
        def log(msg: str) -> None:
            print(msg, flush=True)
            log_file.write(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] {msg}\n")
            log_file.flush()

        prev_threads = torch.get_num_threads()
        torch.set_num_threads(a.threads)
        stop_flag = threading.Event()
        in_main = threading.current_thread() is threading.main_thread()
        old_handler = signal.signal(signal.SIGTERM, lambda *_: stop_flag.set()) if in_main else None
        try:
            try:
                if a.export and not (a.run / checkpoint).is_file():
                    raise ValueError(f"{a.run / checkpoint}: no checkpoint to export (train first)")
                trainer = build(log)
            except (FileNotFoundError, ValueError) as e:
                print(f"error: {e}", file=sys.stderr)
                return 2
            if trainer.data.note:
                log(f"note: {trainer.data.note}")
            if a.export:
                trainer.export(out)
                return 0
            start_step = trainer.step
            if trainer.step < a.steps:
                log(describe(trainer))
                try:
                    trainer.loop(stop_flag)
                except KeyboardInterrupt:
                    trainer.save_checkpoint()
                    log(f"interrupted at step {trainer.step}; checkpoint saved, re-run the same command to resume")
                    return 130
                if trainer.stop_reason == "interrupted":
                    log(f"terminated at step {trainer.step}; checkpoint saved, re-run the same command to resume")
                    return 143
            if trainer.step == start_step and out.is_file():
                log(f"already trained to step {trainer.step}; {out} is up to date (--export rewrites it, "
                    "a larger --steps continues)")
                return 0
            if trainer.step < a.steps:
                log(f"stopped at step {trainer.step}/{a.steps} ({trainer.stop_reason}); checkpoint saved to "
                    f"{trainer.ckpt_path}; exporting the weights so far; re-run the same command to resume")
            trainer.export(out)
            return 0
        finally:
            if old_handler is not None:
                signal.signal(signal.SIGTERM, old_handler)
            torch.set_num_threads(prev_threads)
