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
  continues from its step (:func:`restore`). The file is untrusted input: every field is checked
  (:func:`checkpoint_problem`), then its fit to the trainer (:func:`restore_problem`), before any of
  it is loaded; a save that fails (a full disk) keeps the previous checkpoint and says so;
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

import argparse
import math
import shutil
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

import torch

from ..engine.checkpoints import describe_mismatch
from .common import atomic_torch_save
from .errors import TrainingError, need

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
    stop_at: int | None = None  # the global step a recipe's schedule segment ends at (train replay)

    @classmethod
    def from_args(cls, a) -> "LoopSettings":
        return cls(steps=a.steps, budget_minutes=a.budget_minutes, checkpoint_seconds=a.checkpoint_seconds,
                   log_every=a.log_every, eval_every=a.eval_every, stop_after=getattr(a, "stop_after", None),
                   stop_at=getattr(a, "stop_at", None))


@dataclass(frozen=True)
class LoopDefaults:
    """One trainer's defaults for the loop flags every trainer takes (:func:`loop_arguments`).
    ``stop_after``: whether it also takes the hidden ``--stop-after N`` (the tests' early stop)."""

    steps: int
    batch: int
    lr: float
    warmup: int
    threads: int
    log_every: int
    eval_every: int
    checkpoint_seconds: float = 180.0
    seed: int = 0
    stop_after: bool = False


