"""The studio window: binds the panels (gui/window_layout.py) to the studio session (studio/session.py).

A person's request (a button, a menu, a shortcut) becomes one call of the session with what the controls
hold; the session's events (studio/events.py) redraw the panels: the job views (gui/job_views.py) draw
jobs, this window the model, the queue, the banner and the status line. What the studio does lives in the
session, without Qt; what is here is what only a window can do: dialogs, the clipboard, dragging out, its
geometry.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Callable, Optional

import numpy as np
from PySide6.QtCore import QCoreApplication, QEvent, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QFileDialog

from ..engine.settings import GenerationSettings
from ..export import target_forwards
from ..models import BUNDLED_NAME, TINY_DEMO, installed_previews, is_bundled, model_defaults
from ..models.catalogue import CATALOGUE
from ..paths import cache_dir
from ..studio.display import SINGLE
from ..studio.events import (
    JobQueued, Notice, QueueChanged, Said,
)
from ..studio.history_store import Entry
from ..studio.jobs import Job
from ..studio.replay import ReplayError
from ..studio.session import StudioSession
from ..studio.variations import VariationSet
from .about_dialog import show_about
from .controls import OPEN_FOLDER
from .engine_thread import EngineThread
from .help_dialog import show_how_it_works
from .history import ask_user
from .job_views import JobViews
from .model_views import ModelViews
from .storage import Preferences, app_data_dir
from .sweep_control import SweepControl
from .window_layout import WindowLayout

_orphans: list = []  # engine threads still inside a model load at close: never destroyed


class MainWindow(WindowLayout):
    def __init__(self, model: Optional[str] = None, data_dir: Optional[Path] = None):
        super().__init__()
        self.setWindowTitle("")  # Qt shows the application's display name alone
        self.setObjectName("mainWindow")
        data = Path(data_dir) if data_dir else app_data_dir()
        self.prefs = Preferences(data)  # the INI file: the session's preferences and this window's geometry
        self.jobs = EngineThread(self)
        self.session = StudioSession.opened(data, self.jobs, self.prefs)
        self.jobs.answer_to(self.session)
        self.banner_topic = ""
        self._closed = False
        # injectable dialogs (tests replace them)
        self.confirm: Callable[[str, str], bool] = lambda title, text: ask_user(self, title, text)
        self.ask_save_path: Callable[[str], Optional[str]] = self._ask_save_path
        self.ask_model_folder: Callable[[], Optional[str]] = self._ask_model_folder
        self._build(self.session.history)
        self._build_actions()
        self._connect()
        self.views_of_jobs = JobViews(self)
        self.model_views = ModelViews(self)
        self.sweeps = SweepControl(self)  # Generate ▸ Sweep δ / k and its strip: it hears events after the window
        self._restore(model)
        self.jobs.load(self.session.model_spec)
        if self.store.notices:  # a damaged history was repaired at opening: say what happened
            self.show_error("\n".join(self.store.notices), topic="history", level="warning")

    # ------------------------------------------------------------------ the session's state, read through
    studio = property(lambda self: self.session.display)
    store = property(lambda self: self.session.history)
    model_info = property(lambda self: self.session.model_info)
    last_entry = property(lambda self: self.session.last_entry)
    last_result = property(lambda self: self.session.display.last_result)
    shown_job_id = property(lambda self: self.session.display.shown_job_id)

    @property
    def finished_image(self) -> Optional[np.ndarray]:
        """What Save / Copy / drag export (the last finished picture, or the history image shown)."""
        return self.studio.finished.image if self.studio.finished is not None else None

    @property
    def finished_record(self) -> Optional[dict]:
        return self.studio.finished.record if self.studio.finished is not None else None

    def decode_path(self) -> str:
        return self.session.decode_path()

    # ------------------------------------------------------------------ menus and bindings
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
        mb, act = self.menuBar(), self._action
        f = mb.addMenu("&File")
        act(f, "Open model folder…", self.open_model_folder, ["Ctrl+O"])
        act(f, "Models from the Hub…", self.show_models_dialog, ["Ctrl+M"])
        self.save_action = act(f, "Save image as PNG…", lambda: self.save_as(), [QKeySequence.StandardKey.Save])
        f.addSeparator()
        act(f, "Quit", self.close, [QKeySequence.StandardKey.Quit])
        self.copy_action = act(mb.addMenu("&Edit"), "Copy image", self.copy_image, [QKeySequence.StandardKey.Copy])
        g = mb.addMenu("&Generate")
        self.generate_action = act(g, "Generate", self.generate, ["Ctrl+Return", "Ctrl+Enter"])
        self.variations_action = act(g, "Generate ×4 (four new seeds)", self.generate_variations, ["Ctrl+4"])
        act(g, "Compare with vanilla", self.compare, ["Ctrl+Shift+Return"])
        self.cancel_action = act(g, "Cancel", self.cancel, ["Esc"])
        act(g, "Cancel all", self.cancel_all, ["Shift+Esc"])
        g.addSeparator()
        self.compiled_action = act(g, "Compiled decoding (faster steps; compiled in the background)",
                                   self.set_compiled_decoding, checkable=True)
        v = mb.addMenu("&View")
        self.overlay_action = act(v, "Decision overlay", self.canvas.set_overlay, ["Ctrl+D"], checkable=True)
        act(v, "Clear trade-off chart", self.chart.clear)
        h = mb.addMenu("&Help")  # last, as on every desktop
        act(h, "How LANTERN works", self.show_how_it_works, [QKeySequence.StandardKey.HelpContents])
        act(h, "About Lantern Studio", lambda: show_about(self))
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
        c.new_seed.toggled.connect(self._new_seed_toggled)
        for view in (self.overlay_action.setChecked, self.race.set_overlay, self.variations_view.set_overlay):
            self.canvas.overlay.toggled.connect(view)
        self.export_bar.save_requested.connect(lambda: self.save_as())
        self.export_bar.copy_requested.connect(self.copy_image)
        self.queue_view.cancel_requested.connect(self.cancel)
        self.queue_view.cancel_all_requested.connect(self.cancel_all)
        self.gallery.entry_activated.connect(self.restore_entry)
        self.chart.point_chosen.connect(self.load_point)
        self.replay.step_shown.connect(self._replay_step)
        self.race.replay_failed.connect(lambda text: self.show_error(text, topic="history"))
        self.canvas.view.make_drag_file = self._drag_file
        for side, lane in self.race.lanes.items():
            lane.view.make_drag_file = lambda side=side: self._drag_lane_file(side)
        ev = self.session.events
        ev.subscribe(QueueChanged, lambda _e: self.queue_view.update_from(self.studio.queue))
        ev.subscribe(JobQueued, self._queued)
        ev.subscribe(Notice, lambda n: self.show_error(n.text, n.topic, n.level, self._model_actions()
                                                       if "model" in n.actions else ()))
        ev.subscribe(Said, self._say)

    # ------------------------------------------------------------------ preferences
    def _restore(self, model: Optional[str]) -> None:
        p, s = self.session.prefs, self.session
        if model is not None:
            s.model_spec = p.model = model
        try:
            if p.settings is not None:
                self.controls.set_settings(GenerationSettings.from_dict(p.settings))
        except (TypeError, ValueError):
            s.settings_chosen = False
        if not s.settings_chosen:
            # the model's real defaults from its model.json, from the first frame: a Generate pressed while
            # the model warms up runs with what the controls show, not with placeholders
            early = model_defaults(s.model_spec)
            if early is not None:
                self.controls.set_settings(early)
        self.controls.set_prompt(p.prompt)
        self.controls.set_prompt_history(p.prompt_history)
        self._refresh_model_choices()
        self.controls.new_seed.setChecked(p.new_seed_each_generate)
        self.compiled_action.setChecked(p.compiled_decoding)
        self.jobs.set_compiled(p.compiled_decoding)  # before the model load asked for next: it compiles as it loads
        self.canvas.set_zoom(p.zoom)
        self.canvas.set_overlay(p.overlay)
        self.race.set_overlay(p.overlay)
        self.variations_view.set_overlay(p.overlay)
        self.export_bar.set_choice(p.export_factor, p.export_method)
        self.restore_placement(self.prefs)

    def save_preferences(self) -> None:
        p = self.session.prefs
        p.settings = self.controls.settings().to_dict()
        p.prompt, p.prompt_history = self.controls.prompt_text(), self.controls.prompt_history()
        p.zoom, p.overlay = self.canvas.zoom.currentData(), self.canvas.overlay.isChecked()
        p.export_factor, p.export_method = self.export_bar.factor_value(), self.export_bar.method_value()
        p.new_seed_each_generate = self.controls.new_seed.isChecked()
        self.session.remember()
        self.save_placement(self.prefs)
        self.prefs.sync()

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
        loading = self.session.loading is not None
        self.session.queue.stopped = True
        self.session.display.cancel_all()
        if not self.jobs.shutdown(timeout_ms=300 if loading else 30000):
            _orphans.append(self.jobs)  # still inside a model load: never destroy a running QThread
        # deliver what the worker sent before it stopped (a job that finished just now still gets its history
        # row): its answers are queued to the session, to this window and to plain callables, in one order
        QCoreApplication.sendPostedEvents(None, QEvent.Type.MetaCall)
        self.session.close()
        shutil.rmtree(cache_dir() / "drag", ignore_errors=True)

    # ------------------------------------------------------------------ banner / status
    def show_error(self, text: str, topic: str = "", level: str = "error", actions=()) -> None:
        self.banner_topic = topic
        self.banner.show_message(text, level, actions)
        self.statusBar().showMessage(text.split("\n")[0], 8000)

    def _say(self, s: Said) -> None:
        if s.queued:
            self.statusBar().queue(s.text, s.ms) if s.ms else self.statusBar().queue(s.text)
        else:
            self.statusBar().showMessage(s.text, s.ms)

    def _model_actions(self):
        return [("Open model folder…", self.open_model_folder), ("Use tiny demo model", lambda: self.choose_model(TINY_DEMO))]

    # ------------------------------------------------------------------ models
    def _refresh_model_choices(self) -> None:
        choices = [(f"Bundled model ({BUNDLED_NAME})", None)]
        previews = [(f"Preview v5 ({name})", name) for name in installed_previews()]
        choices += previews
        self.controls.flat_hint = (f"Here the sliders change little: pick {previews[0][0]} in Model to see them "
                                   "trade speed for fidelity." if previews else "")
        choices.append(("Tiny demo model (random weights)", TINY_DEMO))
        spec, folders = self.session.model_spec, list(self.session.prefs.recent_models)
        if not is_bundled(spec) and spec != TINY_DEMO and spec not in folders:
            folders.insert(0, spec)
        for folder in folders:
            title = f"Hub: {CATALOGUE[folder].title}" if folder in CATALOGUE else f"{Path(folder).name} — {folder}"
            choices.append((title, folder))
        self.controls.set_model_choices(choices, spec)

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
        self.session.choose_model(spec)
        self._refresh_model_choices()

    def open_model_folder(self) -> None:
        folder = self.ask_model_folder()
        if folder:
            self.choose_model(folder)

    def _ask_model_folder(self) -> Optional[str]:
        return QFileDialog.getExistingDirectory(self, "Open model folder (with model.json)") or None

    def _model_chosen(self, spec) -> None:
        if spec == OPEN_FOLDER:
            self.open_model_folder()
        elif spec != self.session.model_spec:
            self.choose_model(spec)

    def _new_seed_toggled(self, on: bool) -> None:
        self.session.prefs.new_seed_each_generate = bool(on)
        self.session.remember()

    def set_compiled_decoding(self, on: bool) -> None:
        """Generate ▸ Compiled decoding: remembered, and applied to the loaded model between jobs."""
        self.session.set_compiled(bool(on))
        if on:
            self.statusBar().showMessage("Compiling the decode steps in the background; Generate decodes eagerly "
                                         "until they are in", 6000)

    def show_how_it_works(self) -> None:
        """Help ▸ How LANTERN works: the drafter and the target, k and δ, the overlay's colours, what exact means."""
        self.how_it_works = show_how_it_works(self)

    # ------------------------------------------------------------------ generating
    def request(self) -> Optional[tuple]:
        """The prompt and settings as the controls hold them, checked (None: a banner says what is wrong);
        the prompt joins the recent ones."""
        prompt = self.controls.prompt_text()
        settings = self.session.checked(prompt, self.controls.settings())
        if settings is None:
            return None
        self.controls.remember_prompt(prompt.strip())
        if self.banner_topic == "input":
            self.banner.dismiss()
        return prompt, settings

    def _new_seed(self, settings: GenerationSettings) -> GenerationSettings:
        return settings.with_(seed=self.controls.seed_for_generate())  # New seed each Generate: drawn, shown

    def generate(self) -> Optional[Job]:
        asked = self.request()
        return self.session.generate(asked[0], self._new_seed(asked[1])) if asked else None

    def compare(self) -> Optional[tuple]:
        """Vanilla, then the current settings, on one prompt and seed: a race in the canvas column."""
        asked = self.request()
        if asked is None:
            return None
        prompt, s = asked
        return self.session.compare(prompt, self._new_seed(s) if s.drafter != "none" else s)

    def generate_variations(self) -> Optional[VariationSet]:
        """Generate ×4: four jobs of the prompt and settings, each with a new seed (whatever New seed each
        Generate says: four variations are four pictures), shown as a 2×2 grid that fills in as they decode."""
        asked = self.request()
        return self.session.variations(asked[0], asked[1], self.controls.draw_seed) if asked else None

    def _queued(self, e: JobQueued) -> None:
        if e.waiting_for and len(e.jobs) == 1:  # it runs as soon as the model is ready: say why it waits
            self.canvas.set_status(f"Generate is queued: waiting for the model ({e.waiting_for})")

    def cancel(self) -> None:
        self.session.cancel()
        self.variations_view.refresh()

    def cancel_all(self) -> None:
        self.session.cancel_all()
        self.variations_view.refresh()

    def _replay_step(self, step: int) -> None:
        """The replay bar moved: redraw the canvas and the running numbers as they stood after ``step``."""
        rec = self.replay.recording
        if rec is None or self.finished_image is None or self.session.queue.current is not None:
            return
        try:
            frame = rec.frame(step, self.finished_image, self.replay.decisions)
        except ReplayError as err:  # a record or a PNG from elsewhere that does not fit its replay
            self.replay.load(None, None)
            self.show_error(f"This image's replay cannot be shown: {err}", topic="history")
            return
        self.canvas.show_frame(frame)
        self.stats.update_live(frame, self.finished_record or {})
        self.studio.canvas_finished = frame.final
        where = "done" if frame.final else f"step {step + 1} / {rec.steps}"
        self.canvas.set_status(f"replay: {where} · %v / %m tokens · {target_forwards(frame.target_forwards)} "
                               "target forwards")

    def load_point(self, prompt: str, settings: GenerationSettings) -> None:
        """A trade-off chart point was clicked: its prompt and settings go back into the controls."""
        self.controls.set_prompt(prompt)
        self.controls.set_settings(settings)
        self.statusBar().showMessage(f"Loaded the settings of “{prompt}” (seed {settings.seed}) from the chart"
                                     f"{self.keep_seed()}", 8000)

    def keep_seed(self) -> str:
        """A picture's seed was put back (a history click, a chart point): New seed each Generate goes off so
        that Generate redraws that picture; what the status line adds to say so."""
        if not self.controls.new_seed.isChecked():
            return " · Generate draws this picture again"
        self.controls.new_seed.setChecked(False)
        return " · New seed each Generate is off: Generate draws this picture again"

    # ------------------------------------------------------------------ the variations grid
    def choose_variation(self, index: int) -> bool:
        return self.views_of_jobs.choose_variation(index)

    def show_variations(self) -> bool:
        return self.views_of_jobs.show_variations()

    # ------------------------------------------------------------------ history
    def restore_entry(self, e: Entry) -> None:
        self.controls.set_prompt(e.prompt)
        opened = self.session.open_entry(e)
        if opened is None:
            return
        settings, image, recording = opened
        if settings is not None:
            self.controls.set_settings(settings)
        self.views_of_jobs.show_view(SINGLE)
        self.canvas.show_image(image, e.decisions)
        self.stats.show_record(e.record, e.decisions, f"From the history · seed {e.settings.get('seed')}")
        self.replay.load(recording, e.decisions if recording is not None else None)
        self.statusBar().showMessage(f"Restored “{e.prompt}” (seed {e.settings.get('seed')}){self.keep_seed()}", 8000)

    # ------------------------------------------------------------------ export
    def _ask_save_path(self, suggested: str) -> Optional[str]:
        path, _ = QFileDialog.getSaveFileName(self, "Save image as PNG", suggested, "PNG image (*.png)")
        return path or None

    def save_as(self, path: Optional[str] = None) -> Optional[Path]:
        """Save the finished image (``path`` skips the file dialog; an existing file is then confirmed here)."""
        if not self.session.exportable():
            return None
        confirmed = path is None  # the file dialog asks about overwriting
        if path is None:
            path = self.ask_save_path(str(Path.home() / self.session.suggested_name()))
            if not path:
                return None
        target = Path(path)
        if target.suffix.lower() != ".png":
            target, confirmed = target.with_name(target.name + ".png"), False
        if target.exists() and not confirmed and not self.confirm("Replace file", f"{target} already exists. "
                                                                                  "Replace it?"):
            return None
        return self.session.save_png(target, self.export_bar.factor_value(), self.export_bar.method_value())

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
            return self.export_bar.drag_png(self.finished_image, self.finished_record)
        return self.export_bar.drag_png(self.canvas.image, None) if self.canvas.image is not None else None

    def _drag_lane_file(self, side: str) -> Optional[Path]:
        """Dragging a race lane out: that half's finished picture, else its partial one."""
        done = self.studio.show_lane_result(side)
        if done is not None:
            return self.export_bar.drag_png(done.image, done.record)
        image = self.race.lanes[side].image
        return self.export_bar.drag_png(image, None) if image is not None else None
