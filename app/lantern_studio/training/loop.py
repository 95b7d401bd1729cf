"""The one loop driver every trainer runs on (``train vq``, ``train recogniser``, ``train ar``,
``train drafter``); :mod:`.lifecycle` is the life of a command around it.

A trainer owns its data, model and optimiser and knows how to take one step; the driver owns
the life around the steps, the same for all of them:

* **budget**: the loop ends at ``steps`` (the schedule's total), after ``budget_minutes`` of wall
  time, or after ``stop_after`` steps of this invocation, whichever comes first;
* **checkpoint**: one format (:data:`FORMAT`): the trainer's kind, model and optimiser state, the
  batch generator's and torch's RNG states, the step, the wall time so far, the evaluation history
  and the trainer's own ``extra`` state. Written atomically (temporary file + rename, so a
  ``kill -9`` leaves the previous checkpoint whole) every ``checkpoint_seconds`` and whenever
  the loop ends;
* **resume**: re-running the same command reads the checkpoint (:func:`read_checkpoint`) and
  continues from its step (:func:`restore`);
* **stop**: SIGTERM / SIGINT finish the current step, checkpoint, and end the loop with
  ``stopped_by`` naming the signal (the commands exit 143 / 130);
* **evaluate**: every ``eval_every`` steps and once more at the end (unless a signal stopped it),
  into the history the checkpoint keeps;
* **log**: one line format, ``step N/T  name value …  X.XXs/step``, with the step's numbers
  averaged over the log window, and ``eval step N: …`` for evaluations.

The loop drives a :class:`Steppable`: ``kind`` (str), ``step`` (int), ``model``, ``opt``, ``gen`` (a
``torch.Generator``), ``train_step() -> dict[str, float]`` (one optimiser step, ``step`` += 1),
``evaluate() -> (row, text)`` (a history row and its log text), ``extra_state() -> dict`` and
``load_extra_state(extra)``. Self-distillation (``train drafter --model``) runs on it too, without a
checkpoint (its samples are not kept) and with the caller's cancel and progress hooks.
"""

from __future__ import annotations

import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

import torch

from .common import atomic_torch_save
from .errors import TrainingError

FORMAT = "lantern-studio/training-checkpoint"
VERSION = 2
CHECKPOINT_NAME = "checkpoint.pt"
EXIT_CODES = {"SIGINT": 130, "SIGTERM": 143}


class Steppable(Protocol):
    """What the loop and the checkpoint ask of a trainer (:class:`.lifecycle.Trainer` adds what a command asks)."""

    kind: str
    step: int
    model: torch.nn.Module
    opt: torch.optim.Optimizer
    gen: torch.Generator

    def train_step(self) -> dict[str, float]: ...

    def evaluate(self) -> tuple[dict[str, Any], str]: ...

    def extra_state(self) -> dict[str, Any]: ...

    def load_extra_state(self, extra: dict[str, Any]) -> None: ...


@dataclass
class LoopSettings:
    steps: int
    budget_minutes: float | None = None
    checkpoint_seconds: float = 180.0
    log_every: int = 20
    eval_every: int = 0  # 0: only the final evaluation
    stop_after: int | None = None  # steps of this invocation (tests)

    @classmethod
    def from_args(cls, a) -> "LoopSettings":
        return cls(steps=a.steps, budget_minutes=a.budget_minutes, checkpoint_seconds=a.checkpoint_seconds,
                   log_every=a.log_every, eval_every=a.eval_every, stop_after=getattr(a, "stop_after", None))


def read_checkpoint(path: Path, kind: str) -> dict | None:
    """The run's checkpoint, or None when there is none yet. TrainingError names the file when it
    is unreadable, not a training checkpoint, or another trainer's."""
    path = Path(path)
    if not path.is_file():
        legacy = path.with_name("ckpt.pt")
        if legacy.is_file():
            raise TrainingError(f"{legacy}: a checkpoint in the format before {VERSION}; continue from its exported "
                             "weights with --init-from in a new --run folder")
        return None
    try:
        ck = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:
        raise TrainingError(f"{path}: unreadable checkpoint ({type(e).__name__}: {e}); move it away to start "
                         "over") from None
    if not isinstance(ck, dict) or ck.get("format") != FORMAT:
        raise TrainingError(f"{path}: not a lantern-studio training checkpoint")
    if ck.get("kind") != kind:
        raise TrainingError(f"{path}: a checkpoint of `train {ck.get('kind')}`, not `train {kind}`; "
                         "use another --run folder")
    return ck


def restore(trainer: Steppable, ck: dict, *, batches: bool = True) -> None:
    """Put a checkpoint's state back into a trainer built with the same settings (its model already
    on its device, so the optimiser's state follows it). ``batches=False`` keeps the trainer's own
    batch generator (the other ranks of a distributed run draw their own batches)."""
    trainer.model.load_state_dict(ck["model"])
    trainer.opt.load_state_dict(ck["optimizer"])
    if batches:
        trainer.gen.set_state(ck["rng"])
    torch.set_rng_state(ck["torch_rng"])
    trainer.step = int(ck["step"])
    trainer.load_extra_state(ck.get("extra", {}))


