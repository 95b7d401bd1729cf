"""A model's measured LANTERN profile: where, on this model, the k and δ sliders start to break pictures.

How much LANTERN's relaxation costs is a property of the model, not of the rule: a nearly one-hot
model changes nothing until δ reaches the mode's mass and then breaks, an ambiguous one gives a
curve. ``lantern-studio bench … --write-profile`` measures the ladders (eval/bench/ladder.py) and
keeps them in the model folder as ``lantern_profile.json``; the studio reads it here and says, on
the sliders, what each rung did on this model and from where the pictures break.

A rung's quality is the mean prompt fidelity over the pictures it was measured on with the 95 % interval of
that mean (``fidelity``, ``fidelity_interval`` [low, high] as the bench's rows keep it, over ``fidelity_n``
pictures, else the rung's ``images``, else the profile's: ``fidelity.mean_interval``; vanilla's as
``vanilla_fidelity``, ``vanilla_fidelity_interval`` and ``vanilla_fidelity_n``), and the sliders say it so
("prompt fidelity 62% (48–76%, 32 seeds)"): one number without its spread read as a difference where 32
pictures cannot tell one. Profiles written before the interval was kept have ``fidelity`` alone (the share of
pictures whose judge's top 5 held what was asked): they still read, their figures said as before
("recognised 66%") with no interval. The bench writes the fields with :func:`fidelity_fields`.

A profile is advice, never needed: a missing file is no profile, a damaged or hostile one is
ignored with one line naming what was wrong, and the model still loads.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from .. import fidelity as fid
from ..engine.files import atomic_write  # the one atomic writer

PROFILE_FILE = "lantern_profile.json"
PROFILE_SCHEMA = "lantern-studio-profile/1"
MAX_BYTES = 64 * 1024
MAX_RUNGS = 32
KNOBS = ("delta", "k")
SAMPLING_KEYS = ("temperature", "top_k", "top_p")


class ProfileError(ValueError):
    """A lantern_profile.json that cannot be used: the message names what was wrong."""


def fidelity_fields(iv: Optional[fid.Interval], key: str = "fidelity") -> dict:
    """What a profile keeps of a mean fidelity (``key``: "fidelity" for a rung, "vanilla_fidelity" for a ladder's
    vanilla): the mean under ``key``, its 95 % interval as ``key``_interval [low, high] (as the bench's rows keep
    it) and the pictures it is over as ``key``_n; the mean alone (null) without one."""
    if iv is None:
        return {key: None}
    return {key: iv.mean, f"{key}_interval": [iv.low, iv.high], f"{key}_n": iv.n}


def quality_text(mean: Optional[float], iv: Optional[fid.Interval]) -> str:
    """A measured fidelity in words: "prompt fidelity 62% (48–76%, 32 seeds)" with its interval, "recognised
    66%" from a profile written before intervals were kept (its judge's top-5 share), "" when unmeasured."""
    if iv is not None:
        return f"{fid.NAME} {fid.format_interval(iv, 'picture')}"
    return "" if mean is None else f"recognised {mean:.0%}"


@dataclass(frozen=True)
class Rung:
    value: float  # δ or k (0 = exact decoding)
    tokens_per_forward: Optional[float]
    relaxed_share: Optional[float]
    fidelity: Optional[float]  # the mean over the pictures measured (an old profile: the judge's top-5 share)
    fidelity_change: Optional[float]  # against vanilla, as a fraction (−0.1 = 10 points worse)
    interval: Optional[fid.Interval] = None  # the mean's 95 % interval; None in a profile written before it

    @property
    def quality(self) -> str:
        return quality_text(self.fidelity, self.interval)


