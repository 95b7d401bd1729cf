"""Compiled decode steps built in a thread of their own, while the pipeline they copy keeps decoding.

Compiling a model's decode steps (:mod:`.compiled`) takes seconds to a minute on a CPU. A
:class:`BackgroundCompile` makes a compiled twin of a pipeline (``ImagePipeline.with_compiled_steps``:
its own copy of the target, the tokenizer, conditioner and neighbour table shared) and compiles its
graphs in a daemon thread; the caller keeps decoding with the eager pipeline and swaps the twin in
when it is done, between images (the studio's worker does). The copy is made in the caller's thread,
so it never races a decode writing the caches it copies; the twin's graphs run only on its own caches.
The one state a compile shares with the whole process, torch.fx's patches of ``nn.Module`` while it
traces, is confined to the compiling thread (:mod:`.tracing_patches`) before the thread starts.

A failed compile leaves a one-line ``note`` (why); a cancelled one is dropped (a graph already being
compiled finishes in the background: inductor cannot be interrupted, and a daemon thread never keeps
the process from ending).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Callable, Optional

from .compiled import cache_counts, missing_compiler, use_compile_cache
from .decode_paths import time_paths
from .tracing_patches import confine_tracing_patches

Progress = Callable[[int, int], None]  # (graph i about to compile, of n)


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
                self.twin.warm_compiled(self._graph, self._cancelled.is_set)
                graphs = self.twin.compiled
                if graphs is not None and graphs.failed:
                    self.note = graphs.note
                elif self.time_rounds > 0 and not self.cancelled:
                    self.on_timing()
                    self.timings = time_paths(self.twin, self.time_rounds, self._cancelled.is_set)
        except Exception as e:  # noqa: BLE001 - anything the compiler stack raises: the eager path stays
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            self.note = f"compiled decoding unavailable, running eagerly ({type(e).__name__}: {first[:160]})"
        self.seconds = time.perf_counter() - t
        if self.note is None:
            now_hits, now_misses = cache_counts()
            self.cache_hits, self.cache_misses = now_hits - hits, now_misses - misses
        self._done.set()
        if not self.cancelled:
            self.on_done()
