"""The one life of a training command around the loop, the same for every trainer (``train vq``,
``train recogniser``, ``train ar``, ``train drafter`` and self-distillation).

1. **resume point**: the run folder's checkpoint (:func:`.loop.read_checkpoint`, every field checked:
   it is untrusted input), or none; ``--export`` without one is bad input;
2. **build**: the command's ``build(resumed)`` loads its data and returns a set-up :class:`Trainer`,
   built from the checkpoint's settings when ``resumed`` is one;
3. **restore** the checkpoint's state into it, checked against the trainer first (keys, shapes, optimiser
   groups, RNG sizes: :func:`.loop.restore`), and log ``resumed from step N``;
4. **train** on the loop (:class:`.loop.TrainingLoop`) to the end of the schedule, the budget or a
   signal; a re-run with nothing left to train keeps an existing export;
5. **export** the weights (so far: a budgeted run always leaves usable ones); a signal that stopped a
   resumable run exports nothing (the same command resumes).

Every trainer module gets its entry points from :func:`entry_points` (``train(args)`` for Python,
``run(args)`` for the command, ``main(argv)``), its loop flags from :func:`.loop.loop_arguments` and its
optimiser step from :func:`.step.optimizer_step`.

Bad input anywhere raises :class:`.errors.TrainingError` (a missing file or a ValueError met while
building becomes one); the command edge (:func:`.errors.command`) reports it. :class:`Outcome` says how
it ended: exit code 0 done or stopped by budget / ``--stop-after``, 130 Ctrl-C, 143 SIGTERM.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

import torch

from .common import RunLog
from .errors import TrainingError, command
from .loop import CHECKPOINT_NAME, LoopSettings, Steppable, TrainingLoop, read_checkpoint, restore


class TrainingData(Protocol):
    """The data a trainer trains on, as the lifecycle sees it."""

    @property
    def note(self) -> str:
        """A line about the data the log shows before training ("" for none)."""
        ...


class Trainer(Steppable, Protocol):
    """Everything the lifecycle asks of a trainer: the loop's :class:`.loop.Steppable`, its data and its export."""

    data: TrainingData

    def export(self, out: Path, history: list, wall: float) -> dict[str, Any]:
        """Write the trained weights (``out`` and what goes beside it); → the metrics written."""
        ...


@dataclass
class Plan:
    """One command's settings for the lifecycle.

    ``folder``: the run folder whose checkpoint resumes the run; None keeps nothing to resume
    (self-distillation: its samples are not kept), and a signal then ends it with an export.
    ``out``: the export's main file. ``main``/``agree``: rank 0 and the stop vote of a
    distributed run (the other ranks neither checkpoint nor evaluate, and keep their own batches).
    """

    kind: str
    settings: LoopSettings
    out: Path
    log: Callable[[str], None]
    folder: Path | None = None
    threads: int | None = None
    export_only: bool = False
    main: bool = True
    agree: Callable[[bool], bool] | None = None
    should_stop: Callable[[], bool] | None = None
    on_step: Callable[[int], None] | None = None

    @property
    def checkpoint(self) -> Path | None:
        return None if self.folder is None else self.folder / CHECKPOINT_NAME


@dataclass
class Outcome:
    """How a command ended: its exit code, the step reached, and the export's metrics (None when it
    exported nothing: stopped by a signal, or already up to date)."""

    code: int
    step: int
    metrics: dict[str, Any] | None = None
    stopped_by: str | None = None

    def result(self) -> dict[str, Any]:
        """What a trainer's ``train`` returns: the export's metrics, else ``{"step", "stopped_by"}``."""
        if self.metrics is not None:
            return self.metrics
        return {"step": self.step, "stopped_by": self.stopped_by}


