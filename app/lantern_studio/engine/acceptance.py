"""Exact and LANTERN relaxed acceptance of drafted tokens.

The rule (docs/architecture.md, "LANTERN, exactly"): for a drafted token x̃ with target
distribution p and drafter probability q(x̃), let A be the longest prefix of x̃'s
k nearest codebook neighbours (self excluded, nearest first) whose total
target mass m stays within the bound (δ, or (λ−1)·p(x̃) for LANTERN++).
Accept with probability min(1, (p(x̃) + m) / q(x̃)); on rejection draw from
norm(max(p_A − q, 0)) where p_A is p with x̃ and A zeroed (norm(p_A) if that is
empty). Deterministic drafts use q = 1. δ = 0 or k = 0 is ordinary
speculative sampling.

:class:`Relaxation` also names the bound: "lantern" (the rule above, the
default), "lantern++" (the multiplicative bound; a λ with the default bound
means LANTERN++ too, as it always did) or "step", which bounds each step's
output in total variation by δ for sampled drafts as well
(:mod:`.step_bound`). ``adaptive`` scales δ per slot by the target's
normalised entropy (:mod:`.budget`).
"""

from __future__ import annotations

from typing import Optional

import torch

from . import step_bound
from .budget import chain_budgets, slot_budgets
from .neighbours import ProximityTable
from .relaxation import Relaxation, total_variation
from .verification import Judgement, Verdict, verify_drafts


# --------------------------------------------------------------------------- the rule


def neighbourhood(p: torch.Tensor, drafts: torch.Tensor, relax: Relaxation, table: Optional[ProximityTable],
                  budget: Optional[torch.Tensor] = None):
    """For each row i: the latent neighbourhood A of drafts[i] under p[i] (LANTERN and
    LANTERN++; the step bound has no per-draft neighbourhood, see :mod:`.step_bound`).

    ``budget`` (n,) is each row's mass bound for δ mode (default δ, or the adaptive
    δ_t of the row). Returns (mass (n,), neighbour ids (n, k), count (n,)): A is the
    first ``count[i]`` entries of the neighbour ids, and ``mass`` their p-mass.
    """
    n = drafts.shape[0]
    if not relax.active or table is None:
        z = torch.zeros(n, dtype=p.dtype, device=p.device)
        return z, torch.zeros(n, 0, dtype=torch.long, device=p.device), torch.zeros(n, dtype=torch.long, device=p.device)
    if relax.kind == "step":
        raise ValueError("neighbourhood: the step bound moves mass by step_bound.relaxed_target")
    nb = table.neighbours(drafts, relax.k)
    cum = p.gather(1, nb).cumsum(1)
    if relax.kind == "lantern++":
        bound = (relax.lam - 1.0) * p.gather(1, drafts[:, None])
    else:
        if budget is None:
            budget = chain_budgets(p, relax)
        bound = budget.to(p.dtype)[:, None]
    count = (cum <= bound).sum(1)
    mass = torch.where(count > 0, cum.gather(1, (count - 1).clamp(min=0)[:, None])[:, 0], torch.zeros_like(cum[:, 0]))
    return mass, nb, count


def relaxation_budgets(p: torch.Tensor, drafts: torch.Tensor, relax: Relaxation) -> torch.Tensor:
    """(n,) each slot's bound on the mass the rule may move: δ (or the adaptive δ_t),
    (λ − 1)·p(x̃) for LANTERN++ (at most 1), 0 when the relaxation is off. For the
    step bound, and for deterministic drafts under any bound, it bounds the TV
    between the slot's output and p."""
    n = drafts.shape[0]
    if not relax.active:
        return torch.zeros(n, dtype=p.dtype, device=p.device)
    if relax.kind == "lantern++":
        return ((relax.lam - 1.0) * p[:n].gather(1, drafts[:, None])[:, 0]).clamp(max=1.0)
    return chain_budgets(p[:n], relax)


def residual_distribution(p_row, draft: int, neighbours, q_row=None) -> torch.Tensor:
    """Where a rejected draft's replacement is drawn from: norm(max(p_A − q, 0)),
    p_A being p with the draft and its neighbourhood zeroed; norm(p_A) when that
    is empty (and p itself if even p_A is empty)."""
    pa = p_row.clone()
    pa[draft] = 0.0
    if len(neighbours):
        pa[neighbours] = 0.0
    resid = pa if q_row is None else (pa - q_row).clamp(min=0.0)
    for cand in (resid, pa, p_row):
        total = cand.sum()
        if float(total) > 0.0:
            return cand / total
    return p_row


