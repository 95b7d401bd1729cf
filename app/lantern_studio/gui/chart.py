"""The trade-off chart: one point per finished run, coloured by δ.

x = measured speed-up against the most recent vanilla run (drafter none) of the
same prompt, seed and sampling settings when there is one (●), otherwise the
run's tokens per target forward (▲); points are re-placed when a baseline
arrives later. y = prompt fidelity in % (the studio's one quality measure,
:mod:`lantern_studio.fidelity`) when the model has a recogniser, else the mean
accepted length. Axes start at 0 with room above the largest value, so one
point or a few read sensibly. Hover a point for its settings; click it to load
its prompt and settings into the controls.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import pyqtgraph as pg
from PySide6.QtCore import QPointF, Signal
from PySide6.QtGui import QColor, QLinearGradient, QPainter, QPixmap
from PySide6.QtWidgets import QHBoxLayout, QLabel, QVBoxLayout, QWidget

from .. import fidelity
from .jobs import JobResult

CMAP = pg.colormap.get("viridis")
LAMBDA_COLOUR = QColor(230, 120, 200)


def sampling_key(model: str, prompt: str, s) -> Tuple:
    return (model, prompt, s.seed, s.temperature, s.top_k, s.top_p, s.cfg_scale, s.greedy)


def delta_colour(delta: float) -> QColor:
    """δ on a square-root scale (matching the slider): small values stay distinguishable."""
    return CMAP.map(math.sqrt(max(0.0, min(1.0, delta))), mode="qcolor")


@dataclass
class Point:
    key: Tuple
    vanilla: bool
    wall: float
    tokens_per_forward: float
    score: Optional[float]
    delta: float
    lam: Optional[float]
    label: str
    prompt: str = ""
    settings: object = None  # the run's GenerationSettings (click loads them)
    x: float = 0.0
    baseline: bool = False


def describe_settings(s) -> str:
    """A point's settings in one line, as the controls name them."""
    if s is None:
        return ""
    if s.drafter == "none":
        how = "vanilla"
    else:
        how = f"{s.drafter}, window {s.draft_length}"
        if s.k > 0:
            how += f", k {s.k}, " + (f"λ {s.lam:g}" if s.lam is not None else f"δ {s.delta:g}")
        else:
            how += ", exact"
    sampling = "greedy" if s.greedy else f"T {s.temperature:g}, top-k {s.top_k}, top-p {s.top_p:g}"
    return f"{how} · seed {s.seed} · CFG {s.cfg_scale:g} · {sampling}"


def axis_top(values, floor: float) -> float:
    """Upper end of an axis from 0: 15 % above the largest value, at least ``floor``."""
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return max(floor, 1.15 * max(finite)) if finite else floor


