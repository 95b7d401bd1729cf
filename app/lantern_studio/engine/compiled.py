"""Compiled decode steps: a runner's fixed-shape forward (``runner.Runner.static_step``)
compiled by ``torch.compile`` for the few shapes a decode uses.

Eager PyTorch pays Python and dispatch work for each of the ~25 small operations of every
layer; on a CPU at batch 2 that is about half of a decode step. Compiled, the elementwise
work of a layer becomes a few generated kernels and the step approaches its matrix products.

Shapes are fixed so each graph compiles once: a step of ``w`` tokens runs in the smallest
compiled width ``W >= w`` (``widths``: 1 for vanilla decoding, window + 1 for a speculative
verify), padded at the back. Padding rows sit at the positions after the real ones
(clamped to the last sequence position): their keys land where the causal mask hides them
from every real query, and the next real token written there replaces them — what a
rejected draft's keys already do — and their outputs are dropped. A width with no graph, or
a machine where compiling fails, runs the eager step; the first failure is kept as one line
(``note``) and no further compile is tried.

Compiled and eager steps compute the same function; floating-point sums may be ordered
differently, so in fp32 they agree to rounding (the same tokens for a seed, tests/engine)
and in bf16 a sample near a tie may differ.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Callable, Optional, Sequence

import torch

from .tracing_patches import confine_tracing_patches

# inductor's own variable for its cache folder, and its value when this process started: a folder a
# person chose then is kept (use_compile_cache), one this process set for itself is not
CACHE_VARIABLE = "TORCHINDUCTOR_CACHE_DIR"
_CHOSEN_CACHE = os.environ.get(CACHE_VARIABLE)
NO_COMPILER = ("compiled decoding unavailable, running eagerly (no C++ compiler found: install g++ or "
               "clang++, or name one in CXX)")


#: how a target with no compiled steps at all (a transformers-backed one) begins its ``note``: the studio
#: says "not available" for it, not "failed"
NOT_AVAILABLE = "compiled steps: not available"


class StepGraphs:
    """Compiled ``static_step`` graphs of one runner (``Runner.compile`` makes them), by (rows, width)."""

    def __init__(self, widths: Sequence[int], say: Optional[Callable[[str], None]] = None):
        ws = sorted({int(w) for w in widths})
        if not ws or ws[0] < 1:
            raise ValueError(f"compiled widths must be positive, got {list(widths)}")
        self.widths = tuple(ws)
        self.say = say or (lambda _msg: None)
        self.note: Optional[str] = None  # why compiling failed (then every step runs eagerly)
        self.compiled_calls = 0  # steps run by a compiled graph
        self.eager_calls = 0  # steps this object passed back to the eager path
        self.compile_seconds = 0.0
        self._fn: Optional[Callable] = None
        self._shapes: set = set()  # (rows, width) compiled so far
        self._bound: Optional[tuple] = None  # the weights and caches the graphs were made for

    @property
    def failed(self) -> bool:
        return self.note is not None

    def width_for(self, width: int) -> Optional[int]:
        """The compiled width a step of ``width`` tokens runs in (None: none is wide enough)."""
        return next((w for w in self.widths if w >= width), None)

    @staticmethod
    def _fingerprint(runner) -> tuple:
        """What a graph is bound to: the weights (frozen into it) and the runner's KV caches (guarded by identity)."""
        w = runner.model.output.weight
        return (w.dtype, w.device, w.data_ptr(), id(runner.caches.layers[0].k_cache))

    def run(self, runner, tokens: torch.Tensor, first_index: int):
        """``runner.step``'s result from a compiled graph, or None: run it eagerly."""
        gpt = runner.model
        if self.failed or torch.is_grad_enabled():
            self.eager_calls += 1
            return None
        rows, w = tokens.shape
        width = self.width_for(w)
        if width is None:
            self.eager_calls += 1
            return None
        if self._bound != self._fingerprint(runner):  # new weights (a precision change) or caches: new graphs
            if self._bound is not None:
                self.say("the model's weights or caches changed: compiling its decode steps again")
            self._fn, self._shapes, self._bound = None, set(), self._fingerprint(runner)
        last = gpt.seq_len - 1
        first = gpt.cls_token_num + first_index
        pos = torch.arange(first, first + width, device=tokens.device).clamp_(max=last)
        # contiguous either way: a graph is specialised to its inputs' strides, and decodes feed row-expanded views
        tokens = torch.cat([tokens, tokens[:, -1:].expand(rows, width - w)], dim=1) if width > w else tokens.contiguous()
        mask = runner.caches.mask[:rows, :, pos]
        shape = (rows, width)  # the weights' dtype is part of _bound: a new one starts new graphs
        try:
            if shape not in self._shapes:  # dynamo's config is per thread: set where this graph compiles
                _allow_recompiles()
            if self._fn is None:
                confine_tracing_patches()  # tracing here must not reach modules other threads call
                self._fn = torch.compile(runner.static_step, fullgraph=True, dynamic=False, mode=_mode(tokens.device))
            t = time.perf_counter()
            if shape not in self._shapes:
                self.say(f"compiling the decode step for {rows} row(s) × {width} token(s)…")
            # freezing: the weights become constants of the graph, prepacked for the CPU's matrix kernels
            # (a vanilla step ~2x faster than without). Set around every call, since a graph compiles on
            # the call that needs it (passed as compile options it did not take effect here).
            with torch._inductor.config.patch(freezing=True):
                logits, feats = self._fn(tokens, pos, mask)
            if shape not in self._shapes:
                self._shapes.add(shape)
                self.compile_seconds += time.perf_counter() - t
        except Exception as exc:  # no C++ compiler, an unsupported backend …: eager from now on
            first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            self.note = f"compiled decoding unavailable, running eagerly ({type(exc).__name__}: {first_line[:160]})"
            self.say(self.note)
            self.eager_calls += 1
            return None
        self.compiled_calls += 1
        return logits[:, :w], feats[:, :w]


