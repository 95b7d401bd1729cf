"""The studio window: assembles the panels, forwards the engine's events to the studio model
(:mod:`..studio.display`, no Qt) and redraws from what it says.

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
click on a finished one shows it on the single canvas (⊞ Variations goes back).
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Callable, Optional

import numpy as np
from PIL import Image
from PySide6.QtCore import QByteArray, QCoreApplication, QEvent, QRect, QSize, Qt
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (
    QFileDialog, QMainWindow, QScrollArea, QSizePolicy, QSplitter, QStackedWidget, QTabWidget, QToolButton, QVBoxLayout,
    QWidget,
)

from .. import fidelity
from ..engine.settings import GenerationSettings, SettingsError
from ..engine.text import PromptError, check_prompt
from ..export import ExportError, save_png, slug, target_forwards
from ..models import BUNDLED_NAME, TINY_DEMO, model_defaults
from ..models.catalogue import CATALOGUE
from ..paths import cache_dir
from ..records import RecordError, png_text
from .about_dialog import show_about
from .banner import Banner
from .canvas import Canvas
from .chart import TradeoffChart
from .controls import OPEN_FOLDER, ControlsPanel
from .elided_label import ElidedLabel
from .export_bar import DEFAULT_FACTOR, DEFAULT_METHOD, ExportBar
from .help_dialog import show_how_it_works
from .history import HistoryGallery, ask_user
from ..studio.history_store import Entry, HistoryStore
from .job_queue import JobQueue
from ..studio.jobs import Frame, Job, JobResult, ModelInfo
from .queue_view import QueueView
from .race_view import RaceView
from ..studio.replay import ReplayError, recording_of
from .replay_bar import ReplayBar
from ..studio.compare import VANILLA
from ..studio.display import GRID, RACE, SINGLE, Studio, jsonable
from ..studio.sweep import ROLE as SWEEP_ROLE
from ..studio.tradeoff import MAX_HISTORY_POINTS
from ..studio.variations import COUNT as VARIATIONS
from ..studio.variations import ROLE as VARIATION_ROLE
from ..studio.variations import Cell, VariationSet
from .stats_panel import StatsPanel
from .status_line import QueuedStatusBar
from .storage import Preferences, app_data_dir
from .sweep_control import SweepControl
from .variations_view import VariationsView

MAX_RECENT_MODELS = 8
HISTORY_MIN_HEIGHT = 104  # at least: the history strip's search row and one row of whole thumbnails (see
# HistoryGallery.least_height: the captioned cells may need more)
FIRST_SIZE = QSize(1600, 1000)  # the first window (no saved geometry): at most this big …
FIRST_SHARE = 0.85  # … and this share of the screen's free area, centred in it
# Generate ▸ Compiled decoding, until a person sets it: on. The steps compile in the background after the
# model is ready (a minute or more on a CPU the first time, about half that from the compile cache at a
# relaunch) while Generate decodes eagerly; without a C++ compiler the status line says so once, stays eager
COMPILED_DECODING_DEFAULT = True
NEW_SEED_DEFAULT = True  # "New seed each Generate", until a person sets it: a new picture at every press

_orphans: list = []  # job queues whose worker was still inside a model load at close: never destroyed


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


class MainWindow(QMainWindow):
    def __init__(self, model: Optional[str] = None, data_dir: Optional[Path] = None):
        super().__init__()
        self.setWindowTitle("")  # Qt shows the application's display name alone
        self.setObjectName("mainWindow")
        data = Path(data_dir) if data_dir else app_data_dir()
        self.prefs = Preferences(data)
        self.store = HistoryStore(data)
        self.studio = Studio()  # the state and its rules; this window forwards events to it and redraws
        self.jobs = JobQueue(self, self.studio.queue)
        self.model_info: Optional[ModelInfo] = None
        self.last_entry: Optional[Entry] = None
        self._banner_topic = ""
        self._closed = False
        self._store_open = True
        # injectable dialogs (tests replace them)
        self.confirm: Callable[[str, str], bool] = lambda title, text: ask_user(self, title, text)
        self.ask_save_path: Callable[[str], Optional[str]] = self._ask_save_path
        self.ask_model_folder: Callable[[], Optional[str]] = self._ask_model_folder

        self._build()
        self._build_actions()
        self._connect()
        self.sweeps = SweepControl(self)  # Generate ▸ Sweep δ / k and its strip; after _connect: it hears answers last
        self._restore(model)
        self.jobs.load_model(self.model_spec)
        if self.store.notices:  # a damaged history was repaired at opening: say what happened
            self.show_error("\n".join(self.store.notices), topic="history", level="warning")

    # ------------------------------------------------------------------ the model's state, read through
    @property
    def finished_image(self) -> Optional[np.ndarray]:
        """What Save / Copy / drag export (the last finished picture, or the history image shown)."""
        return self.studio.finished.image if self.studio.finished is not None else None

    @property
    def finished_record(self) -> Optional[dict]:
        return self.studio.finished.record if self.studio.finished is not None else None

    @property
    def last_result(self) -> Optional[JobResult]:
        return self.studio.last_result

    @property
    def shown_job_id(self) -> Optional[int]:
        return self.studio.shown_job_id

    def set_compiled_decoding(self, on: bool) -> None:
        """Generate ▸ Compiled decoding: remembered, and applied to the loaded model between jobs."""
        self.prefs.set_json("compiled_decoding", bool(on))
        self.jobs.set_compiled(bool(on))
        if on:
            self.statusBar().showMessage("Compiling the decode steps in the background; Generate decodes eagerly "
                                         "until they are in", 6000)

    def show_about(self) -> None:
        show_about(self)

    def show_how_it_works(self) -> None:
        """Help ▸ How LANTERN works: the drafter and the target, k and δ, the overlay's colours, what exact means."""
        self.how_it_works = show_how_it_works(self)

    # ------------------------------------------------------------------ building
    def _build(self) -> None:
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

        self.gallery = HistoryGallery(self.store)
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
        self.canvas.view.make_drag_file = self._drag_file
        for side, lane in self.race.lanes.items():
            lane.view.make_drag_file = lambda side=side: self._drag_lane_file(side)
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

    def _action(self, menu, text, slot, shortcuts=(), checkable=False) -> QAction:
        a = QAction(text, self)
        if shortcuts:
            a.setShortcuts([QKeySequence(s) for s in shortcuts])
        a.setCheckable(checkable)
        a.triggered.connect(slot)
        menu.addAction(a)
        self.addAction(a)
        return a

    def _build_actions(self) -> None:
        mb = self.menuBar()
        f = mb.addMenu("&File")
        self._action(f, "Open model folder…", self.open_model_folder, ["Ctrl+O"])
        self._action(f, "Models from the Hub…", self.show_models_dialog, ["Ctrl+M"])
        self.save_action = self._action(f, "Save image as PNG…", lambda: self.save_as(), [QKeySequence.StandardKey.Save])
        f.addSeparator()
        self._action(f, "Quit", self.close, [QKeySequence.StandardKey.Quit])
        e = mb.addMenu("&Edit")
        self.copy_action = self._action(e, "Copy image", self.copy_image, [QKeySequence.StandardKey.Copy])
        g = mb.addMenu("&Generate")
        self.generate_action = self._action(g, "Generate", self.generate, ["Ctrl+Return", "Ctrl+Enter"])
        self.variations_action = self._action(g, "Generate ×4 (four new seeds)", self.generate_variations,
                                              ["Ctrl+4"])
        self._action(g, "Compare with vanilla", self.compare, ["Ctrl+Shift+Return"])
        self.cancel_action = self._action(g, "Cancel", self.cancel, ["Esc"])
        self._action(g, "Cancel all", self.cancel_all, ["Shift+Esc"])
        g.addSeparator()
        self.compiled_action = self._action(g, "Compiled decoding (faster steps; compiled in the background)",
                                            self.set_compiled_decoding, checkable=True)
        v = mb.addMenu("&View")
        self.overlay_action = self._action(v, "Decision overlay", self.canvas.set_overlay, ["Ctrl+D"], checkable=True)
        self._action(v, "Clear trade-off chart", self.chart.clear)
        h = mb.addMenu("&Help")  # last, as on every desktop
        self._action(h, "How LANTERN works", self.show_how_it_works, [QKeySequence.StandardKey.HelpContents])
        self._action(h, "About Lantern Studio", self.show_about)
        for a in (self.save_action, self.copy_action, self.generate_action, self.cancel_action):
            a.setShortcutContext(Qt.ShortcutContext.WindowShortcut)

    def _connect(self) -> None:
        c = self.controls
        c.generate_requested.connect(self.generate)
        c.compare_requested.connect(self.compare)
        c.variations_requested.connect(self.generate_variations)
        self.variations_view.chosen.connect(self.choose_variation)
        self.back_to_grid.clicked.connect(self.show_variations)
        c.model_chosen.connect(self._model_chosen)
        c.new_seed.toggled.connect(lambda on: self.prefs.set_json("new_seed_each_generate", bool(on)))
        self.canvas.overlay.toggled.connect(self.overlay_action.setChecked)
        self.canvas.overlay.toggled.connect(self.race.set_overlay)
        self.canvas.overlay.toggled.connect(self.variations_view.set_overlay)
        self.export_bar.save_requested.connect(lambda: self.save_as())
        self.export_bar.copy_requested.connect(self.copy_image)
        self.queue_view.cancel_requested.connect(self.cancel)
        self.queue_view.cancel_all_requested.connect(self.cancel_all)
        self.gallery.entry_activated.connect(self.restore_entry)
        self.chart.point_chosen.connect(self.load_point)
        self.replay.step_shown.connect(self._replay_step)
        self.race.replay_failed.connect(lambda text: self.show_error(text, topic="history"))
        self.jobs.queue_changed.connect(self._queue_changed)
        q = self.jobs.answers  # after the queue's own bookkeeping: its state is current when these run
        q.model_loading.connect(self._model_loading)
        q.model_status.connect(self._model_status)
        q.model_ready.connect(self._model_ready)
        q.steps_changed.connect(self._steps_changed)
        q.model_failed.connect(self._model_failed)
        q.job_started.connect(self._job_started)
        q.frame.connect(self._frame)
        q.job_finished.connect(self._job_finished)
        q.job_cancelled.connect(self._job_cancelled)
        q.job_failed.connect(self._job_failed)

    # ------------------------------------------------------------------ preferences
    def _restore(self, model: Optional[str]) -> None:
        p = self.prefs
        self._settings_restored = False
        saved = p.get_json("settings")
        if isinstance(saved, dict):
            try:
                self.controls.set_settings(GenerationSettings.from_dict(saved))
                self._settings_restored = True
            except (TypeError, ValueError):
                pass
        self.controls.set_prompt(p.get_json("prompt", "") or "")
        self.controls.set_prompt_history(p.get_json("prompt_history", []) or [])
        self.recent_models = [m for m in (p.get_json("recent_models", []) or []) if isinstance(m, str)]
        self.model_spec = model if model is not None else p.get_json("model", None)
        if not self._settings_restored:
            # the model's real defaults from its model.json, from the first frame: a Generate pressed while
            # the model warms up runs with what the controls show, not with placeholders
            early = model_defaults(self.model_spec)
            if early is not None:
                self.controls.set_settings(early)
        self._refresh_model_choices()
        self.controls.new_seed.setChecked(bool(p.get_json("new_seed_each_generate", NEW_SEED_DEFAULT)))
        compiled = bool(p.get_json("compiled_decoding", COMPILED_DECODING_DEFAULT))
        self.compiled_action.setChecked(compiled)
        self.jobs.set_compiled(compiled)  # before the model load asked for next: it compiles as it loads
        self.canvas.set_zoom(p.get_json("zoom", "fit"))
        self.canvas.set_overlay(bool(p.get_json("overlay", False)))
        self.race.set_overlay(self.canvas.overlay.isChecked())
        self.variations_view.set_overlay(self.canvas.overlay.isChecked())
        self.export_bar.set_choice(p.get_json("export_factor", DEFAULT_FACTOR) or DEFAULT_FACTOR,
                                   p.get_json("export_method", DEFAULT_METHOD))
        geom = p.get_bytes("geometry")
        if isinstance(geom, QByteArray) and not geom.isEmpty() and self.restoreGeometry(geom):
            self._fit_on_screen()
        else:  # the first start (or a damaged saved geometry): a size that fits this screen
            self._first_placement()
        for key, split in (("split_top", self.top_split), ("split_main", self.main_split)):
            state = p.get_bytes(key)
            if isinstance(state, QByteArray) and not state.isEmpty():
                split.restoreState(state)

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

    def save_preferences(self) -> None:
        p = self.prefs
        p.set_json("settings", self.controls.settings().to_dict())
        p.set_json("prompt", self.controls.prompt_text())
        p.set_json("prompt_history", self.controls.prompt_history())
        p.set_json("model", self.model_spec)
        p.set_json("recent_models", self.recent_models)
        p.set_json("zoom", self.canvas.zoom.currentData())
        p.set_json("overlay", self.canvas.overlay.isChecked())
        p.set_json("export_factor", self.export_bar.factor_value())
        p.set_json("export_method", self.export_bar.method_value())
        p.set_json("new_seed_each_generate", self.controls.new_seed.isChecked())
        p.set_bytes("geometry", self.saveGeometry())
        if not self.narrow:  # the three columns' widths and the history strip's height (a narrow window's tabs
            p.set_bytes("split_top", self.top_split.saveState())  # have none worth keeping)
            p.set_bytes("split_main", self.main_split.saveState())
        p.sync()

    def closeEvent(self, event):  # noqa: N802
        self.shutdown()
        super().closeEvent(event)

    def shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.hide()  # gone from the screen at once; what follows is bookkeeping
        self.save_preferences()
        self.controls.match_line.shutdown()
        # a model load (or its warm-up) cannot be interrupted: wait a moment, not for the load to finish
        loading = self.jobs.loading is not None
        if not self.jobs.shutdown(timeout_ms=300 if loading else 30000):
            _orphans.append(self.jobs)  # still inside a model load: never destroy a running QThread
        # deliver what the worker sent before it stopped (a job that finished just now still gets its history
        # row): its answers are queued to the job queue, to this window and to plain callables, in one order
        QCoreApplication.sendPostedEvents(None, QEvent.Type.MetaCall)
        self.store.close()
        self._store_open = False
        shutil.rmtree(cache_dir() / "drag", ignore_errors=True)

    # ------------------------------------------------------------------ banner / status
    def show_error(self, text: str, topic: str = "", level: str = "error", actions=()) -> None:
        self._banner_topic = topic
        self.banner.show_message(text, level, actions)
        self.statusBar().showMessage(text.split("\n")[0], 8000)

    def _model_actions(self):
        return [("Open model folder…", self.open_model_folder), ("Use tiny demo model", lambda: self.choose_model(TINY_DEMO))]

    # ------------------------------------------------------------------ models
    def _refresh_model_choices(self) -> None:
        choices = [(f"Bundled model ({BUNDLED_NAME})", None), ("Tiny demo model (random weights)", TINY_DEMO)]
        folders = list(self.recent_models)
        if self.model_spec not in (None, TINY_DEMO) and self.model_spec not in folders:
            folders.insert(0, self.model_spec)
        for folder in folders:
            if folder in CATALOGUE:
                choices.append((f"Hub: {CATALOGUE[folder].title}", folder))
            else:
                choices.append((f"{Path(folder).name} — {folder}", folder))
        self.controls.set_model_choices(choices, self.model_spec)

    def show_models_dialog(self):
        """The Hub catalogue: download (progress, cancel, resume, hash checks) and load a LlamaGen model."""
        from .models_dialog import ModelsDialog  # noqa: PLC0415 - start-up time: rarely opened, starts without it

        if getattr(self, "models_dialog", None) is None:
            self.models_dialog = ModelsDialog(self)
            self.models_dialog.model_chosen.connect(self.choose_model)
        self.models_dialog.refresh()
        self.models_dialog.show()
        self.models_dialog.raise_()
        return self.models_dialog

    def choose_model(self, spec: Optional[str]) -> None:
        if spec not in (None, TINY_DEMO) and spec not in CATALOGUE:
            spec = str(Path(spec).expanduser())
            self.recent_models = [spec] + [m for m in self.recent_models if m != spec]
            self.recent_models = self.recent_models[:MAX_RECENT_MODELS]
        self.model_spec = spec
        self._refresh_model_choices()
        self.jobs.load_model(spec)

    def open_model_folder(self) -> None:
        folder = self.ask_model_folder()
        if folder:
            self.choose_model(folder)

    def _ask_model_folder(self) -> Optional[str]:
        return QFileDialog.getExistingDirectory(self, "Open model folder (with model.json)") or None

    def _model_chosen(self, spec) -> None:
        if spec == OPEN_FOLDER:
            self.open_model_folder()
        elif spec != self.model_spec:
            self.choose_model(spec)

    def _model_loading(self, spec) -> None:
        self.status_model.setText("loading model…")
        self.statusBar().queue("Loading model…")

    def _model_status(self, spec, message: str) -> None:
        self.status_model.setText(message)
        self.statusBar().queue(f"Getting the model ready: {message}")
        if self.jobs.busy:
            self.canvas.set_status(f"Generate is queued: waiting for the model ({message})")

    def _model_ready(self, info: ModelInfo) -> None:
        changed = self.model_info is None or self.model_info.name != info.name
        self.model_info = info
        self.controls.set_model_info(info)
        if not self._settings_restored:
            self.controls.set_settings(info.defaults)
            self._settings_restored = True
        self.chart.set_quality_available(info.has_score)
        if changed:  # this model's runs: the saved ones (a restart keeps the chart), then this session's
            self.chart.clear()
            self._chart_from_history(info.name)
        self.setWindowTitle(info.name)  # Qt appends the application's display name: "emoji-64 — Lantern Studio"
        self.status_model.setText(info.status_text())
        self.status_model.setToolTip(f"{info.status_text()}\n{info.status_tip()}")
        self.statusBar().queue(f"Model {info.name} ready", 4000)
        if self._banner_topic == "model":
            self.banner.dismiss()

    def _steps_changed(self, spec, steps: str, doing: str) -> None:
        """The background compile moved on (``doing``) or ended: the status line says how steps run now."""
        if self.model_info is None or spec != self.model_info.spec:
            return
        changed = steps != self.model_info.steps
        self.model_info = replace(self.model_info, steps=steps)
        self.status_model.setText(self.model_info.status_text(doing))
        self.status_model.setToolTip(f"{self.model_info.status_text(doing)}\n{self.model_info.status_tip()}")
        if changed and steps == "compiled":
            self.statusBar().queue("Decode steps compiled: the next Generate runs them", 6000)

    def _chart_from_history(self, model_name: str) -> None:
        if not self._store_open:  # the window closed while the model was still loading
            return
        runs = [e for e in self.store.entries(limit=4 * MAX_HISTORY_POINTS) if e.model == model_name]
        runs = runs[:MAX_HISTORY_POINTS][::-1]  # the newest, oldest first
        self.chart.add_records((e.record, f"history: “{e.prompt}” (seed {e.settings.get('seed')})") for e in runs)

    def _model_failed(self, spec, message: str) -> None:
        self.model_info = None
        self.controls.set_model_failed(message)
        self.status_model.setText("no model")
        what = f"The bundled model ({BUNDLED_NAME})" if spec is None else f"The model {spec}"
        self.show_error(f"{what} could not be loaded: {message}\nOpen a model folder, or use the tiny demo model "
                        "(random weights: it draws noise, but shows how decoding works).",
                        topic="model", actions=self._model_actions())

    # ------------------------------------------------------------------ generating
    def _checked_settings(self) -> Optional[GenerationSettings]:
        try:
            check_prompt(self.controls.prompt_text())
            vocab = self.model_info.vocab_size if self.model_info else None
            return self.controls.settings().validate(vocab)
        except (PromptError, SettingsError) as e:
            self.show_error(str(e), topic="input")
            return None

    def generate(self) -> Optional[Job]:
        s = self._checked_settings()
        if s is None:
            return None
        s = s.with_(seed=self.controls.seed_for_generate())  # New seed each Generate: drawn, shown, recorded
        self._settings_restored = True  # the controls hold what ran: a model that gets ready later keeps them
        prompt = self.controls.prompt_text().strip()
        self.controls.remember_prompt(prompt)
        if self._banner_topic == "input":
            self.banner.dismiss()
        job = self.studio.submit(prompt, s, self.jobs.model_spec)
        self.jobs.changed()
        if self.jobs.loading:  # it runs as soon as the model is ready: say why it waits
            self.canvas.set_status(f"Generate is queued: waiting for the model ({self.jobs.loading})")
            self.statusBar().showMessage(f"#{job.id} queued: the model is still getting ready ({self.jobs.loading})")
        return job

    def compare(self) -> Optional[tuple]:
        """Vanilla, then the current settings, on one prompt and seed: a race in the canvas column."""
        s = self._checked_settings()
        if s is None:
            return None
        if s.drafter == "none":
            self.show_error("Compare runs vanilla decoding against the current settings: pick a drafter first.",
                            topic="input", level="info")
            return None
        s = s.with_(seed=self.controls.seed_for_generate())  # one seed for both halves
        self._settings_restored = True
        prompt = self.controls.prompt_text().strip()
        self.controls.remember_prompt(prompt)
        pair = self.studio.submit_compare(prompt, s, self.jobs.model_spec, self.decode_path())  # one path for both
        self.jobs.changed()
        return pair.vanilla.job, pair.lantern.job

    def decode_path(self) -> str:
        """The one path every job of a Compare or a Sweep decodes on: compiled when jobs decode compiled now,
        else eager (also where measured timings pick per family: one path keeps the ratios about the method)."""
        return "compiled" if self.model_info is not None and self.model_info.steps == "compiled" else "eager"

    def generate_variations(self) -> Optional[VariationSet]:
        """Generate ×4: four jobs of the prompt and settings, each with a new seed (whatever New seed each
        Generate says: four variations are four pictures), shown as a 2×2 grid that fills in as they decode."""
        s = self._checked_settings()
        if s is None:
            return None
        seeds = self.studio.variation_seeds(self.controls.draw_seed)  # none used before in this session
        self._settings_restored = True
        prompt = self.controls.prompt_text().strip()
        self.controls.remember_prompt(prompt)
        if self._banner_topic == "input":
            self.banner.dismiss()
        variations = self.studio.submit_variations(prompt, s, self.jobs.model_spec, seeds)
        self.jobs.changed()
        waits = f" · waiting for the model ({self.jobs.loading})" if self.jobs.loading else ""
        self.statusBar().showMessage(f"Generate ×4 queued: seeds {', '.join(map(str, seeds))}{waits}", 10000)
        return variations

    def cancel(self) -> None:
        stopped = self.studio.cancel()
        if stopped and stopped[0].role == VARIATION_ROLE:  # a Generate ×4 is one request
            rest = f" and the {len(stopped) - 1} waiting" if len(stopped) > 1 else ""
            self.statusBar().showMessage(f"Cancelling the Generate ×4 (#{stopped[0].id}{rest})…")
        elif stopped and stopped[0].role == SWEEP_ROLE:  # so is a Sweep
            self.statusBar().showMessage(f"Cancelling the sweep (#{stopped[0].id} and {len(stopped) - 1} waiting)…")
        elif len(stopped) > 1 or (stopped and stopped[0].group is not None):  # a Compare is one request
            self.statusBar().showMessage(f"Cancelling the Compare (#{stopped[0].id} and its pair)…")
        elif stopped:
            self.statusBar().showMessage(f"Cancelling #{stopped[0].id}…")
        self.variations_view.refresh()
        self.jobs.changed()

    def cancel_all(self) -> None:
        self.studio.cancel_all()
        self.variations_view.refresh()
        self.jobs.changed()
        self.statusBar().showMessage("Cancelled all jobs")

    def _queue_changed(self) -> None:
        self.queue_view.update_from(self.studio.queue)

    def _show_view(self, view: str) -> None:
        """The canvas column's view: the single canvas, the race of a Compare, or the grid of a Generate ×4
        (⊞ Variations on the single canvas's toolbar goes back to the grid once there is one)."""
        self.views.setCurrentWidget({RACE: self.race, GRID: self.variations_view}.get(view, self.single_view))
        if view != RACE:
            self.race.stop()
        self.back_to_grid.setVisible(view == SINGLE and self.studio.variations is not None)

    def _total(self) -> int:
        return self.model_info.grid ** 2 if self.model_info else 0

    def _job_started(self, job: Job) -> None:
        target = self.studio.started(job)
        if target.cell is not None:
            self._variation_started(job)
            return
        self._show_view(target.view)
        total = self._total()
        if target.view == RACE:
            if target.lane == VANILLA or self.race.pair is not self.studio.race:
                self.race.start(self.studio.race, total)
            self.race.lane_started(target.lane, total)
        else:
            self.replay.load(None, None)
            self.canvas.start(total)
        self.gallery.clear_selection()  # the picture shown is a new one, in no history row yet
        self.stats.start(job)
        self.statusBar().queue(f"Generating {job.label()}…")
        self._queue_changed()

    def _variation_started(self, job: Job) -> None:
        """A Generate ×4's variation started: the grid (new for its first one) shows it starting; the stats
        follow it when the grid is the view (not while a person looks at a chosen variation)."""
        if self.variations_view.vset is not self.studio.variations:
            self.variations_view.start(self.studio.variations, self._total())
        self.variations_view.refresh()
        if self.studio.view == GRID:
            self._show_view(GRID)
            self.stats.start(job)
        self.statusBar().queue(f"Generating {job.label()}…")
        self._queue_changed()

    def _frame(self, f: Frame) -> None:
        target = self.studio.target_of(f)
        if target is None:
            return
        if target.view == GRID:
            self.variations_view.show_frame(target.cell, f)
            if f.job_id == self.shown_job_id:
                self.stats.update_live(f)
            return
        if target.view == RACE:
            self.race.show_frame(target.lane, f)
        else:
            self.canvas.show_frame(f)
        self.stats.update_live(f)

    def _job_finished(self, r: JobResult) -> None:
        record = jsonable(r.record())
        on_lane = self.studio.shows_race_lane(r.job)
        cell = self.studio.variation_of(r.job)
        followed = r.job.id == self.shown_job_id  # a variation's numbers go to the stats only when followed
        pair = self.studio.job_finished(r, record)
        if self.studio.canvas_finished and cell is None:  # a chosen variation keeps its replay
            self.replay.load(r.recording, r.decisions)
        if not self._store_open:
            return
        try:
            self.last_entry = self.store.add(r.image, record, r.decisions)
            self.studio.variation_saved(r.job, self.last_entry.id)
            self.gallery.refresh()
            if self.studio.finished is not None and self.studio.finished.job_id == r.job.id:
                self.gallery.select(self.last_entry.id)  # the highlight follows the picture shown
        except Exception as e:  # noqa: BLE001 - a full disk must not take the app down
            self.show_error(f"The image could not be saved to the history: {e}", topic="history")
        if cell is None or followed:
            self.stats.show_result(r)
        self.chart.add_result(r)
        s = r.stats
        done = f"done · %v / %m tokens · {target_forwards(s['target_forwards'])} target forwards · " \
               f"{s['wall_seconds']:.2f} s"
        if cell is not None:
            self.variations_view.refresh()
        elif on_lane:
            half = self.studio.race.half(r.job.id)
            self.race.lanes[half.side].set_state(done)
        else:
            self.canvas.set_status(done)
        self.statusBar().queue(f"Done #{r.job.id} in {s['wall_seconds']:.2f} s", 6000)
        if r.warning:
            self.show_error(r.warning, topic="score", level="warning")
        if pair is not None:
            self.stats.show_compare(pair)
            if self.studio.race is pair:
                self.race.pair_done(pair)
            if self.narrow:  # the ratio is on the Results tab: bring it forward
                self.side_tabs.setCurrentWidget(self.right_scroll)
                self.right_scroll.ensureWidgetVisible(self.stats.compare_box)

    def _job_ended(self, job: Job, how: str) -> Optional[object]:
        """A job was cancelled or failed: the stats and the canvas (or its race lane, or its grid cell) say so."""
        cell = self.studio.variation_of(job)
        if cell is not None:
            self._variation_ended(job, cell, how)
            return None
        on_lane = self.studio.shows_race_lane(job)
        pair = self.studio.job_ended(job, how.lower())
        if job.id == self.shown_job_id:
            progress = self.race.lanes[self.studio.race.half(job.id).side].progress if on_lane \
                else self.canvas.progress
            if how == "Cancelled":
                self.stats.stopped(job, how, progress.value(), progress.maximum())
            else:
                self.stats.stopped(job, how)
            if not on_lane:
                self.canvas.set_status("cancelled at %v / %m tokens" if how == "Cancelled" else "failed")
        if pair is not None and self.studio.race is pair:
            self.race.pair_stopped(pair)
        return pair

    def _variation_ended(self, job: Job, cell: Cell, how: str) -> None:
        self.studio.job_ended(job, how.lower())
        if job.id == self.shown_job_id:
            fixed, total = self.variations_view.tokens(cell.index)
            if how == "Cancelled":
                self.stats.stopped(job, how, fixed or 0, total)
            else:
                self.stats.stopped(job, how)
        self.variations_view.refresh()

    def _job_cancelled(self, job: Job) -> None:
        self._job_ended(job, "Cancelled")
        self.statusBar().queue(f"Cancelled #{job.id}", 6000)

    def _job_failed(self, job: Job, message: str) -> None:
        self._job_ended(job, "Failed")
        if self.model_info is None:  # the model itself failed to load: keep the way out on offer
            self.show_error(f"Generation #{job.id} failed: {message}", topic="model", actions=self._model_actions())
        else:
            self.show_error(f"Generation #{job.id} failed: {message}", topic="job")

    def _replay_step(self, step: int) -> None:
        """The replay bar moved: redraw the canvas and the running numbers as they stood after ``step``."""
        rec = self.replay.recording
        if rec is None or self.finished_image is None or self.jobs.current is not None:
            return
        try:
            frame = rec.frame(step, self.finished_image, self.replay.decisions)
        except ReplayError as err:  # a record or a PNG from elsewhere that does not fit its replay
            self.replay.load(None, None)
            self.show_error(f"This image's replay cannot be shown: {err}", topic="history")
            return
        self.canvas.show_frame(frame)
        self.stats.update_live(frame, fidelity.of_record(self.finished_record or {}))
        self.studio.canvas_finished = frame.final
        if frame.final:
            self.canvas.set_status(f"replay: done · %v / %m tokens · {target_forwards(frame.target_forwards)} target forwards")
        else:
            self.canvas.set_status(f"replay: step {step + 1} / {rec.steps} · %v / %m tokens · "
                                   f"{target_forwards(frame.target_forwards)} target forwards")

    def load_point(self, prompt: str, settings: GenerationSettings) -> None:
        """A trade-off chart point was clicked: its prompt and settings go back into the controls."""
        self.controls.set_prompt(prompt)
        self.controls.set_settings(settings)
        again = self._keep_seed()
        self.statusBar().showMessage(f"Loaded the settings of “{prompt}” (seed {settings.seed}) from the chart{again}",
                                     8000)

    def _keep_seed(self) -> str:
        """A picture's seed was put back (a history click, a chart point): New seed each Generate goes off so
        that Generate redraws that picture; what the status line adds to say so."""
        if not self.controls.new_seed.isChecked():
            return " · Generate draws this picture again"
        self.controls.new_seed.setChecked(False)
        return " · New seed each Generate is off: Generate draws this picture again"

    # ------------------------------------------------------------------ the variations grid
    def choose_variation(self, index: int) -> bool:
        """A click on grid cell ``index``: a finished variation becomes the current picture as a history
        click makes one: the single canvas, the stats, the prompt and seed (New seed each Generate goes off, so
        Generate redraws it), the replay bar and the history's selection show it. A variation still decoding
        (or stopped) says so and the grid stays."""
        cell = self.studio.choose_variation(index)
        if cell is None:
            v = self.studio.variations
            state = v.cells[index].state if v is not None and 0 <= index < len(v.cells) else "gone"
            self.statusBar().showMessage(f"Variation {index + 1} is {state}: only a finished one can be chosen", 4000)
            return False
        r = cell.result
        self.controls.set_prompt(cell.job.prompt)
        self.controls.set_settings(cell.job.settings)
        self._show_view(SINGLE)
        self.canvas.show_image(r.image, r.decisions)
        self.canvas.set_status(f"variation {index + 1} of {VARIATIONS} · %v / %m tokens · "
                               f"{target_forwards(r.stats['target_forwards'])} target forwards")
        self.stats.show_record(cell.record, r.decisions, f"Variation {index + 1} of {VARIATIONS} · seed {cell.seed}")
        self.replay.load(r.recording, r.decisions)
        if cell.entry_id is not None:
            self.gallery.select(cell.entry_id)
        self.variations_view.refresh()
        again = self._keep_seed()
        self.statusBar().showMessage(f"Variation {index + 1}: “{cell.job.prompt}” (seed {cell.seed}){again}", 8000)
        return True

    def show_variations(self) -> bool:
        """⊞ Variations: back to the grid of the latest Generate ×4 (the chosen one stays the current picture)."""
        if not self.studio.show_grid():
            return False
        self._show_view(GRID)
        self.variations_view.refresh()
        return True

    # ------------------------------------------------------------------ history
    def restore_entry(self, e: Entry) -> None:
        self.controls.set_prompt(e.prompt)
        try:
            self.controls.set_settings(GenerationSettings.from_dict(e.settings))
        except (TypeError, ValueError) as err:
            self.show_error(f"This history entry's settings could not be restored: {err}", topic="history")
        try:
            png_text(e.path)  # the header's size limits, checked before any pixel is decoded
            with Image.open(e.path) as img:
                image = np.asarray(img.convert("RGB")).copy()
        except (OSError, RecordError, Image.DecompressionBombError) as err:
            self.show_error(f"{e.path}: could not be read ({err})", topic="history")
            return
        self.studio.show_history(image, e.record)
        self._show_view(SINGLE)
        self.canvas.show_image(image, e.decisions)
        self.stats.show_record(e.record, e.decisions, f"From the history · seed {e.settings.get('seed')}")
        recording = recording_of(e.record)
        ok = recording is not None and e.decisions is not None and e.decisions.size == recording.total \
            and image.shape[0] % int(round(recording.total ** 0.5)) == 0
        self.replay.load(recording if ok else None, e.decisions if ok else None)
        again = self._keep_seed()
        self.statusBar().showMessage(f"Restored “{e.prompt}” (seed {e.settings.get('seed')}){again}", 8000)
        if self.model_info is not None and e.model and e.model != self.model_info.name:
            self.show_error(f"This image was made with the model {e.model}; the current model is "
                            f"{self.model_info.name}, so regenerating it gives a different picture.",
                            topic="history", level="info")

    # ------------------------------------------------------------------ export
    def _ask_save_path(self, suggested: str) -> Optional[str]:
        path, _ = QFileDialog.getSaveFileName(self, "Save image as PNG", suggested, "PNG image (*.png)")
        return path or None

    def save_as(self, path: Optional[str] = None) -> Optional[Path]:
        """Save the finished image (``path`` skips the file dialog; an existing file is then confirmed here)."""
        if self.finished_image is None:
            self.show_error("Nothing to export yet: generate an image or pick one from the history.", level="info")
            return None
        confirmed = False
        if path is None:
            suggested = str(Path.home() / f"{slug(self.finished_record.get('prompt', 'lantern'))}.png")
            path = self.ask_save_path(suggested)
            if not path:
                return None
            confirmed = True  # the file dialog asked about overwriting
        target = Path(path)
        if target.suffix.lower() != ".png":
            target, confirmed = target.with_name(target.name + ".png"), False
        if target.exists() and not confirmed:
            if not self.confirm("Replace file", f"{target} already exists. Replace it?"):
                return None
        try:
            save_png(target, self.finished_image, self.finished_record, overwrite=True,
                     factor=self.export_bar.factor_value(), method=self.export_bar.method_value())
        except (ExportError, ValueError) as e:
            self.show_error(f"Export failed: {e}", topic="export")
            return None
        self.statusBar().showMessage(f"Saved {target}", 6000)
        return target

    def copy_image(self) -> bool:
        if self.finished_image is None:
            self.statusBar().showMessage("Nothing to copy yet", 4000)
            return False
        self.export_bar.copy_to_clipboard(self.finished_image)
        self.statusBar().showMessage("Image copied to the clipboard", 4000)
        return True

    def _drag_file(self) -> Optional[Path]:
        """A PNG for dragging out: the finished image with its record, else the partial picture; scaled as
        Save scales it (the export bar's factor and filter: ×8 crisp until a person picks another)."""
        if self.finished_image is not None and self.studio.canvas_finished:
            return self._drag_png(self.finished_image, self.finished_record)
        if self.canvas.image is not None:
            return self._drag_png(self.canvas.image, None)
        return None

    def _drag_lane_file(self, side: str) -> Optional[Path]:
        """Dragging a race lane out: that half's finished picture, else its partial one."""
        done = self.studio.show_lane_result(side)
        if done is not None:
            return self._drag_png(done.image, done.record)
        image = self.race.lanes[side].image
        return self._drag_png(image, None) if image is not None else None

    def _drag_png(self, image: np.ndarray, record: Optional[dict]) -> Path:
        folder = Path(tempfile.mkdtemp(prefix="drag-", dir=self._drag_dir()))
        name = slug(record.get("prompt", "lantern")) + ".png" if record else "lantern-partial.png"
        return save_png(folder / name, image, record if record else {"partial": True}, overwrite=True,
                        factor=self.export_bar.factor_value(), method=self.export_bar.method_value())

    @staticmethod
    def _drag_dir() -> Path:
        d = cache_dir() / "drag"
        d.mkdir(parents=True, exist_ok=True)
        return d
