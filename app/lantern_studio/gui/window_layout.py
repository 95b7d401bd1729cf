"""The studio window's layout: its panels, where they go, and where the window goes on the screen.

    ┌ controls ┬ [ banner ]              ┬ stats · compare · chart ┐
    │          │ canvas / export / queue │                         │
    └──────────────────── history gallery ─────────────────────────┘
    (the banner takes a row over the canvas while it shows: it covers nothing)

A window too narrow for three columns (``three_columns_width``) shows two: the controls, the results
(stats, Compare, chart) and the history become three tabs of one side column beside the canvas, and the
queue shows its title line alone, so that the canvas keeps most of the height of a small screen (the
history strip took a third of a 900×600 one). Neither side column ever scrolls sideways: their contents
elide or wrap to the column's width, and a column is never narrower than what it holds.

The canvas column shows one of three views: the single canvas (a Generate, a history image); while a
Compare runs and after it, the race (gui/race_view.py): vanilla and LANTERN on two canvases side by side;
while a Generate ×4 runs and after it, the 2×2 grid of its variations (gui/variations_view.py), where a
click on a finished one shows it on the single canvas (⊞ Variations goes back). What the window does is
gui/main_window.py's; what the studio does, studio/session.py's.
"""

from __future__ import annotations

from typing import Optional

from PySide6.QtCore import QByteArray, QRect, QSize, Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QMainWindow, QScrollArea, QSizePolicy, QSplitter, QStackedWidget, QTabWidget, QToolButton, QVBoxLayout, QWidget,
)

from ..studio.history_store import HistoryStore
from .banner import Banner
from .canvas import Canvas
from .chart import TradeoffChart
from .controls import ControlsPanel
from .elided_label import ElidedLabel
from .export_bar import ExportBar
from .history import HistoryGallery
from .queue_view import QueueView
from .race_view import RaceView
from .replay_bar import ReplayBar
from .stats_panel import StatsPanel
from .status_line import QueuedStatusBar
from .variations_view import VariationsView

