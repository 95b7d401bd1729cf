"""What a decoding method is called, in one place: :class:`DecodeMethod` is built from the settings
(drafter, bound, k, δ, λ, adaptive δ, δ's decay) and says its family, whether it is exact or relaxed,
the label a person reads, the chart group, the PNG's "Sampler"/"Bound" fields, the bench's family and
name, and what it guarantees. Every place that names, groups or plots a method asks it (the studio's
chart, Compare, jobs and controls; ``export``; the bench and the batch sweep), so a run has one name.

When a run is relaxed is :attr:`Relaxation.active`'s rule (engine/relaxation.py), asked, not re-encoded:
no drafter is vanilla; a drafter with k = 0, δ = 0 (bounds "lantern"/"step") or λ = 1 (LANTERN++) is exact
speculative sampling (DESIGN, "LANTERN, exactly": δ = 0 or k = 0 is ordinary speculative sampling); a
relaxed run's family is its bound's: LANTERN, LANTERN++ or the step bound (the studio's own addition, not
LANTERN)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from .relaxation import BOUNDS, Relaxation, kind_of

VANILLA, EXACT, LANTERN, LANTERN_PP, STEP = "vanilla", "exact speculative", "LANTERN", "LANTERN++", "step bound"
FAMILIES = (VANILLA, EXACT, LANTERN, LANTERN_PP, STEP)  # the labels, in the order charts and keys list them
BENCH_FAMILIES = {VANILLA: "vanilla", EXACT: "exact", LANTERN: "lantern", LANTERN_PP: "lantern++", STEP: "step"}
BOUND_FIELDS = {LANTERN: "lantern", LANTERN_PP: "lantern++", STEP: "step"}  # the PNG's "Bound" (None if exact)
GUARANTEES = {
    VANILLA: "one target forward per token; the output comes exactly from the model",
    EXACT: "exact (lossless): the output comes exactly from the model's own distribution, only sooner",
    LANTERN: "each token's chance is at most its own plus δ from its latent neighbours (per token; a step "
             "with sampled drafts can move further than δ in total variation)",
    LANTERN_PP: "each drafted token's latent neighbours add at most (λ − 1) times its own chance",
    STEP: "each step's output stays within δ of the model's in total variation, sampled drafts too",
}

# Which settings a method of each bound reads (the controls enable these, and only these, for a drafter).
KNOBS = {"lantern": frozenset({"k", "delta", "adaptive_delta", "delta_decay"}),
         "lantern++": frozenset({"k", "lam"}),
         "step": frozenset({"k", "delta", "adaptive_delta", "delta_decay"})}


def knobs_of(drafter: str, bound: str) -> frozenset:
    """The relaxation settings a run with this drafter and bound reads (none without a drafter)."""
    if drafter == "none":
        return frozenset()
    return KNOBS.get(bound, KNOBS["lantern"])


def _num(x: float) -> str:
    return f"{x:g}"


@dataclass(frozen=True)
class DecodeMethod:
    """How one run decodes. Build it with :meth:`of` (a ``GenerationSettings``) or :meth:`of_dict` (a
    record's settings dict, perhaps old or foreign: what it lacks takes the default)."""

    drafter: str = "none"
    k: int = 0
    delta: float = 0.0
    lam: Optional[float] = None
    bound: str = "lantern"
    adaptive: bool = False
    decay: float = 1.0

    @classmethod
    def of(cls, settings) -> "DecodeMethod":
        return cls(settings.drafter, settings.k, settings.delta, settings.lam, settings.bound,
                   settings.adaptive_delta, settings.delta_decay)

    @classmethod
    def of_dict(cls, s) -> "DecodeMethod":
        """From a settings dict. Fields of the wrong type take their default; a combination the settings
        refuse is read as it was meant before the rules existed (a λ with bound "step" is the step bound
        with its δ; adaptive δ or a decay beside a λ is ignored), so an old record still gets a name."""
        s = s if isinstance(s, dict) else {}

        def number(name, default, cast=float):
            v = s.get(name, default)
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            return cast(v) if ok else default

        drafter = s.get("drafter") if isinstance(s.get("drafter"), str) else "none"
        bound = s.get("bound") if s.get("bound") in BOUNDS else "lantern"
        lam = number("lam", None)
        lam = None if bound == "step" else lam
        if bound == "lantern++" and lam is None:
            bound = "lantern"
        adaptive = s.get("adaptive_delta") is True and lam is None
        decay = number("delta_decay", 1.0)
        decay = decay if lam is None and 0 <= decay <= 1 else 1.0
        return cls(drafter, number("k", 0, int), number("delta", 0.0), lam, bound, adaptive, decay)

    # ------------------------------------------------------------------ what it is
    @property
    def relaxation(self) -> Optional[Relaxation]:
        """The relaxation the verifier runs; None without a drafter (nothing is verified)."""
        if self.drafter == "none":
            return None
        return Relaxation(self.k, self.delta, self.lam, self.bound, self.adaptive, self.decay)

    @property
    def relaxed(self) -> bool:
        """True when the output may differ from the model's distribution: ``Relaxation.active``'s rule."""
        r = self.relaxation
        return r is not None and r.active

    @property
    def exact(self) -> bool:
        return not self.relaxed

    @property
    def kind(self) -> str:
        """The bound's rule that runs ("lantern", "lantern++", "step": ``relaxation.kind_of``)."""
        return kind_of(self.bound, self.lam)

    @property
    def family(self) -> str:
        """One of :data:`FAMILIES`."""
        if self.drafter == "none":
            return VANILLA
        if not self.relaxed:
            return EXACT
        return {"lantern": LANTERN, "lantern++": LANTERN_PP, "step": STEP}[self.kind]

    @property
    def label(self) -> str:
        """The name a person reads (the chart's key, the Compare, the PNG's Sampler all start with it)."""
        return self.family

    @property
    def chart_group(self) -> str:
        """The trade-off chart's group (a point's marker shape): the family."""
        return self.family

    @property
    def guarantee(self) -> str:
        return GUARANTEES[self.family]

    @property
    def bench_family(self) -> str:
        """The bench's and the batch report's family name: vanilla, exact, lantern, lantern++ or step."""
        return BENCH_FAMILIES[self.family]

    # ------------------------------------------------------------------ the PNG's parameters
    @property
    def budget_text(self) -> Optional[str]:
        """λ, or δ as it is spent ("δ=0.2", "δ=0.2·H(p)/log V", "δ=0.2·0.8^i", "δ=0.2 per step");
        None for an exact run (nothing is spent)."""
        if not self.relaxed:
            return None
        if self.kind == "lantern++":
            return f"λ={self.lam}"
        text = f"δ={self.delta}"
        if self.adaptive:
            text += "·H(p)/log V"
        if self.decay != 1:
            text += f"·{self.decay:g}^i"
        if self.kind == "step":
            text += " per step"
        return text

    @property
    def sampler(self) -> str:
        """The PNG's A1111 "Sampler" field: "vanilla AR", "exact speculative (eagle)",
        "LANTERN (eagle, k=64, δ=0.2)", "step bound (jacobi, k=64, δ=0.2 per step)"…"""
        if self.family == VANILLA:
            return "vanilla AR"
        if self.family == EXACT:
            return f"{EXACT} ({self.drafter})"
        return f"{self.label} ({self.drafter}, k={self.k}, {self.budget_text})"

    @property
    def bound_field(self) -> Optional[str]:
        """The PNG's A1111 "Bound" field: lantern, lantern++ or step; None for an exact run."""
        return BOUND_FIELDS.get(self.family)

    # ------------------------------------------------------------------ the bench's name
    def bench_name(self, window: Optional[int] = None, coupling: bool = True) -> str:
        """The bench's method name: vanilla, exact-eagle, exact-jacobi-L12, exact-heads-K4, exact-sjd,
        lantern-eagle-k64-d0.2, lantern-jacobi-k64-d0.4-g0.5-L12, lantern-sjd-k64-d0.2,
        lantern-heads-k64-d0.2-K4, lantern++-eagle-k64-l2, step-jacobi-k64-d0.2(-ad). ``window``: the
        draft length when it is not the model's default (heads: the drafts a round, ``-K``)."""
        family = self.family
        if family == VANILLA:
            return "vanilla"
        tag = self.drafter if coupling else "sjd"
        size = "" if window is None else (f"-K{window}" if self.drafter == "heads" else f"-L{window}")
        if family == EXACT:
            return "exact-sjd" if not coupling and window is None else f"exact-{tag}{size}"
        if family == LANTERN_PP:
            return f"lantern++-{tag}-k{self.k}-l{_num(self.lam)}{size}"
        if family == STEP:
            return f"step-{tag}-k{self.k}-d{_num(self.delta)}{'-ad' if self.adaptive else ''}{size}"
        tighten = "" if self.decay == 1 else f"-g{_num(self.decay)}"
        return f"lantern-{tag}-k{self.k}-d{_num(self.delta)}{tighten}{size}"