def run_log(folder: Path, rank: int = 0) -> RunLog:
    """The run folder (made if new) and its log; the other ranks of a distributed run keep theirs, quiet, beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    return RunLog(folder) if rank == 0 else RunLog(folder / f"rank{rank}", quiet=True)


def resume_point(plan: Plan) -> dict | None:
    """The checkpoint to resume from, or None; ``--export`` needs one."""
    if plan.checkpoint is None:
        return None
    resumed = read_checkpoint(plan.checkpoint, plan.kind)
    if plan.export_only and resumed is None:
        raise TrainingError(f"{plan.checkpoint}: no checkpoint to export (train first)")
    return resumed


def build_trainer(build: Callable[[dict | None], Trainer], resumed: dict | None,
                  checkpoint: Path | None = None) -> Trainer:
    """``build(resumed)``, with a missing file or a bad value met while loading named as bad input. A
    trainer built from a checkpoint reads its saved settings (``extra``): one it cannot read is named
    as that checkpoint's fault, not a traceback."""
    try:
        return build(resumed)
    except TrainingError:
        raise
    except (FileNotFoundError, ValueError) as e:
        raise TrainingError(str(e)) from None
    except (KeyError, TypeError, AttributeError, IndexError) as e:
        if resumed is None:
            raise
        raise TrainingError(f"{checkpoint or 'checkpoint'}: its saved settings do not fit this trainer "
                            f"({type(e).__name__}: {str(e)[:200]}); move it away to start over (or use another "
                            "--run folder)") from None


def train_and_export(plan: Plan, trainer: Trainer, loop: TrainingLoop, describe: Callable[[Trainer], str]) -> Outcome:
    steps, start = plan.settings.steps, trainer.step
    if plan.folder is not None and start >= steps and plan.out.is_file():
        plan.log(f"already trained to step {start}; {plan.out} is up to date (--export rewrites it, "
                 "a larger --steps continues)")
        return Outcome(0, start)
    if start < steps:
        plan.log(describe(trainer))
    loop.run()
    if loop.stopped_by and plan.folder is not None:
        return Outcome(loop.exit_code, trainer.step, stopped_by=loop.stopped_by)
    if trainer.step < steps and not loop.stopped_by:
        plan.log(f"exporting the weights so far (step {trainer.step}/{steps})")
    metrics = trainer.export(plan.out, loop.history, loop.wall)
    return Outcome(loop.exit_code, trainer.step, metrics, loop.stopped_by)


def run_trainer(plan: Plan, build: Callable[[dict | None], Trainer], describe: Callable[[Trainer], str]) -> Outcome:
    """The lifecycle (module docstring); ``describe(trainer)`` is the line logged before training."""
    prev_threads = torch.get_num_threads()
    if plan.threads:
        torch.set_num_threads(plan.threads)
    try:
        resumed = resume_point(plan)
        trainer = build_trainer(build, resumed, plan.checkpoint)
        if resumed is not None:
            restore(trainer, resumed, batches=plan.main, path=plan.checkpoint)
            plan.log(f"resumed from step {trainer.step}")
        if trainer.data.note:
            plan.log(f"note: {trainer.data.note}")
        loop = TrainingLoop(trainer, plan.checkpoint, plan.log, plan.settings, resumed=resumed, main=plan.main,
                            agree=plan.agree, should_stop=plan.should_stop, on_step=plan.on_step)
        if plan.export_only:
            return Outcome(0, trainer.step, trainer.export(plan.out, loop.history, loop.wall))
        return train_and_export(plan, trainer, loop, describe)
    finally:
        torch.set_num_threads(prev_threads)


def entry_points(name: str, doc: str, add_arguments: Callable[[argparse.ArgumentParser], None],
                 outcome: Callable[[Any], Outcome]):
    """A trainer's three entry points, the same for every trainer, from its ``outcome(args)`` (the
    command's checks, then :func:`run_trainer`) → ``(train, run, main)``:

    * ``train(args) -> dict``: the Python API: the export's metrics (:meth:`Outcome.result`); bad input
      raises :class:`.errors.TrainingError`;
    * ``run(args) -> int``: the command (``lantern-studio NAME``): the exit code; bad input is one line
      on stderr and exit code 2 (:func:`.errors.command`);
    * ``main(argv) -> int``: ``run`` on a command line parsed with ``add_arguments`` (``python -m``).
    """

    def train(args) -> dict[str, Any]:
        """Train (or resume, or export); → the export's metrics; bad input raises TrainingError."""
        return outcome(args).result()

    @command
    def run(args) -> int:
        """The command: train (or resume, or export); → the process exit code."""
        return outcome(args).code

    def main(argv: list[str] | None = None) -> int:
        """``run`` on a command line (``argv``, default ``sys.argv[1:]``)."""
        parser = argparse.ArgumentParser(prog=f"lantern-studio {name}", description=(doc or "").split("\n\n")[0])
        add_arguments(parser)
        return run(parser.parse_args(argv))

    return train, run, main
