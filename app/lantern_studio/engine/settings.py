"""Every knob of one generation, validated in one place."""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass, fields, replace
from typing import Optional

from .relaxation import BOUNDS, Relaxation, combination_problem, kind_of
from .sampling import SamplingParams

DRAFTERS = ("none", "jacobi", "eagle", "heads")
# Ranges past which sampling is numerically meaningless (logits overflow to inf,
# or the nucleus is below float resolution); every setting is checked here only.
MAX_CFG = 100.0
MIN_TEMPERATURE, MAX_TEMPERATURE = 1e-3, 100.0
MIN_TOP_P = 1e-6
MAX_LAM = 1e6
MAX_STYLE_CHARS = 64


class SettingsError(ValueError):
    """A bad setting; ``field`` names it and the message gives the allowed range."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field


@dataclass(frozen=True)
class GenerationSettings:
    seed: int = 0
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    cfg_scale: float = 1.0
    greedy: bool = False
    drafter: str = "none"  # none | jacobi | eagle | heads (draft_length past what a drafter drafts is clamped)
    draft_length: int = 8
    k: int = 0  # LANTERN neighbour count
    delta: float = 0.0  # LANTERN total-variation bound
    lam: Optional[float] = None  # LANTERN++ multiplicative bound; None → δ mode
    coupling: bool = True  # Jacobi drafts coupled across iterations (MC-SJD); False: resampled independently (SJD)
    # Which relaxation: "lantern" (δ bounds each token), "lantern++" (λ), "step" (δ bounds each step's output
    # in TV, sampled drafts too); what runs and which combinations are refused: engine/relaxation.py
    bound: str = "lantern"
    adaptive_delta: bool = False  # δ_t = δ · H(p_t) / log V per slot (bound "lantern" or "step")
    # δ tightens along each draft chain: the chain's i-th slot (0 = the first draft) gets δ · delta_decay^i,
    # so one verification moves at most δ / (1 − delta_decay) in all; 1 = the same δ at every slot
    delta_decay: float = 1.0
    measure_tv: bool = False  # diagnostics: exact TV of each step's output from the target (costs time; no RNG)
    # The art style a factorised class model draws in: "" its default, "any" one per seed, or a style's
    # name (the model's conditioner checks the name; other models ignore it)
    style: str = ""

    def validate(self, vocab_size: Optional[int] = None) -> "GenerationSettings":
        """These settings with plain Python values, or SettingsError naming the first bad field."""

        def show(value) -> str:
            text = repr(value)
            return text if len(text) <= 40 else text[:37] + "..."

        def number(name, value):
            ok = not isinstance(value, bool) and isinstance(value, (int, float, numbers.Real))
            try:
                ok = ok and math.isfinite(float(value))
            except (OverflowError, ValueError, TypeError):  # 10**400 is an int no float can hold
                ok = False
            if not ok:
                raise SettingsError(name, f"must be a finite number, got {show(value)}")

        def integer(name, value):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise SettingsError(name, f"must be an integer, got {show(value)}")

        integer("seed", self.seed)
        if not (-(2**63) <= int(self.seed) < 2**63):
            raise SettingsError("seed", "must fit in 64 bits")
        number("temperature", self.temperature)
        if not self.greedy and not (MIN_TEMPERATURE <= self.temperature <= MAX_TEMPERATURE):
            raise SettingsError("temperature", f"must be in [{MIN_TEMPERATURE:g}, {MAX_TEMPERATURE:g}] unless greedy, "
                                f"got {show(self.temperature)}")
        if self.greedy and not (0 <= self.temperature <= MAX_TEMPERATURE):
            raise SettingsError("temperature", f"must be in [0, {MAX_TEMPERATURE:g}], got {show(self.temperature)}")
        integer("top_k", self.top_k)
        vmax = vocab_size if vocab_size is not None else None
        if self.top_k < 0 or (vmax is not None and self.top_k > vmax):
            raise SettingsError("top_k", f"must be in [0, {vmax if vmax is not None else 'V'}] (0 = off), got {self.top_k}")
        number("top_p", self.top_p)
        if not (MIN_TOP_P <= self.top_p <= 1):
            raise SettingsError("top_p", f"must be in [{MIN_TOP_P:g}, 1], got {show(self.top_p)}")
        number("cfg_scale", self.cfg_scale)
        if not (0 <= self.cfg_scale <= MAX_CFG):
            raise SettingsError("cfg_scale", f"must be in [0, {MAX_CFG:g}], got {show(self.cfg_scale)}")
        if not isinstance(self.greedy, bool):
            raise SettingsError("greedy", f"must be true or false, got {self.greedy!r}")
        if not isinstance(self.coupling, bool):
            raise SettingsError("coupling", f"must be true or false, got {self.coupling!r}")
        if self.drafter not in DRAFTERS:
            raise SettingsError("drafter", f"must be one of {', '.join(DRAFTERS)}, got {self.drafter!r}")
        integer("draft_length", self.draft_length)
        if not (1 <= self.draft_length <= 64):
            raise SettingsError("draft_length", f"must be in [1, 64], got {self.draft_length}")
        integer("k", self.k)
        kmax = vocab_size - 1 if vocab_size is not None else None
        if self.k < 0 or (kmax is not None and self.k > kmax):
            raise SettingsError("k", f"must be in [0, {kmax if kmax is not None else 'V-1'}], got {self.k}")
        number("delta", self.delta)
        if not (0 <= self.delta <= 1):
            raise SettingsError("delta", f"must be in [0, 1], got {self.delta}")
        number("delta_decay", self.delta_decay)
        if not (0 <= self.delta_decay <= 1):
            raise SettingsError("delta_decay", f"must be in [0, 1] (1 = the same δ at every draft), "
                                f"got {show(self.delta_decay)}")
        if self.lam is not None:
            number("lam", self.lam)
            if not (1 <= self.lam <= MAX_LAM):
                raise SettingsError("lam", f"must be in [1, {MAX_LAM:g}] (or unset for δ mode), got {show(self.lam)}")
        if not isinstance(self.bound, str):
            raise SettingsError("bound", f"must be one of {', '.join(BOUNDS)}, got {show(self.bound)}")
        for name in ("adaptive_delta", "measure_tv"):
            if not isinstance(getattr(self, name), bool):
                raise SettingsError(name, f"must be true or false, got {getattr(self, name)!r}")
        if not isinstance(self.style, str) or len(self.style) > MAX_STYLE_CHARS:
            raise SettingsError("style", f"must be a style name of at most {MAX_STYLE_CHARS} characters, "
                                f"got {show(self.style)}")
        problem = combination_problem(self.bound, self.lam, self.adaptive_delta, self.delta_decay)
        if problem is not None:  # the relaxation's own rules (engine/relaxation.py)
            raise SettingsError(*problem)
        # Plain Python numbers from here on (NumPy scalars are welcome as input).
        return replace(self, seed=int(self.seed), temperature=float(self.temperature), top_k=int(self.top_k),
                       top_p=float(self.top_p), cfg_scale=float(self.cfg_scale), draft_length=int(self.draft_length),
                       k=int(self.k), delta=float(self.delta), lam=None if self.lam is None else float(self.lam),
                       delta_decay=float(self.delta_decay))

    # ------------------------------------------------------------ views for the engine
    @property
    def sampling(self) -> SamplingParams:
        return SamplingParams(self.cfg_scale, self.temperature, self.top_k, self.top_p, self.greedy)

    @property
    def effective_bound(self) -> str:
        """The rule that runs (``relaxation.kind_of``)."""
        return kind_of(self.bound, self.lam)

    @property
    def relaxation(self) -> Relaxation:
        return Relaxation(self.k, self.delta, self.lam, self.bound, self.adaptive_delta, self.delta_decay)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "GenerationSettings":
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})

    def with_(self, **changes) -> "GenerationSettings":
        return replace(self, **changes)
