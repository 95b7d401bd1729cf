"""A decode step's time next to its matmul-only floor.

The floor is the time of just the matrix products one cached single-token
step performs (every Linear of every layer and the output head, at the step's
batch of CFG rows), run back to back; the rest of a real step is attention,
norms, rotary, sampling and Python overhead.
"""

from __future__ import annotations

import time

import torch

from ..engine.decode import cfg_batch
from ..engine.model import Transformer


def _weights(runner):
    """Every matrix one decode step multiplies by, as the runner holds them (w1 and w3 fused or not); for a
    target of another kind (a transformers model behind the target protocol), every Linear it holds."""
    gpt = runner.model
    if not isinstance(gpt, Transformer):
        yield from (m.weight for m in gpt.modules() if isinstance(m, torch.nn.Linear))
        return
    for i, layer in enumerate(gpt.layers):
        a, f = layer.attention, layer.feed_forward
        yield from (a.wqkv.weight, a.wo.weight)
        yield from ((runner.w13[i],) if runner.w13 is not None else (f.w1.weight, f.w3.weight))
        yield f.w2.weight
    yield gpt.output.weight


def prefix_rows(pipe, prompt: str):
    """(condition rows, caption mask or None) of one decode of ``prompt`` at the model's defaults, both halves
    when it guides, the condition in the weights' dtype: what a timing probe prefills."""
    c = pipe.conditioner(prompt)
    mask = c.mask.to(pipe.device) if c.mask is not None else None
    cond, mask = cfg_batch(pipe.gpt, c.cond.to(pipe.device), mask, pipe.defaults.sampling.uses_cfg)
    if cond.is_floating_point():
        cond = cond.to(next(pipe.gpt.parameters()).dtype)
    return cond, mask


@torch.inference_mode()
def step_vs_floor(pipe, prompt: str = "red heart", steps: int = 64, repeats: int = 3) -> dict:
    """→ {"step_ms", "floor_ms", "ratio", "rows"} for the pipeline's target on this machine."""
    gpt, runner = pipe.gpt, pipe.runner
    cond, mask = prefix_rows(pipe, prompt)
    rows = cond.shape[0]
    dev = pipe.device
    steps = max(1, min(steps, gpt.block_size - 1))  # the cache holds one image
    best_step = float("inf")
    for _ in range(repeats):
        runner.start_sequence(rows, mask)  # the same caches each time (a compiled step is bound to them)
        runner.prefill(cond)
        tok = torch.zeros(rows, 1, dtype=torch.long, device=dev)
        t = time.perf_counter()
        for i in range(steps):
            runner.step(tok, i)
        best_step = min(best_step, (time.perf_counter() - t) / steps)
    runner.clear_cache()
    ws = [w.detach() for w in _weights(runner)]
    xs = {w.shape[1]: torch.randn(rows, w.shape[1], dtype=w.dtype, device=dev) for w in ws}
    best_floor = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(steps):
            for w in ws:
                torch.nn.functional.linear(xs[w.shape[1]], w)
        best_floor = min(best_floor, (time.perf_counter() - t) / steps)
    return {"step_ms": best_step * 1e3, "floor_ms": best_floor * 1e3, "ratio": best_step / best_floor,
            "rows": rows, "threads": torch.get_num_threads()}
