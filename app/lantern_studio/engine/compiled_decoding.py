"""Compiled decoding of a loaded model: which path a job decodes on, and the compile that builds it.

Compiling a model's decode steps (:mod:`.compiled`) takes seconds to a minute on a CPU, so a loaded
model decodes eagerly at once while a compiled twin compiles in a thread of its own. The twin
(``ImagePipeline.with_compiled_steps``) is a second runner over the same weights (``Runner.twin``:
caches and graphs of its own, the tokenizer, conditioner and neighbour table shared), so it costs its
caches, not a copy of the model. What it compiles: steps of ``compiled_widths`` tokens (1 for vanilla
decoding, the default window + 1 for a verify) for ``compiled_rows`` rows (2 under guidance, else 1).

:class:`CompiledDecoding` holds the eager pipeline and its twin and says which one a job decodes with,
swapping between jobs, never during one. Compiled is not faster on every CPU: once compiled, a few
decodes of each family are timed on both paths (:mod:`.decode_paths`), a family uses the compiled
steps only where they measured faster, and the verdict is kept in the compile cache folder so a
relaunch on the same machine knows at once (and compiles nothing no family would use). A compile is
tried once per session: a machine without a C++ compiler (or where compiling fails) keeps one line
saying why and stays eager. Graphs go to a persistent cache folder, so a relaunch loads them.

:class:`BackgroundCompile` is one such compile: the twin is made in the caller's thread (its caches
are its own, so nothing it does races an eager decode), its graphs compile in a daemon thread. The
one state a compile shares with the whole process, torch.fx's patches of ``nn.Module`` while it
traces, is confined to the compiling thread (:mod:`.tracing_patches`) before the thread starts. A
cancelled compile is dropped (a graph already being compiled finishes in the background: inductor
cannot be interrupted, and a daemon thread never keeps the process from ending).
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Callable, Optional

from .compiled import cache_counts, missing_compiler, use_compile_cache
from .decode_paths import SPECULATIVE, PathVerdicts, family_of, fingerprint, time_paths
from .tracing_patches import confine_tracing_patches

EAGER, COMPILED = "eager", "compiled"  # the two decode paths, as records and job requests name them
TIME_ROUNDS = 4  # decodes per family and path timed after a compile (the fastest counts)

Progress = Callable[[int, int], None]  # (graph i about to compile, of n)


def compiled_widths(defaults) -> tuple:
    """The step widths a twin compiles by default: 1 (vanilla) and the default window + 1 (a verify)."""
    return (1, defaults.draft_length + 1)


def compiled_rows(defaults) -> tuple:
    """The row counts a twin's graphs are compiled for ahead of the first job: 2 under guidance, else 1."""
    return (2 if defaults.sampling.uses_cfg else 1,)


