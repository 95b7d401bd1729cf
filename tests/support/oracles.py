"""Test oracles for the acceptance rules: the exact distribution of the token one
verification step emits at a slot, by enumeration over the drafts.

The tests check the samplers (engine/acceptance.py, engine/step_bound.py) against
these. They call the engine's pieces through their modules (``step_bound.residual``,
``step_bound.relaxed_rows``, ...) so that a test that monkeypatches one of them to
build a mutant changes the oracle too."""

from typing import Optional

import torch

from lantern_studio.engine import acceptance, step_bound
from lantern_studio.engine.relaxation import Relaxation


def random_case(seed: int, v: int):
    """A seeded test case over ``v`` codes: a 2-D codebook (v, 2) and target and drafter distributions p, q (float64)."""
    g = torch.Generator().manual_seed(seed)
    codebook = torch.randn(v, 2, generator=g)
    p = torch.softmax(torch.randn(v, generator=g).double() * 1.5, 0)
    q = torch.softmax(torch.randn(v, generator=g).double() * 1.5, 0)
    return codebook, p, q


def step_output_distribution(p_row, q_row, relax: Relaxation, table, draft: Optional[int] = None) -> torch.Tensor:
    """The exact distribution (float64) of the token one verification step emits at a slot,
    for the rule ``relax`` names.

    With ``draft`` given, the draft is deterministic (q = 1); otherwise the draft
    is averaged over q. The step bound is enumerated by :func:`step_bound_output_distribution`.
    """
    if relax.kind == "step":
        return step_bound_output_distribution(p_row, q_row, relax, table, draft)
    drafts = [draft] if draft is not None else range(p_row.shape[0])
    out = torch.zeros_like(p_row, dtype=torch.float64)
    for x in drafts:
        weight = 1.0 if draft is not None else float(q_row[x])
        if weight == 0.0:
            continue
        xt = torch.tensor([x])
        mass, nb, count = acceptance.neighbourhood(p_row[None], xt, relax, table)
        qx = 1.0 if draft is not None else float(q_row[x])
        acc = min(1.0, float(p_row[x] + mass[0]) / qx)
        resid = acceptance.residual_distribution(p_row, x, nb[0, : int(count[0])],
                                                 None if draft is not None else q_row)
        out += weight * (1.0 - acc) * resid.double()
        out[x] += weight * acc
    return out


def step_bound_output_distribution(p_row, q_row, relax: Relaxation, table,
                                   draft: Optional[int] = None) -> torch.Tensor:
    """The exact distribution (float64) of the token one step-bounded verification
    emits at a slot: the draft x is averaged over q (or fixed to ``draft``, q = one-hot),
    each x contributing q(x)·[acceptance(x)·e_x + (1 − acceptance(x))·residual]."""
    p = p_row.double()
    v = p.shape[0]
    if draft is not None:
        q = torch.nn.functional.one_hot(torch.tensor(draft), v).to(p.dtype)
    else:
        q = q_row.double()
    pstar, qd, _budget = step_bound.relaxed_rows(p[None], torch.tensor([draft if draft is not None else 0]),
                                                 q[None], relax, table)
    pstar, q = pstar[0], qd[0]
    out = torch.zeros(v, dtype=torch.float64)
    resid = step_bound.residual(pstar, q)
    for x in (q > 0).nonzero()[:, 0].tolist():
        a = min(1.0, float(pstar[x] / q[x]))  # exact acceptance against p*
        out += float(q[x]) * (1.0 - a) * resid
        out[x] += float(q[x]) * a
    return out
