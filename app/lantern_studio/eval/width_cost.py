"""What a verify forward costs as a function of its width, and the draft window that pays.

A speculative round feeds the target the last fixed token and W drafts (width W + 1) at once; on a CPU the
cost of that forward grows with the width well before the arithmetic units are busy, so "longer windows
accept more tokens" and "longer windows cost more per round" have to be weighed on the machine at hand.
:func:`cost_curve` measures the cost per width (the model's CFG rows, its precision, the threads torch
uses); :func:`pick_window` weighs it against the tokens per round measured at each window.
"""

from __future__ import annotations

import time
from typing import Dict, Sequence

import torch

from .floor import prefix_rows

WIDTHS = (1, 2, 4, 8, 12, 16, 20, 25, 33, 49)  # 1 = a vanilla step; W + 1 for a window of W drafts
# the compiled path's curve: each width is a graph compiled for it, so fewer, at the windows a bench tries
COMPILED_WIDTHS = (1, 5, 9, 13, 17, 21)
FIRST_INDEX = 96  # verify here (a third in, on smaller grids), with a typical amount of context cached


@torch.inference_mode()
def cost_curve(pipe, prompt: str, widths: Sequence[int] = WIDTHS, rounds: int = 12, repeats: int = 5) -> list:
    """→ [{"width", "ms"}] for the pipeline's target at the model's CFG rows, timed on the path decoding
    runs (compiled when compiled): :func:`runner_cost_curve` on the prompt's prefix rows."""
    cond, mask = prefix_rows(pipe, prompt)
    return runner_cost_curve(pipe.runner, cond, mask, pipe.grid * pipe.grid, widths, rounds, repeats)


