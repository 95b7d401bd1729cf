"""The decoding methods the bench compares: one :class:`Method` per configuration,
the default grid (:func:`method_grid`) and ``--methods`` selection."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, replace
from typing import Optional, Sequence

from ...engine.decode_method import DecodeMethod
from .schema import BenchError


# The default grid (docs/bench.md, "Methods"; the LANTERN paper sweeps k and δ the same way).
LANTERN_KS = (16, 64, 256)
LANTERN_DELTAS = (0.05, 0.1, 0.2, 0.4)
PLUS_K = 64
PLUS_LAMS = (2.0, 4.0)
JACOBI_RELAXED = ((64, 0.2), (64, 0.4), (256, 0.2), (256, 0.4))  # (k, δ) on Jacobi drafts; --quick: the first
# Coupled (MC-SJD) Jacobi windows converge, so longer windows pay: (k, δ, draft length); δ = 0 is exact.
JACOBI_LONG = ((0, 0.0, 24), (64, 0.2, 16), (64, 0.2, 24), (256, 0.4, 16), (256, 0.4, 24))
# Shorter windows: a verify's cost grows with its width (the bench's width-cost curve), so the window that
# pays depends on the machine and the model (k, δ, draft length); exact at the same windows.
JACOBI_SHORT = ((0, 0.0, 8), (0, 0.0, 12), (64, 0.2, 8), (64, 0.2, 12))
# δ tightening along the draft (k, δ at the first draft, decay, window): a larger first δ spent where
# drafts are best, less further out.
JACOBI_DECAY = ((64, 0.4, 0.7, 12), (64, 0.4, 0.5, 12), (256, 0.6, 0.5, 12))
STEP_RELAXED = JACOBI_RELAXED  # the step bound at LANTERN's Jacobi points (equal δ), ...
STEP_ADAPTIVE = ((256, 0.4),)  # ... and with entropy-adaptive δ
QUICK_LANTERN = ((64, 0.1), (256, 0.4))
# Parallel draft heads (engine/draft_heads.py), where the model has them: (k, δ, K drafts a round); δ = 0 is
# exact. K past the heads the model ships is clamped to them (HeadsDrafter.max_draft).
HEADS_POINTS = ((0, 0.0, 4), (64, 0.2, 4), (256, 0.4, 4), (0, 0.0, 6), (64, 0.2, 6))


def _fmt_num(x: float) -> str:
    return f"{x:g}"


@dataclass(frozen=True)
class Method:
    """One decoding configuration; sampling settings come from the model."""

    name: str
    family: str  # vanilla | exact | lantern | lantern++ | jacobi-relaxed | step
    # (names: exact-heads-K4, lantern-heads-k64-d0.2-K4 for parallel draft heads drafting K a round)
    drafter: str = "none"
    k: int = 0
    delta: float = 0.0
    lam: Optional[float] = None
    precision: Optional[str] = None  # None: the precision the bench runs speculative methods in
    coupling: bool = True  # Jacobi drafts coupled across iterations (MC-SJD); False: plain SJD
    draft_length: Optional[int] = None  # None: the model's default
    bound: str = "lantern"  # GenerationSettings.bound
    adaptive: bool = False  # entropy-adaptive δ
    measure_tv: bool = False  # measure each step's TV from the target (bench --measure-tv)
    decay: float = 1.0  # δ tightening along the draft (GenerationSettings.delta_decay)
    compiled: bool = False  # decode steps run as compiled fixed-shape graphs (engine/compiled.py)

    @property
    def method(self) -> DecodeMethod:
        """What this configuration is called and guarantees (engine/decode_method.py)."""
        return DecodeMethod(self.drafter, self.k, self.delta, self.lam, self.bound, self.adaptive, self.decay)

    @property
    def label(self) -> str:
        return self._label() + (" [compiled]" if self.compiled else "")

    def _label(self) -> str:
        if self.family == "vanilla":
            return "vanilla AR" + (f" ({self.precision})" if self.precision else "")
        window = "" if self.draft_length is None else f", window {self.draft_length}"
        if self.method.exact:
            return f"exact speculative ({self.drafter}{'' if self.coupling else ', uncoupled SJD'}{window})"
        if self.lam is not None:
            return f"LANTERN++ {self.drafter} k={self.k} λ={_fmt_num(self.lam)}"
        decay = "" if self.decay == 1.0 else f"·{_fmt_num(self.decay)}^i"
        if self.bound == "step":
            ad = " adaptive" if self.adaptive else ""
            return f"step-bounded {self.drafter} k={self.k} δ={_fmt_num(self.delta)}{decay}{ad}{window}"
        what = "Jacobi + relaxation" if self.family == "jacobi-relaxed" else f"LANTERN {self.drafter}"
        if not self.coupling:
            what += " (uncoupled SJD)"
        return f"{what} k={self.k} δ={_fmt_num(self.delta)}{decay}{window}"

    def key(self) -> tuple:
        """What the engine sees (two names with the same key are the same run)."""
        return (self.drafter, self.k, self.delta, self.lam, self.precision, self.coupling, self.draft_length,
                self.bound, self.adaptive, self.decay, self.compiled)

    def settings(self, base, seed: int):
        s = base.with_(seed=int(seed), drafter=self.drafter, k=self.k, delta=self.delta, lam=self.lam,
                       coupling=self.coupling, bound=self.bound, adaptive_delta=self.adaptive,
                       measure_tv=self.measure_tv, delta_decay=self.decay)
        return s if self.draft_length is None else s.with_(draft_length=self.draft_length)


def _named(method: DecodeMethod, family: Optional[str] = None, coupling: bool = True,
           draft_length: Optional[int] = None) -> Method:
    """The bench's Method of ``method``: its name and family are the DecodeMethod's (a relaxed Jacobi
    method may be put in the bench's own "jacobi-relaxed" colour with ``family``)."""
    own = method.bench_family
    return Method(method.bench_name(draft_length, coupling), family if own == "lantern" and family else own,
                  method.drafter, method.k, method.delta, method.lam, coupling=coupling, draft_length=draft_length,
                  bound=method.bound, adaptive=method.adaptive, decay=method.decay)


def _exact(drafter: str, draft_length: Optional[int] = None, coupling: bool = True) -> Method:
    return _named(DecodeMethod(drafter), coupling=coupling, draft_length=draft_length)


def _lantern(drafter: str, k: int, delta: float, family: str = "lantern", coupling: bool = True,
             draft_length: Optional[int] = None, decay: float = 1.0) -> Method:
    """LANTERN at (k, δ); δ = 0 (or k = 0) is exact speculative sampling and is named so."""
    method = DecodeMethod(drafter, int(k), float(delta), decay=float(decay))
    return _named(method, family, coupling, draft_length)


def heads_method(k: int, delta: float, drafts: int) -> Method:
    """Parallel draft heads drafting ``drafts`` tokens a round: ``exact-heads-K4`` at δ = 0,
    ``lantern-heads-k64-d0.2-K4`` relaxed."""
    return _lantern("heads", k, delta, draft_length=drafts)


def _step(drafter: str, k: int, delta: float, adaptive: bool = False) -> Method:
    return _named(DecodeMethod(drafter, int(k), float(delta), bound="step", adaptive=adaptive))


def _plus(drafter: str, k: int, lam: float) -> Method:
    return _named(DecodeMethod(drafter, int(k), 0.0, float(lam)))  # bound "lantern" with a λ: LANTERN++


def vanilla_methods(precisions: Sequence[str] = ("fp32",)) -> list[Method]:
    """One vanilla row per precision ("vanilla-fp32", "vanilla-bf16")."""
    return [Method(f"{DecodeMethod().bench_name()}-{p}", "vanilla", precision=p) for p in precisions]


def method_grid(drafters: Sequence[str], vocab_size: int, quick: bool = False,
                ks: Sequence[int] = LANTERN_KS, deltas: Sequence[float] = LANTERN_DELTAS,
                lams: Sequence[float] = PLUS_LAMS, vanilla_precisions: Sequence[str] = ("fp32",)) -> list[Method]:
    """The methods to compare, vanilla first (one per precision). k is clipped to
    V − 1; settings that end up identical after clipping are kept once (the first name)."""
    kmax = max(0, int(vocab_size) - 1)

    def clip(k: int) -> int:
        return min(int(k), kmax)

    relaxed = "eagle" if "eagle" in drafters else "jacobi"
    out = vanilla_methods(vanilla_precisions)
    out += [_exact(d) for d in ("eagle", "jacobi") if d in drafters]
    if quick:
        out += [_lantern(relaxed, clip(k), d) for k, d in QUICK_LANTERN]
    else:
        out += [_lantern(relaxed, clip(k), d) for k in ks for d in deltas]
        out += [_plus(relaxed, clip(PLUS_K), lam) for lam in lams]
    out += [_lantern("jacobi", clip(k), d, family="jacobi-relaxed") for k, d in JACOBI_RELAXED[: 1 if quick else None]]
    if "heads" in drafters:
        out += [heads_method(clip(k), d, n) for k, d, n in HEADS_POINTS[: 2 if quick else None]]
    if not quick:  # the uncoupled SJD baseline MC-SJD's coupling is measured against; long coupled windows
        out += [_lantern("jacobi", clip(k), d, family="jacobi-relaxed", draft_length=n) for k, d, n in JACOBI_LONG]
        out += [_lantern("jacobi", clip(k), d, family="jacobi-relaxed", draft_length=n) for k, d, n in JACOBI_SHORT]
        out += [_lantern("jacobi", clip(k), d, family="jacobi-relaxed", draft_length=n, decay=g)
                for k, d, g, n in JACOBI_DECAY]
        out += [_exact("jacobi", coupling=False)]
        out += [_lantern("jacobi", clip(k), d, family="jacobi-relaxed", coupling=False) for k, d in JACOBI_RELAXED[:1]]
        out += [_step("jacobi", clip(k), d) for k, d in STEP_RELAXED]
        out += [_step("jacobi", clip(k), d, adaptive=True) for k, d in STEP_ADAPTIVE]
    seen, unique = set(), []
    for m in out:
        if m.key() not in seen:
            seen.add(m.key())
            unique.append(m)
    return unique


COMPILED_SUFFIX = "-compiled"


def with_compiled_twins(methods: Sequence[Method]) -> list[Method]:
    """Each method followed by its compiled twin (``NAME-compiled``): the same decode with compiled
    steps, so one run times both paths on the same prompts and seeds (bench --compile)."""
    out = []
    for m in methods:
        out.append(m)
        if not m.compiled:
            out.append(replace(m, name=m.name + COMPILED_SUFFIX, compiled=True))
    return out


_NAMED = re.compile(r"^(?:(?P<exact>exact)-(?P<edrafter>jacobi|eagle)|lantern-(?P<drafter>jacobi|eagle)"
                    r"-k(?P<k>\d+)-d(?P<delta>\d+(?:\.\d+)?))(?:-L(?P<window>\d+))?$")


def parse_method(name: str) -> Optional[Method]:
    """A method named outside the grid: ``lantern-jacobi-k64-d0.3-L12`` (any k, δ in [0, 1], window) or
    ``exact-jacobi-L16``; None for any other name (a δ ladder need not be in the grid)."""
    m = _NAMED.match(name)
    if m is None:
        return None
    window = int(m["window"]) if m["window"] else None
    if window is not None and not 1 <= window <= 64:
        return None
    if m["exact"]:
        return replace(_exact(m["edrafter"], draft_length=window), name=name)
    delta = float(m["delta"])
    if not 0 <= delta <= 1:
        return None
    family = "jacobi-relaxed" if m["drafter"] == "jacobi" else "lantern"
    # the name as asked (the selection matches it); the family is what it is: δ = 0 or k = 0 is exact
    return replace(_lantern(m["drafter"], int(m["k"]), delta, family=family, draft_length=window), name=name)


def select_methods(methods: Sequence[Method], patterns: Optional[Sequence[str]]) -> list[Method]:
    """Keep the methods whose name or family matches one of the glob ``patterns``
    (commas also separate patterns). Vanilla, the reference, is always kept."""
    if not patterns:
        return list(methods)
    pats = [p.strip() for item in patterns for p in str(item).split(",") if p.strip()]
    methods = list(methods)
    drafters = {m.drafter for m in methods if m.family != "vanilla"}
    for p in pats:
        if not any(fnmatch.fnmatchcase(m.name, p) or fnmatch.fnmatchcase(m.family, p) for m in methods):
            named = parse_method(p)
            if named is None or named.drafter not in drafters:
                raise BenchError(f"--methods: {p!r} matches none of: {', '.join(m.name for m in methods)} "
                                 "(nor is it a name like lantern-jacobi-k64-d0.3-L12 or exact-jacobi-L12)")
            methods.append(named)
    keep = [m for m in methods
            if m.family == "vanilla" or any(fnmatch.fnmatchcase(m.name, p) or fnmatch.fnmatchcase(m.family, p) for p in pats)]
    return keep