HISTORY_MIN_HEIGHT = 104  # at least: the history strip's search row and one row of whole thumbnails (see
# HistoryGallery.least_height: the captioned cells may need more)
FIRST_SIZE = QSize(1600, 1000)  # the first window (no saved geometry): at most this big …
FIRST_SHARE = 0.85  # … and this share of the screen's free area, centred in it
def first_geometry(free: QRect, least: QSize) -> QRect:
    """Where the first window goes on a screen whose free area is ``free``: FIRST_SHARE of it, at most
    FIRST_SIZE, at least the window's ``least`` size but never larger than ``free``; centred."""
    w = min(FIRST_SIZE.width(), round(free.width() * FIRST_SHARE))
    h = min(FIRST_SIZE.height(), round(free.height() * FIRST_SHARE))
    w = min(free.width(), max(w, least.width()))
    h = min(free.height(), max(h, least.height()))
    return QRect(free.x() + (free.width() - w) // 2, free.y() + (free.height() - h) // 2, w, h)


def side_scroll(panel: QWidget) -> QScrollArea:
    """A side column: scrolls up and down, never sideways (what it holds fits its width: see _fit_columns)."""
    scroll = QScrollArea()
    scroll.setWidgetResizable(True)
    scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    scroll.setFrameShape(QScrollArea.Shape.NoFrame)
    scroll.setWidget(panel)
    return scroll


class WindowLayout(QMainWindow):
    """The panels and their arrangement; no behaviour (MainWindow adds it)."""

    def _build(self, store: HistoryStore) -> None:
        central = QWidget()
        outer = QVBoxLayout(central)
        outer.setContentsMargins(8, 8, 8, 4)
        outer.setSpacing(6)
        self.banner = Banner()  # a row over the canvas while it shows: it covers nothing (banner.py)

        self.controls = ControlsPanel()
        scroll = side_scroll(self.controls)
        self.controls_scroll = scroll
        bar = self.addToolBar("Model")
        bar.setObjectName("modelBar")
        bar.setMovable(False)
        bar.addWidget(self.controls.model_bar)

        middle = QWidget()
        ml = QVBoxLayout(middle)
        ml.setContentsMargins(4, 0, 4, 0)
        ml.setSpacing(6)
        ml.addWidget(self.banner)
        # the canvas column's two views: the single canvas with its replay bar, and the Compare race
        self.views = QStackedWidget()
        self.single_view = QWidget()
        sl = QVBoxLayout(self.single_view)
        sl.setContentsMargins(0, 0, 0, 0)
        sl.setSpacing(6)
        self.canvas = Canvas()
        sl.addWidget(self.canvas, 1)
        self.replay = ReplayBar()
        sl.addWidget(self.replay)
        self.views.addWidget(self.single_view)
        self.race = RaceView()
        self.views.addWidget(self.race)
        self.variations_view = VariationsView()
        self.views.addWidget(self.variations_view)
        self.back_to_grid = QToolButton(text="⊞ Variations")  # on the canvas's toolbar, once a Generate ×4 ran
        self.back_to_grid.setToolTip("Back to the 2×2 grid of the latest Generate ×4")
        self.back_to_grid.setVisible(False)
        self.canvas.toolbar.addWidget(self.back_to_grid)
        ml.addWidget(self.views, 1)
        self.export_bar = ExportBar()
        ml.addWidget(self.export_bar)
        self.queue_view = QueueView()
        ml.addWidget(self.queue_view)

        right_panel = QWidget()
        rl = QVBoxLayout(right_panel)
        rl.setContentsMargins(4, 0, 0, 0)
        rl.setSpacing(8)
        self.stats = StatsPanel()
        rl.addWidget(self.stats)
        self.chart = TradeoffChart()
        rl.addWidget(self.chart, 1)
        # the right column scrolls too (up and down), so a small window shrinks it instead of overlapping the canvas
        right = side_scroll(right_panel)
        self.right_scroll = right
        self.middle = middle
        # a narrow window: the two side columns as tabs of one (see _arrange)
        self.side_tabs = QTabWidget()
        self.side_tabs.setObjectName("sideTabs")
        self.side_tabs.setDocumentMode(True)
        self.narrow = False

        self.top_split = QSplitter(Qt.Orientation.Horizontal)
        self.top_split.addWidget(scroll)
        self.top_split.addWidget(middle)
        self.top_split.addWidget(right)
        self.top_split.setChildrenCollapsible(False)
        self._fit_columns()
        # the side columns start as wide as their contents want
        left_w, right_w = scroll.minimumWidth(), max(360, right.minimumWidth())
        self.top_split.setSizes([left_w, max(400, FIRST_SIZE.width() - left_w - right_w), right_w])
        self._set_stretch()

        self.gallery = HistoryGallery(store)
        self.gallery.confirm = lambda title, text: self.confirm(title, text)
        self.main_split = QSplitter(Qt.Orientation.Vertical)
        self.main_split.addWidget(self.top_split)
        self.main_split.addWidget(self.gallery)
        self.main_split.setStretchFactor(0, 1)
        self.main_split.setStretchFactor(1, 0)
        history_least = max(HISTORY_MIN_HEIGHT, self.gallery.least_height())
        self.main_split.setSizes([740, history_least + 16])
        self.main_split.setChildrenCollapsible(False)
        self.gallery.setMinimumHeight(history_least)  # whole captioned thumbnails at every window size
        outer.addWidget(self.main_split, 1)
        self.setCentralWidget(central)

        self.setStatusBar(QueuedStatusBar())  # messages wait their turn instead of overwriting each other
        # the model's part: at most half the line (status_line.py), ends in "…" where narrower; whole in its tooltip
        self.status_model = ElidedLabel()
        self.status_model.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)
        self.statusBar().addPermanentWidget(self.status_model)
        self.resize(FIRST_SIZE)  # until _restore places it: a saved geometry, or first_geometry on this screen

    def _fit_columns(self) -> None:
        """Each side column at least as wide as what it holds (with room for its vertical scroll bar), so
        it never needs to scroll sideways; the window's narrowest (two-column) width below that."""
        bar = self.controls_scroll.verticalScrollBar().sizeHint().width() + 4
        for scroll in (self.controls_scroll, self.right_scroll):
            scroll.setMinimumWidth(scroll.widget().minimumSizeHint().width() + bar)
        handle = self.top_split.handleWidth()
        self.three_columns_width = (self.controls_scroll.minimumWidth() + self.middle.minimumSizeHint().width()
                                    + self.right_scroll.minimumWidth() + 2 * handle + 16)
        # the splitter may be narrower than its three columns: the window then shows two (_arrange)
        self.top_split.setMinimumWidth(self._side_width() + self.middle.minimumSizeHint().width() + handle)

    def _side_width(self) -> int:
        return max(self.controls_scroll.minimumWidth(), self.right_scroll.minimumWidth()) + 4

    def _set_stretch(self) -> None:
        """The canvas takes what the window gains or loses; the side columns keep their width."""
        for i in range(self.top_split.count()):
            self.top_split.setStretchFactor(i, 1 if self.top_split.widget(i) is self.middle else 0)

    def _arrange(self) -> None:
        """Three columns over the history strip where they fit; else the side columns and the history as tabs
        (Settings, Results, History) beside the canvas, and the queue on one line: the canvas the largest thing."""
        narrow = self.width() < self.three_columns_width
        if narrow == self.narrow:
            return
        self.narrow = narrow
        if narrow:
            wide_sizes = self.top_split.sizes()
            self._wide_sizes = wide_sizes
            self.side_tabs.addTab(self.controls_scroll, "Settings")
            self.side_tabs.addTab(self.right_scroll, "Results")
            self.side_tabs.setTabToolTip(1, "This run's numbers, the Compare result and the trade-off chart")
            self.side_tabs.addTab(self.gallery, "History")
            self.side_tabs.setTabToolTip(2, "Every finished image: click one to restore it")
            self.queue_view.set_compact(True)
            self.top_split.insertWidget(0, self.side_tabs)
            self.side_tabs.show()
            side = self._side_width()
            self.top_split.setSizes([side, max(1, self.top_split.width() - side)])
        else:
            self.top_split.insertWidget(0, self.controls_scroll)
            self.top_split.addWidget(self.right_scroll)
            self._history_strip()
            self.queue_view.set_compact(False)
            self.side_tabs.hide()
            self.side_tabs.setParent(None)
            self.controls_scroll.show()
            self.right_scroll.show()
            sizes = getattr(self, "_wide_sizes", None)
            left, right = self.controls_scroll.minimumWidth(), max(360, self.right_scroll.minimumWidth())
            if not sizes or len(sizes) != 3:
                sizes = [left, max(1, self.top_split.width() - left - right), right]
            self.top_split.setSizes(sizes)
        self._set_stretch()

    def _history_strip(self) -> None:
        """The history back under the three columns, as tall as one row of whole captioned thumbnails."""
        self.main_split.addWidget(self.gallery)
        self.gallery.show()
        self.main_split.setStretchFactor(0, 1)
        self.main_split.setStretchFactor(1, 0)
        history = max(HISTORY_MIN_HEIGHT, self.gallery.least_height()) + 16
        self.main_split.setSizes([max(1, self.main_split.height() - history), history])

    def resizeEvent(self, event):  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self._arrange()

    def _free_area(self) -> Optional[QRect]:
        screen = self.screen() or QGuiApplication.primaryScreen()
        return None if screen is None else screen.availableGeometry()

    def _first_placement(self) -> None:
        free = self._free_area()
        if free is None or free.isEmpty():
            return
        self.setGeometry(first_geometry(free, self.minimumSizeHint()))

    def _fit_on_screen(self) -> None:
        """A size saved on a larger screen is shrunk to this one's free area and moved into it, so no part
        of the window (its buttons, its status line) is off screen."""
        screen = self.screen() or QGuiApplication.primaryScreen()
        if screen is None:
            return
        free = screen.availableGeometry()
        w, h = min(self.width(), free.width()), min(self.height(), free.height())
        if (w, h) != (self.width(), self.height()):
            self.resize(w, h)
        x = min(max(self.x(), free.left()), free.right() + 1 - w)
        y = min(max(self.y(), free.top()), free.bottom() + 1 - h)
        if (x, y) != (self.x(), self.y()):
            self.move(x, y)

    def restore_placement(self, prefs) -> None:
        """The saved geometry (fitted to this screen) and splitter sizes; a first start's placement else."""
        geom = prefs.get_bytes("geometry")
        if isinstance(geom, QByteArray) and not geom.isEmpty() and self.restoreGeometry(geom):
            self._fit_on_screen()
        else:  # the first start (or a damaged saved geometry): a size that fits this screen
            self._first_placement()
        for key, split in (("split_top", self.top_split), ("split_main", self.main_split)):
            state = prefs.get_bytes(key)
            if isinstance(state, QByteArray) and not state.isEmpty():
                split.restoreState(state)

    def save_placement(self, prefs) -> None:
        prefs.set_bytes("geometry", self.saveGeometry())
        if not self.narrow:  # the three columns' widths and the history strip's height (a narrow window's tabs
            prefs.set_bytes("split_top", self.top_split.saveState())  # have none worth keeping)
            prefs.set_bytes("split_main", self.main_split.saveState())
