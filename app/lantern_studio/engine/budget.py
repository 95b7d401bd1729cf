"""Per-slot relaxation budgets: δ itself, or entropy-adaptive δ_t = δ · H(p_t) / log V.

H is the Shannon entropy of the slot's target distribution p_t (after guidance,
temperature, top-k, top-p) and V its vocabulary size, so H / log V lies in
[0, 1] and δ_t ≤ δ always: the budget is spent where the target is flat and
withheld where it is sure (a one-hot p_t gets δ_t = 0). With top-k = K the
entropy is at most log K, so δ_t ≤ δ · log K / log V.

For the "step" bound δ_t is a total-variation bound on the slot's output; for
LANTERN it is the neighbourhood-mass budget (docs/architecture.md, "LANTERN, exactly").
LANTERN++ has no δ and takes no adaptive budget.
"""

from __future__ import annotations

import math

import torch


def normalised_entropy(p: torch.Tensor) -> torch.Tensor:
    """H(p) / log V for each row of p (n, V), clamped to [0, 1] against rounding."""
    v = p.shape[-1]
    if v < 2:
        return torch.zeros(p.shape[:-1], dtype=p.dtype, device=p.device)
    h = -torch.special.xlogy(p, p).sum(-1)
    return (h / math.log(v)).clamp(0.0, 1.0)


def slot_budgets(p: torch.Tensor, delta: float, adaptive: bool) -> torch.Tensor:
    """(n,) budgets for the slots whose target distributions are the rows of p (n, V)."""
    if not adaptive:
        return torch.full(p.shape[:-1], float(delta), dtype=p.dtype, device=p.device)
    return float(delta) * normalised_entropy(p)