@torch.inference_mode()
def runner_cost_curve(runner, cond: torch.Tensor, mask, total: int, widths: Sequence[int] = WIDTHS,
                      rounds: int = 12, repeats: int = 5) -> list:
    """→ [{"width", "ms"}]: per width, the best of ``repeats`` mean times of ``rounds`` cached forwards of
    that many positions for the prefix rows ``cond`` (``total`` image tokens). One untimed pass over every
    width first (first calls allocate, or compile), then the repeats interleave the widths, so a burst of
    load on the machine lands on all widths alike rather than on one. On a GPU each timing waits for the
    device (``torch.cuda.synchronize``)."""
    rows = cond.shape[0]
    first = min(FIRST_INDEX, total // 3)
    sizes = list(dict.fromkeys(max(1, min(int(w), total - first - 1)) for w in widths))  # a small grid clips
    best = {w: float("inf") for w in sizes}
    device = cond.device
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    runner.start_sequence(rows, mask)
    runner.prefill(cond)
    if first:  # the context a verify at ``first`` has (a transformers target's cache must hold it)
        runner.step(torch.zeros(rows, first, dtype=torch.long, device=device), 0)
    try:
        for rep in range(repeats + 1):
            for width in sizes:
                tokens = torch.zeros(rows, width, dtype=torch.long, device=device)
                sync()
                t = time.perf_counter()
                for _ in range(rounds if rep else 1):
                    runner.step(tokens, first)  # rewrites the same cache rows each time: nothing accumulates
                sync()
                if rep:
                    best[width] = min(best[width], (time.perf_counter() - t) / rounds)
    finally:
        runner.clear_cache()
    return [{"width": w, "ms": best[w] * 1e3} for w in sizes]


def cost_at(curve: Sequence[dict], width: int) -> float:
    """The curve's cost (ms) at ``width``, linear between measured widths, flat past the ends."""
    pts = sorted((int(c["width"]), float(c["ms"])) for c in curve)
    if width <= pts[0][0]:
        return pts[0][1]
    for (w0, c0), (w1, c1) in zip(pts, pts[1:]):
        if width <= w1:
            return c0 + (c1 - c0) * (width - w0) / (w1 - w0)
    return pts[-1][1]


def pick_window(curve: Sequence[dict], tokens_per_round: Dict[int, float], overhead_ms: float = 0.0,
                vanilla_overhead_ms: float = 0.0) -> dict:
    """The window W maximising predicted tokens per millisecond, tokens_per_round[W] / (cost(W + 1) +
    overhead), among the windows measured. → {"window", "predicted": {W: speed-up over a vanilla step of
    cost(1) + vanilla_overhead}}."""
    if not tokens_per_round:
        raise ValueError("pick_window: no measured windows")
    step = cost_at(curve, 1) + vanilla_overhead_ms
    predicted = {int(w): float(t) * step / (cost_at(curve, int(w) + 1) + overhead_ms)
                 for w, t in tokens_per_round.items()}
    best = max(predicted, key=lambda w: (predicted[w], -w))
    return {"window": best, "predicted": predicted}


def path_of(curve: dict) -> str:
    """The name of the decode path a curve was timed on: its precision, and "compiled" when it was."""
    return curve["precision"] + (" compiled" if curve.get("compiled") else "")


def window_picks(methods: Sequence[dict], curves: Sequence[dict]) -> list:
    """For each group of bench results that differ only in their Jacobi window (same k, δ, decay, bound,
    eager or compiled), measured at two windows or more: the tokens per round at each window, the speed-up
    each curve of the same path (eager curves for eager rows, compiled for compiled) predicts, the window
    picked per precision, and the measured speed-ups (at the bench's precision)."""
    groups: Dict[tuple, list] = {}
    vanilla = [r.get("overhead_ms_per_round") or 0.0 for r in methods if r.get("reference")]
    vanilla_overhead = vanilla[0] if vanilla else 0.0
    for r in methods:
        s = r.get("settings") or {}
        if s.get("drafter") != "jacobi" or not s.get("coupling", True) or not r.get("rounds_per_image"):
            continue
        key = (s.get("k"), s.get("delta"), s.get("delta_decay", 1.0), s.get("bound"), s.get("adaptive_delta"),
               r.get("precision"), bool(r.get("compiled")))
        groups.setdefault(key, []).append(r)
    out = []
    for (k, delta, decay, bound, adaptive, precision, compiled), rows in groups.items():
        by_window = {int(r["draft_length"]): r for r in rows if r.get("draft_length")}
        if len(by_window) < 2:
            continue
        tpr = {w: r["tokens_per_image"] / r["rounds_per_image"] for w, r in by_window.items()}
        overheads = sorted(r.get("overhead_ms_per_round") or 0.0 for r in by_window.values())
        overhead = overheads[len(overheads) // 2]
        picks = {path_of(c): pick_window(c["curve"], tpr, overhead, vanilla_overhead)
                 for c in curves if bool(c.get("compiled")) == compiled}
        if not picks:  # no curve timed on this path
            continue
        out.append({"k": k, "delta": delta, "decay": decay, "bound": bound, "adaptive": adaptive,
                    "compiled": compiled, "measured_precision": precision, "tokens_per_round": tpr, "overhead_ms": overhead,
                    "picks": picks,
                    "measured_speedup": {w: r.get("speedup_median") for w, r in by_window.items()}})
    return out


def describe(curves: Sequence[dict], picks: Sequence[dict]) -> list:
    """Lines for the bench's output: the curve per precision, then each window group."""
    lines = []
    for c in curves:
        base = c["curve"][0]["ms"]
        pts = " · ".join(f"{p['width']}: {p['ms']:.2f}" for p in c["curve"])
        worst = c["curve"][-1]
        lines.append(f"verify cost by width ({path_of(c)}, ms): {pts}  (width {worst['width']} = "
                     f"{worst['ms'] / base:.2f}× a vanilla step)")
    for g in picks:
        what = f"jacobi k={g['k']} δ={g['delta']:g}" + (f"·{g['decay']:g}^i" if g["decay"] != 1 else "")
        tpr = " · ".join(f"L{w} {t:.2f}" for w, t in sorted(g["tokens_per_round"].items()))
        lines.append(f"window ({what}{', compiled' if g.get('compiled') else ''}): tokens per round {tpr}")
        for precision, pick in g["picks"].items():
            pred = " · ".join(f"L{w} {x:.2f}×" for w, x in sorted(pick["predicted"].items()))
            lines.append(f"  {precision}: predicted {pred} → window {pick['window']}")
        meas = " · ".join(f"L{w} {x:.2f}×" for w, x in sorted(g["measured_speedup"].items()) if x is not None)
        lines.append(f"  measured ({g['measured_precision']}{' compiled' if g.get('compiled') else ''}): {meas}")
    return lines
