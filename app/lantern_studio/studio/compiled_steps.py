"""The studio's side of compiled decoding: the person's choice and the status line's words.

Compiled decode steps are on by default (Generate ▸ Compiled decoding). What is compiled, the background
compile, the measured verdict per family and which pipeline a job decodes with are the engine's
(``engine.compiled_decoding.CompiledDecoding``); this object keeps the choice (``wanted``), turns it
into the engine's calls, and says how a job decodes now (``steps``: a :class:`StepsVerdict`, the words the
status line and its tooltip show, in fields: nothing downstream parses them). The graphs go to a cache
in the studio's cache folder (``paths.cache_dir() / "compiled"``), so a relaunch loads them. It lives
in the engine host's thread (``studio/engine_host.py`` calls it); only ``cancel`` is called from elsewhere
(the GUI thread, at close). It is Qt-free: the host hands its callbacks on, the Qt worker turns them into answers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from ..engine.compiled import NOT_AVAILABLE
from ..engine.compiled_decoding import COMPILED, EAGER, CompiledDecoding
from ..engine.decode_paths import FAMILIES, FAMILY_WORDS, describe
from ..paths import cache_dir

__all__ = ["COMPILED", "COMPILED_STEPS", "EAGER", "EAGER_STEPS", "CompiledSteps", "StepsVerdict", "compile_cache",
           "failed_steps", "measured_steps"]


@dataclass(frozen=True)
class StepsVerdict:
    """How a job that asks for no path decodes now (``ModelInfo.steps``), as the views show it.

    ``path``: EAGER or COMPILED, the pipeline such a job gets (with ``measured``: COMPILED when some family
    decodes compiled, each family taking the path it measured faster on). ``short``: the status line's words
    after its " · " ("" when eager: nothing to say). ``why``: the tooltip's line under the path: "", a failed
    compile's note, or the measured verdict with its timings. ``measured``: timings on this machine pick the
    path per family."""

    path: str = EAGER
    short: str = ""
    why: str = ""
    measured: bool = False


EAGER_STEPS = StepsVerdict(EAGER)
COMPILED_STEPS = StepsVerdict(COMPILED, "compiled")


def failed_steps(note: str) -> StepsVerdict:
    """``steps`` when compiling failed, or the model has no compiled steps at all: eager, and the tooltip
    says why (``note``)."""
    return StepsVerdict(EAGER, "eager (no compiled steps)" if note.startswith(NOT_AVAILABLE) else
                        "eager (compiling failed)", note)


def compile_cache() -> Path:
    """Where compiled graphs are kept between launches: under the studio's cache folder."""
    return cache_dir() / "compiled"


class CompiledSteps:
    """The person's choice of compiled decoding over the engine's :class:`CompiledDecoding` (``decoding``).

    ``on_status(message)`` hears the compile's progress ("compiling decode steps… 1/2"); ``on_done()``
    is called from the compile's thread when it ends (the Qt worker queues ``adopt`` into its own thread)."""

    def __init__(self, on_status: Callable[[str], None], on_done: Callable[[], None]):
        self.on_status = on_status
        self.wanted = False  # the person's choice: compiled steps for jobs that ask for no path
        self._doing = ""  # what the last compile said it does
        self.decoding = CompiledDecoding(compile_cache(), self._started, self._graph, self._timing, on_done)

    # ------------------------------------------------------------------ state
    @property
    def steps(self) -> StepsVerdict:
        """How a job that asks for no path decodes now (``ModelInfo.steps``): eager, compiled, eager because
        compiling failed, or per family as timed on this machine."""
        d = self.decoding
        if not self.wanted:
            return EAGER_STEPS
        if d.note is not None:
            return failed_steps(d.note)
        if d.timings is not None and (d.twin is not None or not d.worth_compiling):
            return measured_steps(d.timings)
        return COMPILED_STEPS if d.twin is not None else EAGER_STEPS

    @property
    def compiling(self) -> bool:
        return self.decoding.compiling

    @property
    def doing(self) -> str:
        """What the running compile does now ("compiling decode steps… 1/2"), "" when none runs."""
        return self._doing if self.compiling else ""

    # ------------------------------------------------------------------ changes
    def model_loaded(self, pipe) -> None:
        """A new model is loaded (eager, warmed): its twin compiles now if compiled steps are wanted."""
        self.decoding.model_loaded(pipe)
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
        self.decoding.start()

    def _say(self, doing: str) -> None:
        self._doing = doing
        self.on_status(doing)

    def _started(self) -> None:
        self._say("compiling decode steps…")

    def _graph(self, i: int, n: int) -> None:
        self._say(f"compiling decode steps… {i}/{n}")

    def _timing(self) -> None:
        self._say("timing compiled vs eager decodes…")

    def adopt(self) -> bool:
        """Take the background compile's outcome (between jobs). True when something changed."""
        return self.decoding.adopt()

    def cancel(self) -> None:
        """Stop a running compile (at close, a model change, or compiled decoding turned off)."""
        self.decoding.cancel()

    # ------------------------------------------------------------------ a job's pipeline
    def for_job(self, path: Optional[str], should_stop: Callable[[], bool], settings=None):
        """The pipeline a job decodes with: ``path`` "eager" or "compiled" (a replayed record's), else the
        person's choice (eager when off)."""
        return self.decoding.for_job(path or (None if self.wanted else EAGER), should_stop, settings)


def measured_steps(timings: dict) -> StepsVerdict:
    """``steps`` when measured timings decide: the short verdict for the status line, and the tooltip's
    "measured: SHORT — measured on this machine: TIMINGS"."""
    fast = [f for f in FAMILIES if timings[f].faster == COMPILED]
    if len(fast) == len(FAMILIES):
        short = "compiled (faster here)"
    elif not fast:
        short = "eager (faster here than compiled)"
    else:
        slow = [f for f in FAMILIES if f not in fast]
        short = (f"compiled for {', '.join(FAMILY_WORDS[f] for f in fast)}, eager for "
                 f"{', '.join(FAMILY_WORDS[f] for f in slow)} (faster here)")
    return StepsVerdict(COMPILED if fast else EAGER, short,
                        f"measured: {short} — measured on this machine: {describe(timings)}", measured=True)
