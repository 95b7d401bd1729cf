"""Verifying a chain of drafts against the target: the one loop every acceptance rule
runs, and its :class:`Verdict`.

A rule (LANTERN / LANTERN++ in :mod:`.acceptance`, the step bound in
:mod:`.step_bound`) is a :class:`ChainRule`: it says which runs of slots to judge
together, and judges each run as one :class:`Judgement` — each draft's relaxed target
probability p̃(x̃) (p(x̃) plus the mass moved onto it), each slot's budget, its
measured TV and where a rejected draft's replacement is drawn from. :func:`verify_drafts` does the rest, the same for every
rule: one uniform per draft, accepted while u·q(x̃) < p̃(x̃) (min(1, p̃/q); q = 1 for
deterministic drafts), or with greedy decoding while p̃(x̃) is at least every other
token's p; each acceptance marked exact when p(x̃) alone would have passed; then the
bonus token from the row after the chain, p's argmax (greedy) or a draw from the
rule's residual at the first rejected slot.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional, Protocol, Tuple

import torch

from .decisions import ACCEPTED_EXACT, ACCEPTED_RELAXED
from .sampling import sample


@dataclass
class Verdict:
    """Outcome of verifying one chain of drafts."""

    n_accepted: int  # drafts accepted, a prefix of the chain
    next_token: int  # the target's token after them (correction or bonus)
    decisions: list  # per accepted draft: ACCEPTED_EXACT or ACCEPTED_RELAXED
    # Per slot that decided a token (the accepted drafts, then the rejected slot's
    # replacement; a bonus token is sampled from p and has no slot here):
    budgets: list = field(default_factory=list)  # the relaxation's bound there (acceptance.relaxation_budgets)
    tv: Optional[list] = None  # measured TV(slot's output distribution, p), when asked


@dataclass(frozen=True)
class Judgement:
    """What a rule says of the slots ``lo`` … ``lo + len(relaxed) − 1`` of one chain, all at once."""

    lo: int
    relaxed: torch.Tensor  # (m,) p̃(x̃) of each slot's draft
    budgets: torch.Tensor  # (m,) the bound on the mass moved at each slot
    tv: Callable[[int], list]  # count → the exact TV between each of the first count slots' output and p
    residual: Callable[[int], torch.Tensor]  # slot (of the chain) → the distribution a rejection there is replaced from


class ChainRule(Protocol):
    """What an acceptance rule tells :func:`verify_drafts` about one chain of n drafts."""

    def chunks(self, n: int) -> Iterable[Tuple[int, int]]:
        """Consecutive runs of slots [lo, hi) to judge, in order; the loop stops after the run
        holding the first rejection."""

    def judge(self, lo: int, hi: int) -> Judgement:
        """Slots lo..hi-1 judged."""


def verify_drafts(p: torch.Tensor, drafts: torch.Tensor, q: Optional[torch.Tensor], rule: ChainRule,
                  generator: Optional[torch.Generator], greedy: bool = False, measure_tv: bool = False) -> Verdict:
    """Verify drafts (n,) against target distributions p (n+1, V) under ``rule``.

    Row i of p is the target's distribution for the slot of drafts[i]; row n is the slot
    after the last draft. ``q`` (n, V) holds the drafter's distributions the drafts were
    sampled from, or None for deterministic drafts. ``measure_tv`` asks the rule for each
    deciding slot's TV (not with greedy decoding); it draws no random numbers.
    """
    n = drafts.shape[0]
    if n == 0:
        tok = int(sample(p[0], generator, greedy))
        return Verdict(0, tok, [], [], [] if measure_tv and not greedy else None)
    pd = p[:n]
    if not greedy:
        u = torch.rand(n, generator=generator, device=p.device if generator is None else generator.device).to(pd)
    ok_list, exact_list, judged = [], [], []
    for lo, hi in rule.chunks(n):
        d = drafts[lo:hi]
        px = pd[lo:hi].gather(1, d[:, None])[:, 0]
        judged.append(rule.judge(lo, hi))
        relaxed_px = judged[-1].relaxed
        if greedy:
            top2 = pd[lo:hi].topk(2, dim=1)
            other = torch.where(top2.indices[:, 0] == d, top2.values[:, 1], top2.values[:, 0])
            ok, exact_ok = relaxed_px >= other, px >= other
        else:
            qx = torch.ones_like(px) if q is None else q[lo:hi].gather(1, d[:, None])[:, 0]
            ok = u[lo:hi] * qx < relaxed_px  # u < min(1, p̃/q)
            exact_ok = u[lo:hi] * qx < px
        ok_list += ok.tolist()
        exact_list += exact_ok.tolist()
        if False in ok_list:
            break
    n_acc = ok_list.index(False) if False in ok_list else n
    decisions = [ACCEPTED_EXACT if e else ACCEPTED_RELAXED for e in exact_list[:n_acc]]
    decided = min(n_acc + 1, n)
    budgets = torch.cat([j.budgets for j in judged])[:decided].tolist()
    tv = None
    if measure_tv and not greedy:
        tv = [t for j in judged for t in j.tv(max(0, min(len(j.relaxed), decided - j.lo)))]
    if n_acc == n:
        return Verdict(n, int(sample(p[n], generator, greedy)), decisions, budgets, tv)
    if greedy:
        return Verdict(n_acc, int(pd[n_acc].argmax()), decisions, budgets, tv)
    return Verdict(n_acc, int(sample(judged[-1].residual(n_acc), generator)), decisions, budgets, tv)
