"""Which pipeline decodes a job: the loaded (eager) one, or its compiled twin once that is compiled.

Compiled decode steps are on by default (Generate ▸ Compiled decoding), but compiling them takes
seconds to a minute on a CPU. So the model is ready as soon as it is loaded and warmed, and Generate
decodes eagerly at once; the twin compiles in its own thread (``engine.background_compile``) and the
worker swaps it in between jobs, never during one. A compile is tried once a session: a machine
without a C++ compiler (or where compiling fails) says why in one line and stays eager.

The graphs go to a cache in the studio's cache folder (``paths.cache_dir() / "compiled"``), so a
relaunch loads them instead of compiling again. Compiled is not faster on every CPU: once compiled,
a few decodes of each family (vanilla, speculative) are timed eager and compiled
(``engine.decode_paths``), a job uses the compiled steps only for a family where they measured
faster, and the verdict is kept beside the cache under the machine's and the model's fingerprint, so
a relaunch knows at once (and compiles nothing when no family would use it). The status line says
which path runs and why. This object lives in the worker thread (the worker
calls it); only ``cancel`` is called from elsewhere (the GUI thread, at close). It is Qt-free: the worker
turns its callbacks into answers.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable, Optional

from ..engine.background_compile import BackgroundCompile
from ..engine.decode_paths import FAMILIES, FAMILY_WORDS, SPECULATIVE, PathVerdicts, describe, family_of, fingerprint
from ..paths import cache_dir

EAGER, COMPILED = "eager", "compiled"  # the two decode paths, as records and job requests name them
#: how ``steps`` starts when measured timings decide the path: "measured: SHORT — WHY"
MEASURED = "measured: "
TIME_ROUNDS = 3  # decodes per family and path timed after a compile


def compile_cache() -> Path:
    """Where compiled graphs are kept between launches: under the studio's cache folder."""
    return cache_dir() / "compiled"


