"""The trade-off chart: one point per decoding setting (its seeds' runs at their mean), coloured by δ, shaped
by how it decoded.

What a point is and where it goes is the studio model's (:mod:`..studio.tradeoff`): x = tokens per target
forward, y = prompt fidelity in % (the studio's one quality measure, :mod:`lantern_studio.fidelity`) when
the model has a recogniser, else the measured tokens per second, both the mean over the runs that differ
only in their seed. While y is the fidelity, a point of several seeds carries a vertical bar, the 95 %
interval of its mean, and a point of one seed is drawn hollow, a faint fill in a dotted ring (its interval is
the whole 0–100 %: "1 seed" in its tooltip). Neither axis changes meaning as runs arrive, and a point's marker (■ vanilla, ◆ exact
speculative, ● LANTERN, ★ LANTERN++, ▲ step bound: DecodeMethod.chart_group) never changes;
a run's measured speed-up against its vanilla run (a Compare makes one) is in its tooltip. Axes start at
0 with room above the largest value, so one point or a few read sensibly. Hover a point for its settings;
click it to load its prompt and settings into the controls. After a restart the chart refills from the
history (the window hands it the model's saved runs). The latest Sweep's rungs are joined by one line, in
ladder order (:mod:`..studio.sweep` says which points).
"""

from __future__ import annotations

import math
from typing import Iterable, List, Tuple

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QLinearGradient, QPainter, QPixmap
from PySide6.QtWidgets import QHBoxLayout, QLabel, QVBoxLayout, QWidget

from .. import fidelity
from ..engine.decode_method import EXACT, LANTERN, LANTERN_PP, STEP, VANILLA, DecodeMethod
from ..studio.jobs import JobResult
from ..studio.display import jsonable
from ..studio.tradeoff import X_HELP, Y_SPEED_HELP, Tradeoff, TradeoffPoint, point_of

CMAP = pg.colormap.get("viridis")
LAMBDA_COLOUR = QColor(230, 120, 200)
# by TradeoffPoint.kind (DecodeMethod.chart_group): one shape per family, every family a shape
SYMBOLS = {VANILLA: "s", EXACT: "d", LANTERN: "o", LANTERN_PP: "star", STEP: "t"}
MARKS = {VANILLA: "■", EXACT: "◆", LANTERN: "●", LANTERN_PP: "★", STEP: "▲"}  # the key's glyph of each shape
KEY_WORDS = {EXACT: "exact"}  # the key's short word where the family's label is long
ALWAYS_KEYED = (VANILLA, EXACT, LANTERN, LANTERN_PP)  # the step bound is keyed once a step-bound point is drawn


def key_text(kinds) -> str:
    """The chart's key: one glyph and name per family, the step bound only when ``kinds`` holds it (one more
    entry made the key wrap at 1920×1080 and the column scroll)."""
    present = set(kinds)
    shown = [k for k in (*ALWAYS_KEYED, STEP) if k in ALWAYS_KEYED or k in present]
    return " · ".join(f"{MARKS[k]} {KEY_WORDS.get(k, k)}" for k in shown)


CURVE_COLOUR = QColor(240, 160, 48)  # a Sweep's line: the strip's chosen-cell orange


def faint(colour: QColor, alpha: int = 60) -> QColor:
    """``colour`` see-through: a one-seed point's fill."""
    c = QColor(colour)
    c.setAlpha(alpha)
    return c


def delta_colour(delta: float) -> QColor:
    """δ on a square-root scale (matching the slider): small values stay distinguishable."""
    return CMAP.map(math.sqrt(max(0.0, min(1.0, delta))), mode="qcolor")


def seeds_text(seeds) -> str:
    """"seed 3", "seeds 3, 4, 5", or "12 seeds" past five."""
    seeds = list(dict.fromkeys(seeds))
    if len(seeds) == 1:
        return f"seed {seeds[0]}"
    return f"seeds {', '.join(map(str, seeds))}" if len(seeds) <= 5 else f"{len(seeds)} seeds"


def describe_settings(s, seeds=None) -> str:
    """A point's settings in one line, as the controls name them; ``seeds``: the seeds of its runs (default:
    the settings' own)."""
    if s is None:
        return ""
    method = DecodeMethod.of(s)
    if method.family == VANILLA:
        how = VANILLA
    else:
        how = f"{s.drafter}, window {s.draft_length}"
        if method.relaxed:
            how += f", {method.label}, k {s.k}, " + (f"λ {s.lam:g}" if method.kind == "lantern++" else f"δ {s.delta:g}")
        else:
            how += ", exact"
    sampling = "greedy" if s.greedy else f"T {s.temperature:g}, top-k {s.top_k}, top-p {s.top_p:g}"
    return f"{how} · {seeds_text(seeds or [s.seed])} · CFG {s.cfg_scale:g} · {sampling}"


def axis_top(values, floor: float) -> float:
    """Upper end of an axis from 0: 15 % above the largest value, at least ``floor``."""
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return max(floor, 1.15 * max(finite)) if finite else floor


class _Plot(pg.PlotWidget):
    """The plot asks for a modest size: a scrolling side column is laid out at its contents' preferred
    height (pyqtgraph asks for 480 px), which pushed the chart below the fold of a 1080-px screen; it still
    takes every spare pixel of the column (its stretch) and never shrinks below its minimum."""

    def sizeHint(self) -> QSize:
        return QSize(300, PLOT_PREFERRED_HEIGHT)


#: the plot's preferred height in a side column: its minimum; the column's spare height goes to it
PLOT_PREFERRED_HEIGHT = 200