def lantern_output_distribution(p_row: torch.Tensor, q_row: torch.Tensor, relax: Relaxation, table,
                                budget: Optional[torch.Tensor] = None) -> torch.Tensor:
    """The exact distribution of the token one LANTERN / LANTERN++ verification step
    emits at a slot, with drafts sampled from ``q_row``, vectorised over q's support
    (one row per possible draft), in p's dtype: what the decode's per-step TV
    measurement uses. ``budget`` is the
    slot's δ (or adaptive δ_t), a 0-d tensor; by default computed from p_row."""
    v = p_row.shape[0]
    sup = (q_row > 0).nonzero()[:, 0]
    s = sup.shape[0]
    rows = p_row[None].expand(s, v)
    if budget is None and relax.kind == "lantern":
        budget = slot_budgets(p_row[None], relax.delta, relax.adaptive)[0]
    bud = None if budget is None else budget.reshape(1).expand(s)
    mass, nb, count = neighbourhood(rows, sup, relax, table, bud)
    qx, px = q_row[sup], p_row[sup]
    acc = ((px + mass) / qx).clamp(max=1.0)
    pa = rows.clone()
    pa[torch.arange(s, device=pa.device), sup] = 0.0
    if nb.shape[1]:
        keep = torch.arange(nb.shape[1], device=nb.device)[None] >= count[:, None]
        pa.scatter_(1, nb, torch.where(keep, pa.gather(1, nb), torch.zeros_like(mass)[:, None]))
    resid = (pa - q_row[None]).clamp(min=0.0)
    for cand in (pa, rows):  # the fallbacks of residual_distribution, row by row
        empty = resid.sum(1, keepdim=True) <= 0
        resid = torch.where(empty, cand, resid)
    resid = resid / resid.sum(1, keepdim=True)
    out = ((qx * (1.0 - acc))[:, None] * resid).sum(0)
    out[sup] += qx * acc
    return out


class LanternRule:
    """LANTERN / LANTERN++ (exact speculative sampling when the relaxation is off) as a
    :class:`~.verification.ChainRule`: every slot of the chain judged at once, each draft's
    neighbourhood A moving its mass m onto it (p̃(x̃) = p(x̃) + m)."""

    def __init__(self, pd: torch.Tensor, drafts: torch.Tensor, q: Optional[torch.Tensor], relax: Relaxation,
                 table: Optional[ProximityTable]):
        self.pd, self.drafts, self.q, self.relax, self.table = pd, drafts, q, relax, table
        self.on = relax.active and table is not None

    def chunks(self, n: int):
        return [(0, n)]

    def judge(self, lo: int, hi: int) -> Judgement:
        pd, drafts, q, relax, table, on = self.pd, self.drafts, self.q, self.relax, self.table, self.on
        px = pd[lo:hi].gather(1, drafts[lo:hi, None])[:, 0]
        budget = relaxation_budgets(pd[lo:hi], drafts[lo:hi], relax) if on else torch.zeros_like(px)
        mass, nb, count = neighbourhood(pd[lo:hi], drafts[lo:hi], relax, table,
                                        budget if on and relax.kind == "lantern" else None)

        def tv(count_: int) -> list:
            if not on:
                return [0.0] * count_  # exact speculative sampling: the output is p
            if q is None:
                return mass[:count_].tolist()  # deterministic: the output is p̃, which moved m(x̃)
            return [float(total_variation(lantern_output_distribution(
                pd[lo + i], q[lo + i], relax, table, budget[i] if relax.kind == "lantern" else None), pd[lo + i]))
                for i in range(count_)]

        def residual(j: int) -> torch.Tensor:
            return residual_distribution(pd[j], int(drafts[j]), nb[j - lo, : int(count[j - lo])],
                                         None if q is None else q[j])

        return Judgement(lo, px + mass, budget, tv, residual)


def verify_chain(
    p: torch.Tensor,
    drafts: torch.Tensor,
    q: Optional[torch.Tensor],
    relax: Relaxation,
    table: Optional[ProximityTable],
    generator: Optional[torch.Generator],
    greedy: bool = False,
    measure_tv: bool = False,
) -> Verdict:
    """Verify drafts (n,) against target distributions p (n+1, V).

    Row i of p is the target's distribution for the slot of drafts[i]; row n
    is the slot after the last draft (the bonus token when all are accepted).
    ``q`` (n, V) holds the drafter's distributions the drafts were sampled
    from, or None for deterministic drafts (q(x̃) = 1). The step bound runs
    :func:`.step_bound.verify_chain_step`; both run the loop of
    :func:`.verification.verify_drafts`. ``measure_tv`` fills ``Verdict.tv``
    with the exact TV between each deciding slot's output distribution and p
    (not with greedy decoding); it draws no random numbers, so the tokens are
    the same either way.
    """
    if relax.kind == "step" and relax.active and table is not None:
        return step_bound.verify_chain_step(p, drafts, q, relax, table, generator, greedy, measure_tv)
    rule = LanternRule(p[: drafts.shape[0]], drafts, q, relax, table)
    return verify_drafts(p, drafts, q, rule, generator, greedy, measure_tv)
