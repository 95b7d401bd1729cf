"""Per-slot relaxation budgets: δ itself, or entropy-adaptive δ_t = δ · H(p_t) / log V.

H is the Shannon entropy of the slot's target distribution p_t (after guidance,
temperature, top-k, top-p) and V its vocabulary size, so H / log V lies in
[0, 1] and δ_t ≤ δ always: the budget is spent where the target is flat and
withheld where it is sure (a one-hot p_t gets δ_t = 0). With top-k = K the
entropy is at most log K, so δ_t ≤ δ · log K / log V.

For the "step" bound δ_t is a total-variation bound on the slot's output; for
LANTERN it is the neighbourhood-mass budget (docs/architecture.md, "LANTERN, exactly").
LANTERN++ has no δ and takes no adaptive budget.

A decay < 1 tightens δ along a chain of drafts (:func:`chain_budgets`): slot i
of the chain (0 = the first draft) gets δ · decay^i, so later drafts, which
are conditioned on earlier relaxed ones, are held closer to the target, and one
verification moves at most δ / (1 − decay) in all (with δ per slot at decay 1).
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


def chain_budgets(p: torch.Tensor, relax, first: int = 0) -> torch.Tensor:
    """(n,) budgets for consecutive slots of one chain of drafts (rows of p (n, V), the first of them at
    position ``first`` in the chain): the slot budget (δ or the adaptive δ_t) times ``relax.decay`` to the
    slot's position."""
    base = slot_budgets(p, relax.delta, relax.adaptive)
    if relax.decay == 1.0:
        return base
    steps = torch.arange(first, first + p.shape[0], dtype=base.dtype, device=base.device)
    return base * torch.as_tensor(relax.decay, dtype=base.dtype, device=base.device) ** steps
