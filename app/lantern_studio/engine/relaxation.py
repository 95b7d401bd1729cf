"""What a relaxation is: :class:`Relaxation` holds the knobs (k, δ, λ, which
bound, adaptive δ, δ's decay along a chain). Both LANTERN's rule
(:mod:`.acceptance`) and the step bound (:mod:`.step_bound`) read it, and
measure what they move with :func:`total_variation`, so neither imports the
other's internals.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

BOUNDS = ("lantern", "lantern++", "step")


@dataclass(frozen=True)
class Relaxation:
    """LANTERN's knobs. k = 0, or a zero budget (δ = 0, or λ = 1 for LANTERN++), is
    exact speculative decoding.

    ``bound``: "lantern" (default; with ``lam`` set it means LANTERN++, as before
    the field existed), "lantern++" (needs ``lam``) or "step" (no ``lam``).
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
        if self.bound not in BOUNDS:
            raise ValueError(f"bound: one of {', '.join(BOUNDS)}, got {self.bound!r}")
        if self.bound == "lantern++" and self.lam is None:
            raise ValueError("bound 'lantern++' needs lam")
        if self.bound == "step" and self.lam is not None:
            raise ValueError("bound 'step' takes no lam (λ belongs to LANTERN++)")
        if self.adaptive and self.kind == "lantern++":
            raise ValueError("adaptive scales δ; LANTERN++ has none")
        if not (0.0 <= self.decay <= 1.0):
            raise ValueError(f"decay: in [0, 1], got {self.decay!r}")
        if self.decay != 1.0 and self.kind == "lantern++":
            raise ValueError("decay scales δ; LANTERN++ has none")

    @property
    def kind(self) -> str:
        """The rule that runs: "lantern", "lantern++" or "step"."""
        return "lantern++" if self.lam is not None else self.bound

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