@dataclass(frozen=True)
class Ladder:
    knob: str  # "delta" or "k"
    fixed: float  # the other knob's value
    rungs: tuple
    breaks_at: Optional[float]
    break_drop: float
    vanilla_fidelity: Optional[float]
    vanilla_interval: Optional[fid.Interval] = None

    @property
    def vanilla_quality(self) -> str:
        """Vanilla's measured fidelity in words (quality_text), without its name when it has an interval."""
        if self.vanilla_interval is not None:
            return fid.format_interval(self.vanilla_interval, "picture")
        return "" if self.vanilla_fidelity is None else f"{self.vanilla_fidelity:.0%}"

    @property
    def intervals(self) -> bool:
        """Whether its fidelities come with their intervals (a profile written since they are kept)."""
        return any(r.interval is not None for r in self.rungs)

    @property
    def symbol(self) -> str:
        return "δ" if self.knob == "delta" else "k"

    @property
    def fixed_text(self) -> str:
        """The other knob at its measured value, as the texts name it ("k 64", "δ 0.2")."""
        return f"k {self.fixed:g}" if self.knob == "delta" else f"δ {self.fixed:g}"


@dataclass(frozen=True)
class LanternProfile:
    measured: str
    machine: str
    sampling: dict
    images: Optional[int]
    ladders: dict  # knob → Ladder

    def breaks_at(self, knob: str) -> Optional[float]:
        lad = self.ladders.get(knob)
        return lad.breaks_at if lad else None

    def flat(self, knob: str, share: float = 0.05) -> bool:
        """Whether the knob does nothing on this model before pictures break: every relaxed rung measured below
        the break (at least two) accepted under ``share`` of its tokens by the relaxation (a nearly one-hot
        model, as v4.1 is: δ 0 … 0.9 relax 0–1 %)."""
        lad = self.ladders.get(knob)
        if lad is None:
            return False
        below = [r for r in lad.rungs if r.value > 0 and (lad.breaks_at is None or r.value < lad.breaks_at)
                 and r.relaxed_share is not None]
        return len(below) >= 2 and all(r.relaxed_share < share for r in below)

    def applies_to(self, settings) -> bool:
        """Whether ``settings`` (a GenerationSettings or anything with its sampling fields) sample as the
        profile was measured: another temperature or top-k/top-p moves every rung."""
        for key in SAMPLING_KEYS:
            want = self.sampling.get(key)
            if want is not None and not math.isclose(float(getattr(settings, key)), float(want), abs_tol=1e-9):
                return False
        return True

    def sampling_text(self) -> str:
        s = self.sampling
        parts = [f"T {s['temperature']:g}" if s.get("temperature") is not None else None,
                 f"top-k {int(s['top_k'])}" if s.get("top_k") else None,
                 f"top-p {s['top_p']:g}" if s.get("top_p") not in (None, 1, 1.0) else None]
        return " / ".join(p for p in parts if p) or "the model's sampling"

    def at(self, knob: str, value: float) -> str:
        """One sentence for the sliders' line: what the measured rung at or below ``value`` gave on this model,
        or, from where pictures break on, that they break there; "" without that ladder."""
        lad = self.ladders.get(knob)
        if lad is None:
            return ""
        sym, other = lad.symbol, lad.fixed_text
        if lad.breaks_at is not None and value >= lad.breaks_at:
            worst = next(r for r in lad.rungs if r.value == lad.breaks_at)
            seen = "" if worst.fidelity is None else f": {worst.quality}"
            return (f"⚠ On this model pictures break from {sym} {lad.breaks_at:g} "
                    f"(measured at {other}{seen}" + (f" against vanilla's {lad.vanilla_quality}"
                                                     if lad.vanilla_quality else "") + ").")
        below = [r for r in lad.rungs if r.value <= value]
        if not below:
            return ""
        r = below[-1]
        parts = [f"{r.tokens_per_forward:.2f} tokens/forward" if r.tokens_per_forward is not None else None,
                 f"{r.relaxed_share:.0%} relaxed" if r.relaxed_share else None,
                 r.quality or None]
        tail = (f"; pictures break from {sym} {lad.breaks_at:g}" if lad.breaks_at is not None
                else "; no measured rung broke the pictures")
        return f"Measured on this model at {sym} {r.value:g} ({other}): " + ", ".join(p for p in parts if p) + tail + "."

    def describe(self, knob: str, settings=None) -> str:
        """A tooltip paragraph: each rung of ``knob``'s ladder on this model and where pictures break;
        "" without that ladder."""
        lad = self.ladders.get(knob)
        if lad is None:
            return ""
        sym, other = lad.symbol, lad.fixed_text
        what = ("prompt fidelity: the meter's mean probability over the pictures, with its 95 % interval"
                if lad.intervals else "recognised: the judge's top 5 holds what was asked")
        lines = [f"On this model (measured {self.measured}, {other}, {self.sampling_text()}"
                 + (f", {self.images} images" if self.images else "") + f"; {what}):"]
        for r in lad.rungs:
            tpf = "—" if r.tokens_per_forward is None else f"{r.tokens_per_forward:.2f}"
            rel = "" if not r.relaxed_share else f", {r.relaxed_share:.0%} relaxed"
            lines.append(f"  {sym} {r.value:g}: {tpf} tokens/forward{rel}, " + (r.quality or ("recognised —" if not lad.intervals else f"{fid.NAME} —")))
        if lad.breaks_at is not None:
            measure = "its mean fidelity" if lad.intervals else "recognised"
            lines.append(f"Pictures break from {sym} {lad.breaks_at:g} ({measure} {lad.break_drop:.0%} or more "
                         f"below vanilla's {lad.vanilla_quality})." if lad.vanilla_fidelity is not None
                         else f"Pictures break from {sym} {lad.breaks_at:g}.")
        else:
            lines.append(f"No rung measured broke the pictures ({lad.break_drop:.0%} below vanilla).")
        if settings is not None and not self.applies_to(settings):
            lines.append("(Measured at other sampling settings than yours: the figures may not hold.)")
        return "\n".join(lines)