class BackgroundCompile:
    """One compiled twin of ``pipe``, compiled in a thread (``start``); ``result`` once done.

    ``cache``: the folder inductor keeps compiled graphs in across launches (``compiled.use_compile_cache``),
    set in the thread before its compile, like the check for a C++ compiler (both load the compiler stack:
    seconds, which the caller's thread does not wait for). ``on_graph(i, n)`` hears each graph before it
    compiles; ``on_done()`` is called from the thread when it ends (not after ``cancel``). With
    ``time_rounds`` the compiled and eager paths are then timed per family (``timings``)."""

    def __init__(self, pipe, cache: Optional[Path] = None, on_graph: Optional[Progress] = None,
                 on_done: Optional[Callable[[], None]] = None, time_rounds: int = 0,
                 on_timing: Optional[Callable[[], None]] = None):
        confine_tracing_patches()  # the compile's traces must not reach the caller's eager decodes (tracing_patches)
        self.source = pipe
        self.cache = cache
        self.twin = pipe.with_compiled_steps(warm=False)
        self.rows = compiled_rows(pipe.defaults)
        self.on_graph = on_graph or (lambda _i, _n: None)
        self.on_done = on_done or (lambda: None)
        self.note: Optional[str] = None  # why compiling failed (the twin is then not used)
        self.seconds = 0.0
        # time_rounds > 0: once compiled, that many decodes per family and path are timed on the twin
        # (decode_paths.time_paths; on_timing hears when that starts) → timings {family: PathTiming}
        self.time_rounds, self.on_timing = time_rounds, on_timing or (lambda: None)
        self.timings: Optional[dict] = None
        self.cache_hits = self.cache_misses = 0  # inductor's FX graph cache, over this compile
        self._cancelled = threading.Event()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lantern-compile", daemon=True)

    def start(self) -> "BackgroundCompile":
        self._thread.start()
        return self

    def cancel(self) -> None:
        """Nothing more is reported and the twin is dropped; the thread ends after the graph it is in."""
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Wait up to ``timeout`` s for the compile to end; True when it has."""
        return self._done.wait(timeout)

    @property
    def result(self):
        """The compiled twin, once compiled (None while compiling, after a failure or a cancel)."""
        if not self.done or self.cancelled or self.note is not None:
            return None
        return self.twin

    def _graph(self, i: int, n: int) -> None:
        if not self.cancelled:
            self.on_graph(i, n)

    def _run(self) -> None:
        t = time.perf_counter()
        hits = misses = 0
        try:
            if self.cache is not None:
                use_compile_cache(self.cache)
            hits, misses = cache_counts()
            self.note = missing_compiler(self.twin.device)
            if self.note is None:
                self.twin.runner.warm(self.rows, self._graph, self._cancelled.is_set)
                graphs = self.twin.compiled
                if graphs is not None and graphs.failed:
                    self.note = graphs.note
                elif self.time_rounds > 0 and not self.cancelled:
                    self.on_timing()
                    self.timings = time_paths(self.twin, self.time_rounds, self._cancelled.is_set)
        except Exception as e:  # noqa: BLE001 - anything the compiler stack raises: the eager path stays
            self.note = unavailable(e)
        self.seconds = time.perf_counter() - t
        if self.note is None:
            now_hits, now_misses = cache_counts()
            self.cache_hits, self.cache_misses = now_hits - hits, now_misses - misses
        self._done.set()
        if not self.cancelled:
            self.on_done()


def unavailable(e: BaseException) -> str:
    """The one line a failed compile leaves: why decoding stays eager."""
    first = (str(e).strip().splitlines() or [type(e).__name__])[0]
    return f"compiled decoding unavailable, running eagerly ({type(e).__name__}: {first[:160]})"


class CompiledDecoding:
    """A loaded model's two decode paths over one set of weights: the eager pipeline and its compiled twin
    (once compiled), the compile that builds the twin, why compiling failed (``note``), and the measured
    verdict per family (``timings``); ``for_job`` says which pipeline a job decodes with.

    ``cache``: the persistent compile cache folder (graphs and verdicts). ``on_start()`` hears a compile
    start (before its thread does), ``on_graph(i, n)`` each graph before it compiles, ``on_timing()`` the
    timing of the two paths start; ``on_done()`` is called from the compile's thread when it ends (the owner
    calls ``adopt`` in its own thread, between jobs). This object lives in the thread that runs jobs; only
    ``cancel`` may be called from elsewhere."""

    def __init__(self, cache: Path, on_start: Optional[Callable[[], None]] = None, on_graph: Optional[Progress] = None,
                 on_timing: Optional[Callable[[], None]] = None, on_done: Optional[Callable[[], None]] = None):
        self.cache = cache
        self.on_start = on_start or (lambda: None)
        self.on_graph = on_graph or (lambda _i, _n: None)
        self.on_timing = on_timing or (lambda: None)
        self.on_done = on_done or (lambda: None)
        self.eager = None  # the loaded pipeline
        self.twin = None  # its compiled twin, once compiled
        self.task: Optional[BackgroundCompile] = None
        self.note: Optional[str] = None  # why compiling failed: kept for the session, never tried again
        self.timings: Optional[dict] = None  # {family: PathTiming} for the loaded model on this machine
        self._fingerprint = ""

    # ------------------------------------------------------------------ what is compiled
    @property
    def widths(self) -> tuple:
        """The step widths the twin runs compiled (() while there is none)."""
        graphs = self.twin.compiled if self.twin is not None else None
        return graphs.widths if graphs is not None else ()

    @property
    def rows(self) -> tuple:
        """The row counts the twin's graphs were compiled for ahead of the first job (() while there is none)."""
        return compiled_rows(self.twin.defaults) if self.twin is not None else ()

    @property
    def compiling(self) -> bool:
        return self.task is not None and not self.task.done

    @property
    def worth_compiling(self) -> bool:
        """False when a verdict measured on this machine found no family faster compiled."""
        return self.timings is None or any(t.faster == COMPILED for t in self.timings.values())

    def path_for(self, settings=None) -> str:
        """The path a job that asks for none takes when compiled decoding is wanted: compiled once the twin
        is in, for the family of ``settings`` (speculative when None) where compiled measured faster."""
        if self.twin is None:
            return EAGER
        if self.timings is None:
            return COMPILED
        return self.timings[family_of(settings) if settings is not None else SPECULATIVE].faster

    # ------------------------------------------------------------------ changes
    def model_loaded(self, pipe) -> None:
        """A new model is loaded (eager, warmed): any compile of the last one stops, its verdict is read."""
        self.cancel()
        self.eager, self.twin = pipe, None
        self._fingerprint = fingerprint(pipe)
        self.timings = self._verdicts().get(self._fingerprint)

    def start(self) -> bool:
        """Compile a twin of the loaded pipeline in the background, unless one exists, is being compiled,
        compiling failed this session, or no family measured faster compiled. True when one started."""
        if self.eager is None or self.twin is not None or self.compiling or self.note is not None:
            return False
        if not self.worth_compiling:
            return False
        try:  # no weights are copied (the twin's caches come as it warms), but a failure here is said once
            task = BackgroundCompile(self.eager, self.cache, self.on_graph, self.on_done,
                                     time_rounds=0 if self.timings is not None else TIME_ROUNDS,
                                     on_timing=self.on_timing)
        except (MemoryError, RuntimeError) as e:
            self._failed(f"compiled decoding unavailable, running eagerly ({type(e).__name__}: {e})"[:240])
            return False
        self.task = task
        self.on_start()
        task.start()
        return True

    def adopt(self) -> bool:
        """Take the background compile's outcome (in the owner's thread, between jobs): its twin, or its
        failure, said once. True when something changed."""
        task = self.task
        if task is None or not task.done:
            return False
        self.task = None
        if task.cancelled or task.source is not self.eager:
            return False
        if task.note is not None:
            self._failed(task.note)
        else:
            self.twin = task.result
            if task.timings is not None:
                self.timings = task.timings
                if not any(t.busy for t in task.timings.values()):  # a busy machine's verdict: this launch only
                    self._verdicts().put(self._fingerprint, task.timings)
        return True

    def cancel(self) -> None:
        """Stop a running compile (at close, a model change, or compiled decoding turned off)."""
        task = self.task
        if task is not None:
            task.cancel()
            self.task = None

    def _verdicts(self) -> PathVerdicts:
        return PathVerdicts(self.cache)

    def _failed(self, note: str) -> None:
        self.note = note
        print(f"lantern-studio: {note}", file=sys.stderr)  # the one log line

    # ------------------------------------------------------------------ a job's pipeline
    def for_job(self, path: Optional[str], should_stop: Callable[[], bool], settings=None):
        """The pipeline a job decodes with: ``path`` "eager" or "compiled" (e.g. a replayed record's), or
        None: ``path_for(settings)``. A job that asks for compiled steps before they exist waits for their
        compile (starting it); where compiling failed it runs eagerly."""
        self.adopt()
        if path == EAGER:
            return self.eager
        if path == COMPILED:
            self._wait_for_twin(should_stop)
            return self.twin or self.eager
        return self.twin if self.path_for(settings) == COMPILED else self.eager

    def _wait_for_twin(self, should_stop: Callable[[], bool]) -> None:
        self.start()
        task = self.task
        while task is not None and not task.wait(0.1):
            if should_stop():
                return
        self.adopt()

