"""The step bound: a relaxed target p* within δ of p, then exact speculative sampling against p*.

LANTERN's δ bounds each token's probability, so with drafts sampled from the
drafter the step's output can move further than δ from p. This rule keeps the
promise per step, for sampled and deterministic drafts alike.

**p*, exactly.** For one verified slot let p be the target's distribution, q the
drafter's (one-hot at x̃ for a deterministic draft), b the slot's budget (δ, or
the entropy-adaptive δ_t of :mod:`.budget`) and N_k(z) the k codebook entries
nearest to z (the :class:`~.neighbours.ProximityTable`: self excluded, nearest
first). Surplus s(y) = max(p(y) − q(y), 0), deficit d(z) = max(q(z) − p(z), 0).

* Mass may move from y to z only when y ∈ N_k(z) — a token pulls from its own k
  nearest neighbours, the relation LANTERN uses for x̃ — and only from a surplus
  token to a deficit token, never below q at the giver nor above q at the taker.
* Greedy transport, :data:`ROUNDS` rounds over the :data:`RECEIVERS` tokens of
  largest deficit (in that order): a receiver asks for
  min(its deficit, the surplus left among its neighbours, the budget left after
  the receivers before it) and fills the request from its neighbours nearest
  first; a giver claimed by several receivers pays each in proportion to its
  claim, so it never gives more than its surplus.
* p* = p + (mass received) − (mass given).

**Guarantee.** Takers are deficit tokens and givers surplus tokens, disjoint
sets, so TV(p*, p) = ½ Σ|p* − p| = the mass moved ≤ b (a last rescaling makes
that hold against float rounding). Every unit moved raises the overlap
Σ min(p*, q) — the acceptance probability — by one unit. Exact speculative
sampling against p* (accept x̃ with min(1, p*(x̃)/q(x̃)), else draw from
norm(max(p* − q, 0))) emits exactly p*, so the step's output is within b ≤ δ of
p in total variation, whatever q is. The greedy may move less than the optimal
transport would (acceptance lost, never the bound): receivers beyond
:data:`RECEIVERS`, and proportional sharing of contested givers.

**Deterministic draft** (q = one-hot at x̃): x̃ is the only deficit token and
every other token is surplus, so p* moves min(b, p(N_k(x̃))) onto x̃ from
N_k(x̃), nearest first, the last neighbour reached giving only what fits. x̃ is
accepted with probability p*(x̃) = p(x̃) + min(b, p(N_k(x̃))) and a rejected
draft is replaced from norm(p* with x̃ zeroed). That is LANTERN's rule except
that the neighbour at the edge of the longest prefix within δ gives part of
its mass instead of none: it accepts at least as often as LANTERN, and the
output is exactly p*, within b of p.

Greedy decoding accepts x̃ when p*(x̃) (built with q = one-hot at x̃) is at
least every other token's p, and otherwise takes p's argmax, as LANTERN does.
"""

from __future__ import annotations

from typing import Optional

import torch

from .budget import chain_budgets
from .relaxation import Relaxation, total_variation
from .verification import Judgement, Verdict, verify_drafts

RECEIVERS = 64  # at most this many deficit tokens per slot receive mass (the largest deficits) ...
WORK = 4096  # ... and at most WORK // k of them (at least 8), so a slot costs O(WORK) whatever k is
ROUNDS = 3  # greedy passes (stopping early once nothing is contested); later ones re-offer what sharing left
FIRST_CHUNK = 4  # a chain's p* rows are built in chunks (4, 8, 16, ...) up to the first rejection