# Graphs of ``static_step`` share one code object, so every model, precision, row count and width is
# one more entry under dynamo's per-code limit (8 by default), which a bench or a long studio session
# passes: a larger one.
RECOMPILE_LIMIT = 64


def _mode(device: torch.device) -> Optional[str]:
    """On a GPU a step's few dozen small kernels launch as one CUDA graph ("reduce-overhead"); a CPU
    step has no launch cost to save."""
    return "reduce-overhead" if device.type == "cuda" else None


def _allow_recompiles() -> None:
    config = torch._dynamo.config  # loaded on first use: importing this module stays light
    config.recompile_limit = max(config.recompile_limit, RECOMPILE_LIMIT)


def use_compile_cache(folder) -> Path:
    """Keep compiled graphs on disk in ``folder`` (inductor's FX graph cache, and the AOT autograd cache
    where a graph allows it), so a relaunch loads them instead of compiling again; a folder named in
    TORCHINDUCTOR_CACHE_DIR before this process started wins. Call before the first compile; → the folder."""
    path = Path(_CHOSEN_CACHE or folder)
    path.mkdir(parents=True, exist_ok=True)
    os.environ[CACHE_VARIABLE] = str(path)  # read by inductor at each cache lookup
    torch._inductor.config.fx_graph_cache = True
    torch._functorch.config.enable_autograd_cache = True
    return path


def missing_compiler(device) -> Optional[str]:
    """Why no compiled step can be built on ``device``, asked before any compile (one line), or None.
    A CPU graph is C++ that inductor builds with the compiler it finds (its own search: ``CXX``, g++);
    without one every compile would fail, each after seconds of tracing."""
    if torch.device(device).type != "cpu":
        return None
    from torch._inductor import cpp_builder, exc  # noqa: PLC0415 - the compiler stack, loaded when asked

    try:
        cpp_builder.get_cpp_compiler()
    except exc.InvalidCxxCompiler:
        return NO_COMPILER
    return None


def cache_counts() -> tuple:
    """(hits, misses) of inductor's FX graph cache in this process so far: a miss is a graph compiled."""
    c = torch._dynamo.utils.counters["inductor"]
    return int(c["fxgraph_cache_hit"]), int(c["fxgraph_cache_miss"])