def _num(x, where: str, lo: float = -math.inf, hi: float = math.inf, none: bool = True) -> Optional[float]:
    if x is None and none:
        return None
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or not lo <= x <= hi:
        raise ProfileError(f"{where} must be a number in [{lo:g}, {hi:g}], got {x!r:.40}")
    return float(x)


def _text(x, where: str, limit: int = 200) -> str:
    if not isinstance(x, str) or len(x) > limit:
        raise ProfileError(f"{where} must be text of at most {limit} characters")
    return x


def _interval(d: dict, key: str, where: str, images: Optional[int]) -> Optional[fid.Interval]:
    """The 95 % interval kept beside ``d[key]`` (``key``_interval: [low, high], over ``key``_n pictures, else the
    rung's ``images``, else the profile's), or None where the profile has none (one written before intervals were
    kept); a malformed or inconsistent one is a ProfileError."""
    pair = d.get(f"{key}_interval")
    if pair is None:
        return None
    if not isinstance(pair, list) or len(pair) != 2:
        raise ProfileError(f"{where}.{key}_interval must be [low, high]")
    mean = _num(d.get(key), f"{where}.{key}", 0, 1, none=False)
    low = _num(pair[0], f"{where}.{key}_interval[0]", 0, 1, none=False)
    high = _num(pair[1], f"{where}.{key}_interval[1]", 0, 1, none=False)
    n = next((v for v in (d.get(f"{key}_n"), d.get("images") if key == "fidelity" else None, images)
              if v is not None), None)
    if isinstance(n, bool) or not isinstance(n, int) or not 0 < n < 10**6:
        raise ProfileError(f"{where}.{key}_n must be a positive whole number (the pictures its interval is over)")
    if not low <= mean <= high:
        raise ProfileError(f"{where}: {key}_interval must hold {key} (low <= {key} <= high)")
    return fid.Interval(mean, low, high, n)


