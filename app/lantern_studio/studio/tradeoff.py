"""The trade-off chart's points and axes: one point per finished run, from the run's generation record
(the record a finished job makes, or a history row's: after a restart the chart refills from the history).

The axes keep one meaning each, whatever runs arrive:
  x = tokens per target forward (the run's mean accepted length, the prefill's forward included): what
      drafting buys, known for every run the moment it ends, vanilla included (1 token a forward, about);
  y = prompt fidelity (%) when the model has a recogniser, else the measured tokens per second.
A point's marker says how the run decoded (DecodeMethod.chart_group: vanilla, exact speculative, LANTERN,
LANTERN++, step bound) and never
changes; the measured speed-up against the most recent vanilla run of the same prompt, seed and sampling
(a Compare makes one) is in its tooltip, not on an axis.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

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


def sampling_key(model: str, prompt: str, s) -> Tuple:
    return (model, prompt, s.seed, s.temperature, s.top_k, s.top_p, s.cfg_scale, s.greedy)


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
        lam=None if exact else settings.lam, label=label, prompt=prompt, settings=settings)


@dataclass(frozen=True)
class Placed:
    point: TradeoffPoint
    x: float
    y: float


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
        """The curve's vertices, at (tokens per forward, y) as the points are placed; rungs without a y
        value in these units are left out (as their points are)."""
        return [(p.tokens_per_forward, y) for p in self.curve for y in [self.y_of(p)] if y is not None]

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

    def placed(self) -> List[Placed]:
        """The points drawn, at (tokens per forward, y); a run without a y value in these units is left out."""
        out = []
        for p in self.points:
            y = self.y_of(p)
            if y is not None:
                out.append(Placed(p, p.tokens_per_forward, y))
        return out

    @property
    def hidden(self) -> int:
        """Runs not drawn: no fidelity for their prompt (y is the score) or no measured speed."""
        return len(self.points) - len(self.placed())

    @property
    def x_label(self) -> str:
        return X_LABEL

    @property
    def y_label(self) -> str:
        return Y_QUALITY_LABEL if self.quality else Y_SPEED_LABEL

    def tip(self, p: TradeoffPoint, describe: str) -> str:
        how = f"{p.tokens_per_forward:.2f} tokens/forward"
        if p.speedup is not None and not p.vanilla:
            how += f" · {p.speedup:.2f}× faster than its vanilla run"
        yq = (f"{fidelity.NAME} {fidelity.format_value(p.score)}" if self.quality
              else ("—" if p.tokens_per_second is None else f"{p.tokens_per_second:.1f} tokens/s"))
        return f"{p.label}\n{p.kind} · {describe}\n{how} · {yq}\nclick: load these settings"