class TradeoffChart(QWidget):
    point_chosen = Signal(str, object)  # prompt, GenerationSettings: a point was clicked

    def __init__(self, parent=None):
        super().__init__(parent)
        self.model = Tradeoff()
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(4)
        title = QLabel("Speed / quality trade-off")
        title.setObjectName("sectionTitle")
        lay.addWidget(title)
        self.plot = _Plot(background="#17181c")
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
        # the latest Sweep's rungs joined in ladder order (studio/sweep.py), under the points
        self.curve = pg.PlotDataItem(pen=pg.mkPen(CURVE_COLOUR, width=2))
        self.curve.setZValue(-1)
        self.plot.addItem(self.curve)
        # the 95 % interval of a point's mean fidelity over its seeds (points of two seeds or more)
        self.bars = pg.ErrorBarItem(x=np.zeros(0), y=np.zeros(0), top=np.zeros(0), bottom=np.zeros(0), beam=0.06,
                                    pen=pg.mkPen("#c8c9d0", width=1.5))
        self.bars.setZValue(-0.5)
        self.plot.addItem(self.bars)
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

    @property
    def points(self) -> List[TradeoffPoint]:
        return self.model.points

    @property
    def quality(self) -> bool:
        return self.model.quality

    @property
    def hidden(self) -> int:
        """Runs not drawn (no quality score while y is the score, or no measured speed)."""
        return self.model.hidden

    def set_quality_available(self, on: bool) -> None:
        self.model.quality = bool(on)
        self._replot()

    def clear(self) -> None:
        self.model.clear()
        self._replot()

    def add_result(self, r: JobResult) -> TradeoffPoint:
        pt = point_of(jsonable(r.record()), r.job.label(), r.job.settings)
        self.model.add(pt)
        self._replot()
        return pt

    def set_curve(self, points: Iterable[TradeoffPoint]) -> None:
        """A Sweep's rungs (their points, in ladder order), drawn as one line; [] removes it."""
        self.model.set_curve(points)
        self._replot()

    def add_records(self, records: Iterable[Tuple[dict, str]]) -> int:
        """Runs from elsewhere (the saved history, oldest first): (record, label) each; those whose record
        lacks the numbers are skipped. How many were added."""
        pts = [p for p in (point_of(rec, label) for rec, label in records) if p is not None]
        self.model.extend(pts)
        self._replot()
        return len(pts)

    def _replot(self) -> None:
        spots, xs, ys, bars = [], [], [], []
        for placed in self.model.placed():
            p = placed.point
            xs.append(placed.x)
            ys.append(placed.y)
            colour = LAMBDA_COLOUR if p.lam is not None else delta_colour(p.delta)
            # while y is the fidelity, one seed's point is hollow (its fill faint, its ring dotted): its interval
            # is the whole range
            lone = self.quality and placed.seeds == 1
            if placed.error is not None:
                bars.append((placed.x, placed.y, *placed.error))
            seeds = [r.settings.seed for r in placed.runs] or [p.settings.seed]
            spots.append({
                "pos": (placed.x, placed.y), "brush": pg.mkBrush(faint(colour)) if lone else pg.mkBrush(colour),
                "pen": pg.mkPen("#e8e8ee", width=1.5, style=Qt.PenStyle.DotLine) if lone else pg.mkPen("#e8e8ee", width=1),
                "symbol": SYMBOLS.get(p.kind, "o"), "size": 13,
                "data": {"tip": self.model.tip(placed, describe_settings(p.settings, seeds)), "prompt": p.prompt,
                         "settings": p.settings},
            })
        self.scatter.setData(spots)
        cols = [np.array(c, dtype=float) for c in zip(*bars)] if bars else [np.zeros(0)] * 4
        self.bars.setData(x=cols[0], y=cols[1], bottom=cols[2], top=cols[3])
        curve = self.model.curve_placed()
        self.curve.setData([x for x, _ in curve], [y for _, y in curve])
        x_top = axis_top(xs, 2.0)
        y_top = 100.0 if self.quality else axis_top(ys, 2.0)
        # from 0, with a sliver below it so a point at 0 (a 0 % fidelity) is drawn whole, not cut by the frame
        self.plot.setXRange(-0.03 * x_top, x_top, padding=0)
        self.plot.setYRange(-0.05 * y_top, 1.04 * y_top if self.quality else y_top, padding=0)
        self._relabel()

    def _relabel(self) -> None:
        m = self.model
        self.plot.setLabel("bottom", m.x_label)
        self.plot.setLabel("left", m.y_label)
        self.plot.getAxis("bottom").setToolTip(X_HELP)
        self.plot.getAxis("left").setToolTip(fidelity.HELP if self.quality else Y_SPEED_HELP)
        hidden = m.hidden
        # (a hollow point, one seed, is said in the tooltip: one more entry here wraps the key at 1920×1080)
        self.key_label.setText(key_text(p.kind for p in m.points) + (f" · {hidden} unscored" if hidden and self.quality else
                                      f" · {hidden} unmeasured" if hidden else ""))
        self.key_label.setToolTip(f"{X_HELP}.\n{fidelity.HELP if self.quality else Y_SPEED_HELP}.\n"
                                  "Runs that differ only in their seed are one point, at their mean"
                                  + ("; its bar is the 95 % interval of the mean fidelity, and a hollow point is "
                                     "one seed (its interval is the whole 0–100 %)" if self.quality else "")
                                  + ". A point's shape says how it decoded; its tooltip gives the speed-up against "
                                  "its vanilla run once a Compare has measured one. Hover a point for its settings.")