class TradeoffChart(QWidget):
    point_chosen = Signal(str, object)  # prompt, GenerationSettings: a point was clicked

    def __init__(self, parent=None):
        super().__init__(parent)
        self.points: List[Point] = []
        self.quality = False
        self.hidden = 0  # runs not drawn (no quality score while y is the score)
        self.unplaced = 0  # runs not drawn (no vanilla run of their own while x is the speed-up)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(4)
        title = QLabel("Speed / quality trade-off")
        title.setObjectName("sectionTitle")
        lay.addWidget(title)
        self.plot = pg.PlotWidget(background="#17181c")
        self.plot.setMinimumHeight(200)
        self.plot.showGrid(x=True, y=True, alpha=0.2)
        self.plot.setMenuEnabled(False)
        self.plot.getPlotItem().hideButtons()
        self.plot.getViewBox().setDefaultPadding(0.08)
        for axis in ("left", "bottom"):
            ax = self.plot.getAxis(axis)
            ax.setTextPen(pg.mkPen("#c8c9d0"))
            ax.setPen(pg.mkPen("#5a5c66"))
            ax.enableAutoSIPrefix(False)  # no "(x0.001)": values are plain ×, % or tokens
        self.plot.setMouseEnabled(x=False, y=False)  # fixed, readable ranges (set in _replot)
        self.scatter = pg.ScatterPlotItem(hoverable=True, tip=self._tip, hoverSize=16)
        self.scatter.sigClicked.connect(self._clicked)
        self.plot.addItem(self.scatter)
        lay.addWidget(self.plot, 1)

        legend = QHBoxLayout()
        self.key_label = QLabel()
        self.key_label.setObjectName("muted")
        self.key_label.setWordWrap(True)  # "… · 3 without a vanilla run (Compare places them) · 2 unscored" wraps
        legend.addWidget(self.key_label, 1)
        legend.addWidget(QLabel("δ"))
        bar = QLabel()
        bar.setPixmap(self._gradient_pixmap(90, 10))
        bar.setToolTip("Point colour: δ, square-root scale (0 left, 1 right); pink = LANTERN++ (λ)")
        legend.addWidget(bar)
        scale = QLabel("0 … 1")
        scale.setObjectName("muted")
        legend.addWidget(scale)
        lay.addLayout(legend)
        self._relabel()

    @staticmethod
    def _gradient_pixmap(w: int, h: int) -> QPixmap:
        pm = QPixmap(w, h)
        g = QLinearGradient(QPointF(0, 0), QPointF(w, 0))
        for i in range(11):
            g.setColorAt(i / 10, CMAP.map(i / 10, mode="qcolor"))
        p = QPainter(pm)
        p.fillRect(pm.rect(), g)
        p.end()
        return pm

    def _tip(self, x, y, data):
        return data.get("tip", "") if isinstance(data, dict) else (data or "")

    def _clicked(self, _item, spots, *_):
        for spot in spots[:1]:
            data = spot.data()
            if isinstance(data, dict) and data.get("settings") is not None:
                self.point_chosen.emit(data["prompt"], data["settings"])

    def set_quality_available(self, on: bool) -> None:
        self.quality = on
        self._replot()

    def clear(self) -> None:
        self.points.clear()
        self._replot()

    def add_result(self, r: JobResult) -> Point:
        s = r.job.settings
        exact = s.drafter == "none" or s.k == 0
        stats = r.stats
        pt = Point(
            key=sampling_key(r.model_name, r.job.prompt, s),
            vanilla=s.drafter == "none",
            wall=float(stats["wall_seconds"]),
            tokens_per_forward=float(stats["mean_accepted_length"]),
            score=r.score,
            delta=0.0 if exact else float(s.delta),
            lam=None if exact else s.lam,
            label=r.job.label(),
            prompt=r.job.prompt,
            settings=s,
        )
        self.points.append(pt)
        self._replot()
        return pt

    def _replot(self) -> None:
        latest: Dict[Tuple, Point] = {}
        for p in self.points:
            if p.vanilla:
                latest[p.key] = p
        spots, xs, ys = [], [], []
        self.hidden = self.unplaced = 0
        # one unit on the x axis: speed-up as soon as any run has its vanilla run, and then the runs without
        # one wait off the chart (counted in the key) until a Compare measures them; tokens/forward before that
        speedup_axis = any(latest.get(p.key) is not None for p in self.points)
        for p in self.points:
            if self.quality and p.score is None:
                self.hidden += 1  # no fidelity for this prompt: no y value in these units
                continue
            base = latest.get(p.key)
            p.baseline = base is not None
            if speedup_axis and base is None:
                self.unplaced += 1
                continue
            p.x = base.wall / p.wall if base is not None and p.wall > 0 else p.tokens_per_forward
            y = fidelity.percent(p.score) if self.quality else p.tokens_per_forward
            xs.append(p.x)
            ys.append(y)
            colour = LAMBDA_COLOUR if p.lam is not None else delta_colour(p.delta)
            how = f"speed-up {p.x:.2f}×" if p.baseline else f"{p.x:.2f} tokens/forward (no vanilla baseline)"
            yq = (f"{fidelity.NAME} {fidelity.format_value(p.score)}" if self.quality
                  else f"{p.tokens_per_forward:.2f} tokens/forward")
            tip = f"{p.label}\n{describe_settings(p.settings)}\n{how} · {yq}\nclick: load these settings"
            spots.append({
                "pos": (p.x, y), "brush": pg.mkBrush(colour), "pen": pg.mkPen("#e8e8ee", width=1),
                "symbol": "o" if p.baseline else "t", "size": 13,
                "data": {"tip": tip, "prompt": p.prompt, "settings": p.settings},
            })
        self.scatter.setData(spots)
        x_top = axis_top(xs, 2.0)
        y_top = 100.0 if self.quality else axis_top(ys, 2.0)
        # from 0, with a sliver below it so a point at 0 (a 0 % fidelity) is drawn whole, not cut by the frame
        self.plot.setXRange(-0.03 * x_top, x_top, padding=0)
        self.plot.setYRange(-0.05 * y_top, 1.04 * y_top if self.quality else y_top, padding=0)
        self._relabel()

    def _relabel(self) -> None:
        with_base = sum(1 for p in self.points if p.baseline)
        xlabel = "speed-up vs vanilla (×)" if with_base else "tokens per target forward"
        ylabel = f"{fidelity.NAME} ({fidelity.UNIT})" if self.quality else "mean accepted length (tokens/forward)"
        self.plot.setLabel("bottom", xlabel)
        self.plot.setLabel("left", ylabel)
        self.plot.getAxis("left").setToolTip(fidelity.HELP if self.quality else
                                             "tokens fixed per target forward, the prefill's included")
        key = "● speed-up vs vanilla" if with_base else "▲ tokens per forward (no vanilla run yet)"
        if self.unplaced:
            key += f" · {self.unplaced} without a vanilla run (Compare places them)"
        self.key_label.setText(key + (f" · {self.hidden} unscored" if self.hidden else ""))
        self.key_label.setToolTip("● x = measured speed-up against the most recent vanilla run of the same prompt, "
                                  "seed and sampling settings.\n▲ before any vanilla run: x = tokens per target "
                                  "forward. Once one exists the axis is speed-up only, and runs without a vanilla "
                                  "run of their own wait off the chart. Hover a point for its settings.")