def _ladder(knob: str, d, images: Optional[int] = None) -> Ladder:
    where = f"ladders.{knob}"
    if not isinstance(d, dict):
        raise ProfileError(f"{where} must be an object")
    hi = 1.0 if knob == "delta" else 1e6
    fixed = d.get("fixed")
    other = "k" if knob == "delta" else "delta"
    if not isinstance(fixed, dict) or other not in fixed:
        raise ProfileError(f"{where}.fixed must name {other}")
    rows = d.get("rungs")
    if not isinstance(rows, list) or not 1 <= len(rows) <= MAX_RUNGS:
        raise ProfileError(f"{where}.rungs must be a list of 1 to {MAX_RUNGS} rungs")
    rungs = []
    for i, r in enumerate(rows):
        if not isinstance(r, dict):
            raise ProfileError(f"{where}.rungs[{i}] must be an object")
        w = f"{where}.rungs[{i}]"
        rungs.append(Rung(_num(r.get(knob), f"{w}.{knob}", 0, hi, none=False),
                          _num(r.get("tokens_per_forward"), f"{w}.tokens_per_forward", 0, 1e6),
                          _num(r.get("relaxed_share"), f"{w}.relaxed_share", 0, 1),
                          _num(r.get("fidelity"), f"{w}.fidelity", 0, 1),
                          _num(r.get("fidelity_change"), f"{w}.fidelity_change", -1, 1),
                          _interval(r, "fidelity", w, images)))
    values = [r.value for r in rungs]
    if values != sorted(set(values)):
        raise ProfileError(f"{where}.rungs must rise in {knob}, each value once")
    breaks = _num(d.get("breaks_at"), f"{where}.breaks_at", 0, hi)
    if breaks is not None and breaks not in values:
        raise ProfileError(f"{where}.breaks_at must be one of its rungs")
    return Ladder(knob, _num(fixed[other], f"{where}.fixed.{other}", 0, 1.0 if other == "delta" else 1e6, none=False),
                  tuple(rungs), breaks, _num(d.get("break_drop", 0.1), f"{where}.break_drop", 0, 1, none=False),
                  _num(d.get("vanilla_fidelity"), f"{where}.vanilla_fidelity", 0, 1),
                  _interval(d, "vanilla_fidelity", where, images))


def parse_profile(data) -> LanternProfile:
    """A profile from its JSON object; ProfileError names the first thing wrong."""
    if not isinstance(data, dict):
        raise ProfileError("must be a JSON object")
    if data.get("schema") != PROFILE_SCHEMA:
        raise ProfileError(f"schema must be {PROFILE_SCHEMA!r}, got {str(data.get('schema'))[:40]!r}")
    ladders = data.get("ladders")
    if not isinstance(ladders, dict) or not ladders or set(ladders) - set(KNOBS):
        raise ProfileError(f"ladders must hold 'delta' and/or 'k' and nothing else")
    sampling = data.get("sampling")
    if not isinstance(sampling, dict):
        raise ProfileError("sampling must be an object")
    samp = {key: _num(sampling.get(key), f"sampling.{key}", 0, 1e6) for key in SAMPLING_KEYS}
    images = data.get("images")
    if images is not None and (isinstance(images, bool) or not isinstance(images, int) or not 0 < images < 10**6):
        raise ProfileError("images must be a positive whole number")
    return LanternProfile(_text(data.get("measured", ""), "measured", 40), _text(data.get("machine", ""), "machine"),
                          samp, images, {k: _ladder(k, ladders[k], images) for k in KNOBS if k in ladders})


def read_profile(folder) -> tuple:
    """(profile, None), (None, None) when the folder has none, or (None, "one line") when it is damaged."""
    if folder is None:
        return None, None
    path = Path(folder) / PROFILE_FILE
    try:
        if not path.is_file():
            return None, None
        if path.stat().st_size > MAX_BYTES:
            raise ProfileError(f"larger than {MAX_BYTES // 1024} KB")
        data = json.loads(path.read_text(encoding="utf-8"))
        return parse_profile(data), None
    except ProfileError as e:
        return None, f"{PROFILE_FILE}: {e}; the sliders' measured notes are left out"
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as e:
        return None, f"{PROFILE_FILE}: unreadable ({type(e).__name__}); the sliders' measured notes are left out"


def write_profile(folder, data: dict) -> Path:
    """Write ``data`` (checked first: what is written can be read back) as the folder's profile, atomically."""
    parse_profile(data)
    path = Path(folder) / PROFILE_FILE
    text = json.dumps(data, indent=2, sort_keys=True) + "\n"
    return atomic_write(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