class CompiledSteps:
    """The eager pipeline, its compiled twin (when built) and the background compile that builds it.

    ``on_status(message)`` hears the compile's progress ("compiling decode steps… 1/2"); ``on_done()``
    is called from the compile's thread when it ends (the worker queues ``adopt`` into its own thread)."""

    def __init__(self, on_status: Callable[[str], None], on_done: Callable[[], None]):
        self.on_status, self.on_done = on_status, on_done
        self.wanted = False  # the person's choice: compiled steps for jobs that ask for no path
        self.eager = None  # the loaded pipeline
        self.twin = None  # its compiled twin, once compiled
        self.task: Optional[BackgroundCompile] = None
        self.note: Optional[str] = None  # why compiling failed: kept for the session, never tried again
        self.doing = ""  # what the running compile does now ("compiling decode steps… 1/2"), "" when none
        self.timings: Optional[dict] = None  # {family: PathTiming} for the loaded model on this machine
        self._fingerprint = ""

    # ------------------------------------------------------------------ state
    @property
    def steps(self) -> str:
        """How a job that asks for no path decodes now (``ModelInfo.steps``): "eager", "compiled", or
        why compiling failed (then eagerly)."""
        if not self.wanted:
            return EAGER
        if self.note is not None:
            return self.note
        if self.timings is not None and (self.twin is not None or not self._uses_compiled()):
            return measured_steps(self.timings)
        if self.twin is not None:
            return COMPILED
        return EAGER

    def _uses_compiled(self) -> bool:
        return self.timings is None or any(t.faster == COMPILED for t in self.timings.values())

    @property
    def compiling(self) -> bool:
        return self.task is not None and not self.task.done

    # ------------------------------------------------------------------ changes
    def model_loaded(self, pipe) -> None:
        """A new model is loaded (eager, warmed): its twin compiles now if compiled steps are wanted."""
        self.cancel()
        self.eager, self.twin = pipe, None
        self._fingerprint = fingerprint(pipe)
        self.timings = self._verdicts().get(self._fingerprint)
        if self.wanted:
            self.start()

    def want(self, on: bool) -> None:
        """Generate ▸ Compiled decoding: on starts a compile unless there is a twin (or a failure) already;
        off stops one that is running (a twin already built is kept for a job that asks for it)."""
        self.wanted = bool(on)
        if self.wanted:
            self.start()
        elif self.compiling:
            self.cancel()

    def start(self) -> None:
        """Compile a twin of the loaded pipeline in the background, unless one exists, is being compiled,
        or compiling failed this session."""
        if self.eager is None or self.twin is not None or self.compiling or self.note is not None:
            return
        if not self._uses_compiled():  # measured before on this machine: no family is faster compiled
            return
        try:  # the twin's copy of the target is made here: memory the machine may not have
            task = BackgroundCompile(self.eager, compile_cache(), self._graph, self.on_done,
                                     time_rounds=0 if self.timings is not None else TIME_ROUNDS,
                                     on_timing=self._timing)
        except (MemoryError, RuntimeError) as e:
            self._failed(f"compiled decoding unavailable, running eagerly ({type(e).__name__}: {e})"[:240])
            return
        self.task, self.doing = task, "compiling decode steps…"
        self.on_status(self.doing)
        task.start()

    def _graph(self, i: int, n: int) -> None:
        self.doing = f"compiling decode steps… {i}/{n}"
        self.on_status(self.doing)

    def _timing(self) -> None:
        self.doing = "timing compiled vs eager decodes…"
        self.on_status(self.doing)

    @staticmethod
    def _verdicts() -> PathVerdicts:
        return PathVerdicts(compile_cache())

    def adopt(self) -> bool:
        """Take the background compile's outcome (in the worker thread, between jobs): its twin, or its
        failure, said once. True when something changed."""
        task = self.task
        if task is None or not task.done:
            return False
        self.task, self.doing = None, ""
        if task.cancelled or task.source is not self.eager:
            return False
        if task.note is not None:
            self._failed(task.note)
        else:
            self.twin = task.result
            if task.timings is not None:
                self.timings = task.timings
                self._verdicts().put(self._fingerprint, task.timings)
        return True

    def _failed(self, note: str) -> None:
        self.note = note
        print(f"lantern-studio: {note}", file=sys.stderr)  # the one log line

    def cancel(self) -> None:
        """Stop a running compile (at close, a model change, or compiled decoding turned off)."""
        task = self.task
        if task is not None:
            task.cancel()
            self.task, self.doing = None, ""

    # ------------------------------------------------------------------ a job's pipeline
    def for_job(self, path: Optional[str], should_stop: Callable[[], bool], settings=None):
        """The pipeline a job decodes with: ``path`` "eager" or "compiled" (a replayed record's), else the
        person's choice, for the family of the job's ``settings`` where compiled measured faster. A job
        that asks for compiled steps before they exist waits for their compile (starting it if compiled
        decoding is off); where compiling failed it runs eagerly."""
        self.adopt()
        if path == EAGER:
            return self.eager
        if path == COMPILED:
            self._wait_for_twin(should_stop)
            return self.twin or self.eager
        if not self.wanted or self.twin is None:
            return self.eager
        if self.timings is not None:
            family = family_of(settings) if settings is not None else SPECULATIVE
            return self.twin if self.timings[family].faster == COMPILED else self.eager
        return self.twin

    def _wait_for_twin(self, should_stop: Callable[[], bool]) -> None:
        self.start()
        task = self.task
        while task is not None and not task.wait(0.1):
            if should_stop():
                return
        self.adopt()


def measured_steps(timings: dict) -> str:
    """``steps`` when measured timings decide: "measured: SHORT — WHY" (SHORT for the status line)."""
    fast = [f for f in FAMILIES if timings[f].faster == COMPILED]
    if len(fast) == len(FAMILIES):
        short = "compiled (faster here)"
    elif not fast:
        short = "eager (faster here than compiled)"
    else:
        slow = [f for f in FAMILIES if f not in fast]
        short = (f"compiled for {', '.join(FAMILY_WORDS[f] for f in fast)}, eager for "
                 f"{', '.join(FAMILY_WORDS[f] for f in slow)} (faster here)")
    return f"{MEASURED}{short} — measured on this machine: {describe(timings)}"