def receivers_for(k: int, v: int) -> int:
    """How many deficit tokens of a slot may receive mass for neighbour count k."""
    return min(v, RECEIVERS, max(8, WORK // max(1, k)))


def relaxed_target(p: torch.Tensor, q: torch.Tensor, table, k: int,
                   budget: torch.Tensor, receivers: Optional[int] = None, rounds: int = ROUNDS):
    """p* for each row: p, q (n, V), budget (n,) → (p* (n, V), mass moved (n,)).
    ``table`` is the :class:`~.neighbours.ProximityTable` (anything with
    ``neighbours(tokens, k)``).

    See the module docstring for the definition and its guarantee:
    TV(p*[i], p[i]) = moved[i] ≤ budget[i]. ``receivers`` defaults to :func:`receivers_for`.
    """
    n, v = p.shape
    budget = torch.as_tensor(budget, dtype=p.dtype, device=p.device).expand(n).clamp(min=0.0)
    k = min(int(k), v - 1)
    if k <= 0 or table is None or n == 0:
        return p.clone(), torch.zeros(n, dtype=p.dtype, device=p.device)
    m = receivers_for(k, v) if receivers is None else min(int(receivers), v)
    surplus = (p - q).clamp(min=0.0)
    want, recv = (q - p).clamp(min=0.0).topk(m, dim=1)  # (n, m), largest deficit first
    nb = table.neighbours(recv.reshape(-1), k).reshape(n, m * k)
    left = budget.clone()
    got_total = torch.zeros(n, m, dtype=p.dtype, device=p.device)
    given_total = torch.zeros(n, v, dtype=p.dtype, device=p.device)
    for r in range(rounds):
        avail = surplus.gather(1, nb).reshape(n, m, k)
        reach = avail.sum(-1).minimum(want)  # what each receiver could take alone
        ask = reach.minimum((left[:, None] - (reach.cumsum(1) - reach)).clamp(min=0.0))
        before = avail.cumsum(-1) - avail  # nearest first
        take = (ask[..., None] - before).clamp(min=0.0).minimum(avail).reshape(n, m * k)
        claims = torch.zeros_like(surplus).scatter_add_(1, nb, take)
        contested = claims > surplus
        share = torch.where(contested, surplus / claims.clamp(min=torch.finfo(p.dtype).tiny), torch.ones_like(claims))
        take = take * share.gather(1, nb)
        given = torch.zeros_like(surplus).scatter_add_(1, nb, take)
        got = take.reshape(n, m, k).sum(-1)
        got_total += got
        given_total += given
        surplus = (surplus - given).clamp(min=0.0)
        want = (want - got).clamp(min=0.0)
        left = (left - got.sum(1)).clamp(min=0.0)
        if r + 1 < rounds and not bool(contested.any()):
            break  # every receiver got what it asked: either the budget is spent or its neighbours are empty
    moved = got_total.sum(1)
    scale = torch.where(moved > budget, budget / moved.clamp(min=torch.finfo(p.dtype).tiny), torch.ones_like(moved))
    pstar = (p - given_total * scale[:, None]).scatter_add(1, recv, got_total * scale[:, None]).clamp(min=0.0)
    return pstar, moved * scale


def residual(pstar_row: torch.Tensor, q_row: torch.Tensor) -> torch.Tensor:
    """A rejected draft's replacement: norm(max(p* − q, 0)) (p* itself if that is empty,
    which happens only when p* = q, where nothing is ever rejected)."""
    r = (pstar_row - q_row).clamp(min=0.0)
    total = r.sum()
    return r / total if float(total) > 0.0 else pstar_row / pstar_row.sum()


def _one_hot(drafts: torch.Tensor, v: int, dtype) -> torch.Tensor:
    return torch.nn.functional.one_hot(drafts, v).to(dtype)


def relaxed_rows(pd, drafts, q, relax: Relaxation, table, first: int = 0):
    """(p* (n, V), the q used (n, V), budgets (n,)) for consecutive slots of a chain, the first of them at
    position ``first`` (δ may tighten along the chain)."""
    qd = _one_hot(drafts, pd.shape[1], pd.dtype) if q is None else q.to(pd.dtype)
    budget = chain_budgets(pd, relax, first) if relax.active else torch.zeros_like(pd[:, 0])
    pstar, _moved = relaxed_target(pd, qd, table, relax.k, budget)
    return pstar, qd, budget


class StepRule:
    """The step bound as a :class:`~.verification.ChainRule`: p̃ is p*, built chunk by chunk
    (:data:`FIRST_CHUNK` rows, then twice as many, ...) and only up to the first rejected
    slot; each row's p* depends on its own slot only, so the verdict is the one all rows at
    once would give. ``q`` is None for deterministic drafts and greedy decoding (q = one-hot
    at x̃)."""

    def __init__(self, pd, drafts, q, relax: Relaxation, table):
        self.pd, self.drafts, self.q, self.relax, self.table = pd, drafts, q, relax, table

    def chunks(self, n: int):
        lo, size = 0, FIRST_CHUNK
        while lo < n:
            hi = min(n, lo + size)
            yield lo, hi
            lo, size = hi, 2 * size

    def judge(self, lo: int, hi: int) -> Judgement:
        d, pd = self.drafts[lo:hi], self.pd[lo:hi]
        pstar, qd, budget = relaxed_rows(pd, d, None if self.q is None else self.q[lo:hi], self.relax, self.table, lo)
        return Judgement(lo, pstar.gather(1, d[:, None])[:, 0], budget,
                         lambda count: total_variation(pstar[:count], pd[:count]).tolist(),
                         lambda j: residual(pstar[j - lo], qd[j - lo]))


def verify_chain_step(p, drafts, q, relax: Relaxation, table, generator, greedy: bool = False,
                      measure_tv: bool = False) -> Verdict:
    """:func:`.acceptance.verify_chain` for the step bound (same arguments), through the loop of
    :func:`.verification.verify_drafts`: exact speculative sampling against p*, which accepts
    x̃ with min(1, p*(x̃) / q(x̃)) and replaces a rejected draft from norm(max(p* − q, 0))."""
    rule = StepRule(p[: drafts.shape[0]], drafts, None if greedy else q, relax, table)
    return verify_drafts(p, drafts, q, rule, generator, greedy, measure_tv)
