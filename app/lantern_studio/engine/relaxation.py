"""What a relaxation is, and the one home of its rules: :class:`Relaxation` holds the
knobs (k, δ, λ, which bound, adaptive δ, δ's decay along a chain); :func:`kind_of` says
which rule runs (the λ/δ meaning) and :func:`combination_problem` which combinations
are refused — ``GenerationSettings.validate`` and ``Relaxation`` both ask them. Both
LANTERN's rule (:mod:`.acceptance`) and the step bound (:mod:`.step_bound`) read a
Relaxation, and measure what they move with :func:`total_variation`, so neither
imports the other's internals.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

BOUNDS = ("lantern", "lantern++", "step")


def kind_of(bound: str, lam: Optional[float]) -> str:
    """The rule that runs: "lantern++" whenever λ is set — bound "lantern" with a λ is how LANTERN++
    was asked for before the bound field existed — else ``bound`` ("lantern" or "step")."""
    return "lantern++" if lam is not None else bound


def combination_problem(bound: str, lam: Optional[float], adaptive: bool, decay: float) -> Optional[tuple]:
    """The first combination of the knobs that is refused, as (settings field, what is wrong), or None."""
    if bound not in BOUNDS:
        return "bound", f"must be one of {', '.join(BOUNDS)}, got {bound!r}"
    if bound == "lantern++" and lam is None:
        return "lam", "must be set (λ in [1, 1e+06]) for bound 'lantern++'"
    if bound == "step" and lam is not None:
        return "lam", f"must be unset for bound 'step' (λ belongs to LANTERN++), got {lam!r}"
    if adaptive and lam is not None:
        return "adaptive_delta", "scales δ, and LANTERN++ (λ) has none: use bound 'lantern' or 'step'"
    if decay != 1 and lam is not None:
        return "delta_decay", "scales δ, and LANTERN++ (λ) has none: use bound 'lantern' or 'step'"
    return None


@dataclass(frozen=True)
class Relaxation:
    """LANTERN's knobs. k = 0, or a zero budget (δ = 0, or λ = 1 for LANTERN++), is
    exact speculative decoding.

    ``bound``: "lantern" (default), "lantern++" or "step"; which rule runs is :func:`kind_of`.
    ``adaptive``: each slot's δ becomes δ · H(p) / log V (not for LANTERN++).
    ``decay``: δ tightens along a chain of drafts, slot i (0 = the first draft)
    getting δ · decay^i (1 = flat; not for LANTERN++).
    """

    k: int = 0
    delta: float = 0.0
    lam: Optional[float] = None  # LANTERN++: neighbourhood mass ≤ (λ − 1)·p(x̃)
    bound: str = "lantern"
    adaptive: bool = False
    decay: float = 1.0

    def __post_init__(self):
        if not (0.0 <= self.decay <= 1.0):
            raise ValueError(f"decay: in [0, 1], got {self.decay!r}")
        problem = combination_problem(self.bound, self.lam, self.adaptive, self.decay)
        if problem is not None:
            raise ValueError(f"{problem[0]}: {problem[1]}")

    @property
    def kind(self) -> str:
        """The rule that runs (:func:`kind_of`)."""
        return kind_of(self.bound, self.lam)

    @property
    def active(self) -> bool:
        if self.k <= 0:
            return False
        if self.kind == "lantern++":
            return self.lam > 1.0
        return self.delta > 0.0


def total_variation(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """½ Σ |a − b| over the last axis."""
    return 0.5 * (a - b).abs().sum(-1)
