"""The trade-off chart's points and axes: one point per decoding setting, from the finished runs' generation
records (the record a finished job makes, or a history row's: after a restart the chart refills from the
history).

Runs that differ only in their seed (same model, prompt, drafter, k, δ, bound or λ, sampling: every setting
but the seed, :func:`group_key`) are one point: one picture's score says little of the setting's quality, so
a point stands at the mean over its seeds, with the 95 % interval of that mean (``fidelity.mean_interval``)
drawn as a vertical bar and said in its tooltip ("62% (48–76%, 4 seeds)"). A point of one seed has no
interval worth a bar (it is the whole 0–100 %): it is marked "1 seed" (drawn hollow by the chart).

The axes keep one meaning each, whatever runs arrive:
  x = tokens per target forward (the runs' mean accepted length, the prefill's forward included): what
      drafting buys, known for every run the moment it ends, vanilla included (1 token a forward, about);
  y = prompt fidelity (%) when the model has a recogniser, else the measured tokens per second (both the
      mean over the point's seeds).
A point's marker says how its runs decoded (DecodeMethod.chart_group: vanilla, exact speculative, LANTERN,
LANTERN++, step bound) and never changes; the measured speed-up against the most recent vanilla run of the
same prompt, seed and sampling (a Compare makes one) is in its tooltip, not on an axis.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple, Union

from .. import fidelity
from ..engine.decode_method import FAMILIES, DecodeMethod
from ..engine.settings import GenerationSettings

X_LABEL = "tokens per target forward"
X_HELP = ("x: tokens fixed per target forward (the mean accepted length, the prefill's forward included); "
          "vanilla decoding sits near 1")
Y_SPEED_LABEL = "tokens / s"  # short: the label runs along the plot's height, which is small while it warms up
Y_SPEED_HELP = "y: tokens per second, measured (this model has no recogniser for a quality score)"
Y_QUALITY_LABEL = f"{fidelity.NAME} ({fidelity.UNIT})"
KINDS = FAMILIES  # a point's group: DecodeMethod.chart_group
MAX_HISTORY_POINTS = 500  # a restart refills the chart with at most this many of the model's newest runs


#: settings that do not change what a run decodes: runs that differ only in these are one point
NOT_DECODING = ("seed", "measure_tv")


def sampling_key(model: str, prompt: str, s) -> Tuple:
    return (model, prompt, s.seed, s.temperature, s.top_k, s.top_p, s.cfg_scale, s.greedy)


def group_key(model: str, prompt: str, s: GenerationSettings) -> Tuple:
    """What makes runs one chart point: the model, the prompt and every decoding setting but the seed."""
    decoding = {k: v for k, v in s.to_dict().items() if k not in NOT_DECODING}
    return (model, prompt, json.dumps(decoding, sort_keys=True, default=str))


def _number(v) -> Optional[float]:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    v = float(v)
    return v if math.isfinite(v) else None


@dataclass
class TradeoffPoint:
    key: Tuple
    kind: str  # one of KINDS: the marker's shape
    wall: float
    tokens_per_forward: float
    tokens_per_second: Optional[float]
    score: Optional[float]
    delta: float
    lam: Optional[float]
    label: str
    prompt: str
    settings: GenerationSettings
    speedup: Optional[float] = None  # against the most recent vanilla run of the same key; None: none yet
    group: Tuple = ()  # group_key: the runs of one point (every decoding setting but the seed)

    @property
    def vanilla(self) -> bool:
        return self.kind == "vanilla"


def point_of(record: dict, label: str, settings: Optional[GenerationSettings] = None) -> Optional[TradeoffPoint]:
    """The point of one generation record (a finished job's or a history row's); None when the record
    lacks what the chart places a point by (a foreign or damaged record is simply not drawn)."""
    if not isinstance(record, dict):
        return None
    stats = record.get("stats")
    stats = stats if isinstance(stats, dict) else {}
    tpf, wall = _number(stats.get("mean_accepted_length")), _number(stats.get("wall_seconds"))
    if tpf is None or wall is None:
        return None
    if settings is None:
        try:
            settings = GenerationSettings.from_dict(record.get("settings"))
        except (TypeError, ValueError, AttributeError):
            return None
    method = DecodeMethod.of(settings)
    exact = method.exact
    prompt = str(record.get("prompt", ""))
    return TradeoffPoint(
        key=sampling_key(str(record.get("model", "")), prompt, settings), kind=method.chart_group, wall=wall,
        tokens_per_forward=tpf, tokens_per_second=_number(stats.get("tokens_per_second")),
        score=_number(fidelity.of_record(record)), delta=0.0 if exact else float(settings.delta),
        lam=None if exact else settings.lam, label=label, prompt=prompt, settings=settings,
        group=group_key(str(record.get("model", "")), prompt, settings))


def group_runs(points) -> List[List[TradeoffPoint]]:
    """``points`` (runs) as groups of one decoding setting (:func:`group_key`), in the order each group's first
    run came, its runs in the order they came."""
    groups: Dict[Tuple, List[TradeoffPoint]] = {}
    for p in points:
        groups.setdefault(p.group or (id(p),), []).append(p)
    return list(groups.values())


@dataclass(frozen=True)
class Placed:
    """One drawn point: the runs of one decoding setting at (mean tokens per forward, mean y)."""

    point: TradeoffPoint  # its latest run: a click loads its prompt and settings (its seed)
    x: float
    y: float
    runs: Tuple[TradeoffPoint, ...] = ()  # the runs it stands for (with a y value), oldest first
    interval: Optional[fidelity.Interval] = None  # the fidelity's mean and 95 % interval (y is the fidelity)

    @property
    def seeds(self) -> int:
        return len(self.runs) or 1

    @property
    def error(self) -> Optional[Tuple[float, float]]:
        """(below, above) y: the interval bar's extent in %, for a point of several seeds while y is the
        fidelity; None otherwise (one seed's interval is the whole range: no bar, it is marked "1 seed")."""
        iv = self.interval
        if iv is None or iv.n < 2:
            return None
        return self.y - fidelity.percent(iv.low), fidelity.percent(iv.high) - self.y


@dataclass
class Tradeoff:
    points: List[TradeoffPoint] = field(default_factory=list)
    quality: bool = False  # y is the fidelity score (the model has a recogniser)
    curve: List[TradeoffPoint] = field(default_factory=list)  # the latest Sweep's rungs, joined in this order

    def add(self, point: TradeoffPoint) -> None:
        self.points.append(point)
        self._link()

    def extend(self, points) -> None:
        self.points.extend(points)
        self._link()

    def clear(self) -> None:
        self.points.clear()
        self.curve = []

    def set_curve(self, points) -> None:
        """The latest Sweep's rungs (studio/sweep.py), in ladder order: drawn as one line."""
        self.curve = list(points)

    def curve_placed(self) -> List[Tuple[float, float]]:
        """The curve's vertices, one per rung (its seeds' runs as one point, at their mean, as the points are
        placed), in ladder order; rungs without a y value in these units are left out (as their points are)."""
        return [(g.x, g.y) for g in (self._place(runs) for runs in group_runs(self.curve)) if g is not None]

    def _link(self) -> None:
        """Each point's speed-up against the most recent vanilla run of its key (a later one replaces it)."""
        latest = {}
        for p in self.points:
            if p.vanilla:
                latest[p.key] = p
        for p in self.points:
            base = latest.get(p.key)
            p.speedup = base.wall / p.wall if base is not None and p.wall > 0 else None

    def y_of(self, p: TradeoffPoint) -> Optional[float]:
        if self.quality:
            return None if p.score is None else fidelity.percent(p.score)
        return p.tokens_per_second

    def _place(self, runs: List[TradeoffPoint]) -> Optional[Placed]:
        """The runs of one setting as one point: at the mean tokens per forward and the mean y of the runs with
        a y value in these units (None: none has one), each seed once (its latest run: the same seed again draws
        the same picture, which is no new evidence); the fidelity's interval while y is the fidelity."""
        latest = {p.settings.seed: p for p in runs if self.y_of(p) is not None}  # a seed run twice counts once
        have = [p for p in runs if latest.get(p.settings.seed) is p]
        if not have:
            return None
        x = statistics.fmean(p.tokens_per_forward for p in have)
        if self.quality:
            iv = fidelity.mean_interval(p.score for p in have)
            return Placed(have[-1], x, fidelity.percent(iv.mean), tuple(have), iv)
        return Placed(have[-1], x, statistics.fmean(self.y_of(p) for p in have), tuple(have))

    def placed(self) -> List[Placed]:
        """The points drawn: one per decoding setting, its seeds' runs at their mean (tokens per forward, y),
        in the order each setting first ran; a run without a y value in these units is left out."""
        return [g for g in (self._place(runs) for runs in group_runs(self.points)) if g is not None]

    @property
    def hidden(self) -> int:
        """Runs not drawn: no fidelity for their prompt (y is the score) or no measured speed."""
        return sum(self.y_of(p) is None for p in self.points)

    @property
    def x_label(self) -> str:
        return X_LABEL

    @property
    def y_label(self) -> str:
        return Y_QUALITY_LABEL if self.quality else Y_SPEED_LABEL

    def tip(self, placed: Union[Placed, TradeoffPoint], describe: str) -> str:
        """A point's tooltip: its latest run's label, how it decoded (``describe``: its settings in words),
        tokens per forward, the speed-up against vanilla where measured, and y over its seeds."""
        if isinstance(placed, TradeoffPoint):  # one run, as a point of its own
            placed = self._place([placed]) or Placed(placed, placed.tokens_per_forward, 0.0, (placed,))
        p, runs, n = placed.point, placed.runs or (placed.point,), placed.seeds
        how = f"{placed.x:.2f} tokens/forward"
        speedups = [r.speedup for r in runs if r.speedup is not None]
        if speedups and not p.vanilla:
            how += (f" · {speedups[0]:.2f}× faster than its vanilla run" if n == 1 else
                    f" · {statistics.median(speedups):.2f}× faster than their vanilla runs (median of "
                    f"{len(speedups)} of {n} seeds)")
        if self.quality:
            yq = f"{fidelity.NAME} {fidelity.format_interval(placed.interval)}"
            if n == 1 and placed.interval is not None:
                yq += ": one picture says little (its 95 % interval is the whole 0–100 %); more seeds of these " \
                      "settings join this point"
        else:
            yq = "—" if p.tokens_per_second is None and n == 1 else (
                f"{placed.y:.1f} tokens/s" + ("" if n == 1 else f" (mean of {n} seeds)"))
        head = p.label if n == 1 else f"{n} seeds · the latest: {p.label}"
        return f"{head}\n{p.kind} · {describe}\n{how} · {yq}\nclick: load these settings (the latest seed's)"