def write_checkpoint(path: Path, trainer: Steppable, *, wall: float, history: list) -> None:
    atomic_torch_save({
        "format": FORMAT, "version": VERSION, "kind": trainer.kind, "step": int(trainer.step),
        "model": trainer.model.state_dict(), "optimizer": trainer.opt.state_dict(),
        "rng": trainer.gen.get_state(), "torch_rng": torch.get_rng_state(),
        "wall_seconds": float(wall), "history": list(history), "extra": trainer.extra_state(),
    }, Path(path))


class StopSignals:
    """SIGTERM and SIGINT ask the loop to stop after its current step (``requested`` names the
    signal) instead of killing it mid-step; ``restore()`` puts the old handlers back. Outside the
    main thread (signals cannot be caught there) it never asks."""

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


def _fields(means: dict[str, float]) -> str:
    return "  ".join(f"{k} {v:.3e}" if k == "lr" else f"{k} {v:.4g}" for k, v in means.items())


class TrainingLoop:
    """Drives one trainer from its current step (see the module docstring).

    ``main`` is False on the non-zero ranks of a distributed run (they neither checkpoint nor
    evaluate); ``agree(flag)`` makes every rank take the same stop decision (any rank's flag).
    """

    def __init__(self, trainer: Steppable, ckpt_path: Path | None, log: Callable[[str], None], settings: LoopSettings,
                 *, resumed: dict | None = None, main: bool = True, agree: Callable[[bool], bool] | None = None,
                 should_stop: Callable[[], bool] | None = None, on_step: Callable[[int], None] | None = None):
        self.trainer = trainer
        self.ckpt_path = None if ckpt_path is None else Path(ckpt_path)
        self.should_stop = should_stop
        self.on_step = on_step
        self.log = log
        self.s = settings
        self.main = main
        self.agree = agree or (lambda flag: flag)
        self.wall_before = float(resumed["wall_seconds"]) if resumed else 0.0
        self.history: list = list(resumed.get("history", [])) if resumed else []
        self.t0 = time.time()
        self.stopped_by: str | None = None  # "SIGTERM" / "SIGINT"
        self.end_reason = ""

    @property
    def wall(self) -> float:
        return self.wall_before + time.time() - self.t0

    def save(self) -> None:
        if self.main and self.ckpt_path is not None:
            write_checkpoint(self.ckpt_path, self.trainer, wall=self.wall, history=self.history)

    def evaluate(self) -> None:
        if not self.main:
            return
        row, text = self.trainer.evaluate()
        self.history.append({"step": self.trainer.step, **row, "wall": round(self.wall, 1)})
        self.log(f"eval step {self.trainer.step}: {text}")

    def _stop_reason(self, steps_here: int, signals: StopSignals) -> str:
        s = self.s
        if signals.requested:
            return f"stopped by {signals.requested}"
        if s.budget_minutes is not None and time.time() - self.t0 >= s.budget_minutes * 60:
            return f"wall budget of {s.budget_minutes:g} min spent"
        if s.stop_after is not None and steps_here >= s.stop_after:
            return f"--stop-after {s.stop_after} reached"
        if self.should_stop is not None and self.should_stop():
            return "cancelled"
        return ""

    def run(self) -> str:
        """Train to the end of the schedule or until stopped; checkpoint; return why it ended
        ("done" or the reason it stopped early)."""
        t, s = self.trainer, self.s
        signals = StopSignals()
        steps_here, last_ckpt = 0, time.time()
        window: dict[str, float] = {}
        win_n, win_t = 0, time.time()
        try:
            while t.step < s.steps:
                reason = self._stop_reason(steps_here, signals)
                if self.agree(bool(reason)):
                    self.end_reason = reason or "another rank stopped"
                    break
                numbers = t.train_step()
                steps_here += 1
                if self.on_step is not None:
                    self.on_step(t.step)
                win_n += 1
                for k, v in numbers.items():
                    window[k] = window.get(k, 0.0) + float(v)
                if t.step % s.log_every == 0 or t.step == s.steps:
                    per = (time.time() - win_t) / win_n
                    self.log(f"step {t.step}/{s.steps}  {_fields({k: v / win_n for k, v in window.items()})}  "
                             f"{per:.2f}s/step")
                    window, win_n, win_t = {}, 0, time.time()
                if s.eval_every > 0 and t.step % s.eval_every == 0:
                    self.evaluate()
                if self.ckpt_path is not None and time.time() - last_ckpt >= s.checkpoint_seconds:
                    self.save()
                    last_ckpt = time.time()
                    self.log(f"checkpoint at step {t.step}")
        finally:
            signals.restore()
        self.stopped_by = signals.requested if signals.requested and t.step < s.steps else None
        if t.step >= s.steps:
            self.end_reason = "done"
        if not self.stopped_by and (not self.history or self.history[-1]["step"] != t.step):
            self.evaluate()  # the export reports the weights it writes
        self.save()
        if self.ckpt_path is None:
            pass  # nothing to resume (self-distillation keeps no samples): the caller reports the end
        elif self.stopped_by:
            self.log(f"stopped by {self.stopped_by} at step {t.step}; checkpoint saved, re-run the same command "
                     "to resume")
        elif self.end_reason != "done":
            self.log(f"stopped at step {t.step}/{s.steps} ({self.end_reason}); checkpoint saved, re-run the same "
                     "command to resume")
        return self.end_reason

    @property
    def exit_code(self) -> int:
        return EXIT_CODES.get(self.stopped_by or "", 0)