def loop_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup, defaults: LoopDefaults) -> None:
    """The loop flags, the same in every trainer: the schedule (``--steps``, ``--lr``, ``--warmup``), the
    batch and seed, the budget, the CPU threads and the log / evaluation / checkpoint cadence."""
    d = defaults
    parser.add_argument("--steps", type=int, default=d.steps, help="total steps of the schedule (default: %(default)s)")
    parser.add_argument("--budget-minutes", type=float, default=None,
                        help="stop (and checkpoint) after this much wall time; the same command resumes")
    if d.stop_after:
        parser.add_argument("--stop-after", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--batch", type=int, default=d.batch, help="batch size (default: %(default)s)")
    parser.add_argument("--lr", type=float, default=d.lr, help="peak learning rate (default: %(default)s)")
    parser.add_argument("--warmup", type=int, default=d.warmup, help="linear warm-up steps (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=d.seed)
    parser.add_argument("--threads", type=int, default=d.threads, help="torch CPU threads (default: %(default)s)")
    parser.add_argument("--log-every", type=int, default=d.log_every,
                        help="a progress line every N steps (default: %(default)s)")
    parser.add_argument("--eval-every", type=int, default=d.eval_every,
                        help="an evaluation every N steps (0: only at the end; default: %(default)s)")
    parser.add_argument("--checkpoint-seconds", type=float, default=d.checkpoint_seconds,
                        help="write a resumable checkpoint this often (default: %(default)s)")


def check_loop_arguments(a, *, min_steps: int = 1) -> None:
    """The loop flags' values, each named when out of range (a :class:`.errors.TrainingError`).
    ``min_steps=0`` for a trainer whose ``--steps 0`` exports its start weights untrained (a grown or
    warm-started model)."""
    need(a.steps >= min_steps, "--steps", f">= {min_steps}", a.steps)
    need(a.batch >= 1, "--batch", ">= 1", a.batch)
    need(a.lr > 0, "--lr", "> 0", a.lr)
    need(a.warmup >= 0, "--warmup", ">= 0", a.warmup)
    need(a.budget_minutes is None or a.budget_minutes >= 0, "--budget-minutes", ">= 0", a.budget_minutes)
    need(a.threads >= 1, "--threads", ">= 1", a.threads)
    need(a.log_every >= 1, "--log-every", ">= 1", a.log_every)
    need(a.eval_every >= 0, "--eval-every", ">= 0", a.eval_every)
    need(a.checkpoint_seconds > 0, "--checkpoint-seconds", "> 0", a.checkpoint_seconds)
    stop_after = getattr(a, "stop_after", None)
    need(stop_after is None or stop_after >= 0, "--stop-after", ">= 0", stop_after)


def read_checkpoint(path: Path, kind: str) -> dict | None:
    """The run's checkpoint, or None when there is none yet. TrainingError names the file when it
    is not a file, unreadable, not a training checkpoint, another trainer's, or any of its fields is
    not what :func:`write_checkpoint` writes (checked here, before anything is built from it; what
    must fit the trainer — shapes, optimiser groups, RNG sizes — :func:`restore` checks)."""
    path = Path(path)
    if not path.is_file():
        if path.exists() or path.is_symlink():
            what = "a directory" if path.is_dir() else "not a regular file"
            raise TrainingError(f"{path}: is {what}, not a checkpoint; move it away to start over")
        legacy = path.with_name("ckpt.pt")
        if legacy.is_file():
            raise TrainingError(f"{legacy}: a checkpoint in the format before {VERSION}; continue from its exported "
                             "weights with --init-from in a new --run folder")
        return None
    try:
        ck = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:
        # Only the first line of torch's message: the rest advises weights_only=False, never to be done here.
        first = (str(e).strip().splitlines() or [""])[0][:300]
        if "weights_only" in first or "Weights only load failed" in first:
            first = "it holds Python objects other than tensors (refused: only plain tensors are loaded)"
        raise TrainingError(f"{path}: unreadable checkpoint ({type(e).__name__}: {first}); move it away to start "
                         "over") from None
    if not isinstance(ck, dict) or ck.get("format") != FORMAT:
        raise TrainingError(f"{path}: not a lantern-studio training checkpoint")
    if ck.get("kind") != kind:
        raise TrainingError(f"{path}: a checkpoint of `train {ck.get('kind')}`, not `train {kind}`; "
                         "use another --run folder")
    problem = checkpoint_problem(ck)
    if problem:
        raise TrainingError(f"{path}: a damaged checkpoint: {problem}; move it away to start over")
    return ck


def _is_count(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _is_byte_state(v) -> bool:
    return isinstance(v, torch.Tensor) and v.dtype == torch.uint8 and v.dim() == 1


def checkpoint_problem(ck: dict) -> str | None:
    """What in a checkpoint's fields is not what :func:`write_checkpoint` writes (None when all is)."""
    model = ck.get("model")
    if not isinstance(model, dict) or not model:
        return f'"model" must hold the model\'s state dict, got {_kind(model)}'
    if not all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in model.items()):
        return '"model" must map parameter names to tensors'
    opt = ck.get("optimizer")
    if not isinstance(opt, dict) or not isinstance(opt.get("state"), dict) or not isinstance(
            opt.get("param_groups"), list):
        return f'"optimizer" must hold an optimiser state ("state" and "param_groups"), got {_kind(opt)}'
    for i, group in enumerate(opt["param_groups"]):
        if not isinstance(group, dict) or not isinstance(group.get("params"), list) or not all(
                _is_count(p) for p in group["params"]):
            return f'"optimizer" parameter group {i} must list its parameters by number'
    for key, state in opt["state"].items():
        if not _is_count(key) or not isinstance(state, dict):
            return f'"optimizer" state {key!r} must be a parameter number with a dict of its state'
    for key in ("rng", "torch_rng"):
        if not _is_byte_state(ck.get(key)):
            return f'"{key}" must be a random-generator state (a 1-D uint8 tensor), got {_kind(ck.get(key))}'
    if not _is_count(ck.get("step")):
        return f'"step" must be a whole number ≥ 0, got {_kind(ck.get("step"))}'
    if not _is_number(ck.get("wall_seconds")) or ck["wall_seconds"] < 0:
        return f'"wall_seconds" must be a finite number ≥ 0, got {_kind(ck.get("wall_seconds"))}'
    history = ck.get("history", [])
    if not isinstance(history, list) or not all(isinstance(r, dict) and _is_count(r.get("step")) for r in history):
        return '"history" must be a list of evaluation rows, each with its step'
    if not isinstance(ck.get("extra", {}), dict):
        return f'"extra" must be a dict of the trainer\'s own state, got {_kind(ck.get("extra"))}'
    return None


def _kind(v) -> str:
    """A value as an error line shows it: short reprs as they are, anything else by its type."""
    if v is None or isinstance(v, (bool, int, float)) or isinstance(v, str) and len(v) <= 40:
        return repr(v)
    if isinstance(v, torch.Tensor):
        return f"a {str(v.dtype).replace('torch.', '')} tensor of shape {tuple(v.shape)}"
    return f"a {type(v).__name__}"


def restore_problem(trainer: Steppable, ck: dict, *, batches: bool = True) -> str | None:
    """What keeps a (field-checked) checkpoint from fitting a trainer built with the run's settings: the
    model's keys and shapes, the optimiser's groups and each state tensor's shape, the RNG states' sizes."""
    problem = describe_mismatch(trainer.model, ck["model"])
    if problem:
        return f'its "model" does not fit this run\'s model: {problem}'
    live = [list(g["params"]) for g in trainer.opt.param_groups]
    saved = ck["optimizer"]["param_groups"]
    if [len(g) for g in live] != [len(g["params"]) for g in saved]:
        return (f'its "optimizer" has parameter groups of {[len(g["params"]) for g in saved]} parameters, this '
                f"run's {[len(g) for g in live]}")
    param_of = {n: p for g_saved, g_live in zip(saved, live) for n, p in zip(g_saved["params"], g_live)}
    if len(param_of) != sum(len(g) for g in live):
        return 'its "optimizer" numbers one parameter twice'
    for n, state in ck["optimizer"]["state"].items():
        if n not in param_of:
            return f'its "optimizer" holds state for parameter {n}, which no group lists'
        for name, v in state.items():
            if isinstance(v, torch.Tensor) and v.dim() > 0 and tuple(v.shape) != tuple(param_of[n].shape):
                return (f'its "optimizer" state {name!r} of parameter {n} is {tuple(v.shape)}, the parameter '
                        f"{tuple(param_of[n].shape)}")
            if isinstance(v, torch.Tensor) and v.dim() > 0 and not v.is_floating_point():
                return f'its "optimizer" state {name!r} of parameter {n} is not a floating-point tensor'
    for i, (g_saved, g_live) in enumerate(zip(saved, trainer.opt.param_groups)):
        for key, want in g_live.items():
            if key == "params" or key not in g_saved:
                continue
            have = g_saved[key]
            if _is_number(want) and not _is_number(have) or isinstance(want, bool) and not isinstance(have, bool) or (
                    isinstance(want, tuple) and not (isinstance(have, (tuple, list)) and len(have) == len(want)
                                                     and all(_is_number(x) for x in have))):
                return f'its "optimizer" group {i} has {key} {_kind(have)}, not a value like {want!r}'
    pairs = [("torch_rng", torch.get_rng_state())] + ([("rng", trainer.gen.get_state())] if batches else [])
    for key, want in pairs:
        if ck[key].numel() != want.numel():
            return f'its "{key}" is {ck[key].numel()} bytes, a generator state is {want.numel()}'
    return None


def restore(trainer: Steppable, ck: dict, *, batches: bool = True, path: Path | None = None) -> None:
    """Put a checkpoint's state back into a trainer built with the same settings (its model already
    on its device, so the optimiser's state follows it). ``batches=False`` keeps the trainer's own
    batch generator (the other ranks of a distributed run draw their own batches).

    A checkpoint is untrusted input: every part is checked against the trainer first
    (:func:`restore_problem`), and anything left that torch or the trainer refuses is a
    TrainingError naming ``path`` too, never a traceback."""
    where = f"{path}: " if path is not None else "checkpoint: "
    problem = checkpoint_problem(ck) or restore_problem(trainer, ck, batches=batches)
    if problem:
        raise TrainingError(f"{where}{problem}; move it away to start over (or use another --run folder)")
    try:
        trainer.model.load_state_dict(ck["model"])
        trainer.opt.load_state_dict(ck["optimizer"])
        if batches:
            trainer.gen.set_state(ck["rng"])
        torch.set_rng_state(ck["torch_rng"])
        trainer.step = int(ck["step"])
        trainer.load_extra_state(ck.get("extra", {}))
    except (KeyError, TypeError, ValueError, AttributeError, RuntimeError) as e:
        first = (str(e).strip().splitlines() or [""])[0][:200]
        raise TrainingError(f"{where}does not fit this run ({type(e).__name__}: {first}); move it away to start "
                            "over (or use another --run folder)") from None


class CheckpointWriteError(TrainingError):
    """A checkpoint that could not be written (a full disk, a read-only folder); the previous one stays."""


def write_checkpoint(path: Path, trainer: Steppable, *, wall: float, history: list) -> None:
    """Write the checkpoint atomically (a temporary file renamed over the old one). A failed write (a
    full disk: ``OSError``, or torch's zip writer's ``RuntimeError``) leaves the previous checkpoint as it
    was and the temporary file removed, and is a :class:`CheckpointWriteError` saying so."""
    path = Path(path)
    try:
        atomic_torch_save({
            "format": FORMAT, "version": VERSION, "kind": trainer.kind, "step": int(trainer.step),
            "model": trainer.model.state_dict(), "optimizer": trainer.opt.state_dict(),
            "rng": trainer.gen.get_state(), "torch_rng": torch.get_rng_state(),
            "wall_seconds": float(wall), "history": list(history), "extra": trainer.extra_state(),
        }, path)
    except OSError as e:
        raise CheckpointWriteError(_write_failed(path, trainer.step, e.strerror or str(e))) from None
    except RuntimeError as e:
        # torch's zip writer on a full disk: "[enforce fail at inline_container.cc:672] . unexpected pos …"
        # (after "basic_ios::clear: iostream error"), or "… PytorchStreamWriter failed writing file …"
        if not any(s in str(e) for s in ("inline_container", "PytorchStreamWriter", "write failed", "iostream error")):
            raise
        raise CheckpointWriteError(_write_failed(path, trainer.step, "file write failed")) from None


def _write_failed(path: Path, step: int, why: str) -> str:
    try:
        free = f"; {shutil.disk_usage(path.parent).free / 2**20:.0f} MiB free there"
    except OSError:
        free = ""
    kept = "the previous checkpoint is kept" if path.is_file() else "no earlier checkpoint exists"
    return (f"{path}: could not write the checkpoint of step {step} ({why}{free}); {kept} — free some space and "
            "re-run the same command to resume from it")


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
        if s.stop_at is not None and self.trainer.step >= s.stop_at:
            return f"step {s.stop_at} reached"
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
