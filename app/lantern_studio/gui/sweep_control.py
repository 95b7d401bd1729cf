"""The window's Sweep: Generate ▸ Sweep δ and Sweep k (and Generate ▸ Sweep seeds, how many seeds each value
gets: :data:`..studio.sweep.SEEDS` by default), the strip under the canvas (``gui/sweep_view.py``), and the
worker's answers forwarded to the sweep's state (:mod:`..studio.sweep`), which decides what the strip and the
chart's curve show.

A sweep's jobs are plain jobs of the window's one queue (the queue Generate, Compare and ×4 use), so the window
treats each like a Generate: the canvas follows the running one, its picture is saved to the history and
placed on the chart. This object listens to the same answers after the window (it is made after the window
connected its own), fills the strip, joins the rungs on the chart, and makes a clicked rung the current
picture as a history click does. Esc stops the sweep: its jobs are one group of the queue.
"""

from __future__ import annotations

from typing import Optional

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction, QActionGroup
from PySide6.QtWidgets import QMenu

from ..studio.events import QueueChanged
from ..studio.jobs import Frame, Job, JobResult
from ..studio.display import jsonable
from ..studio.sweep import AXES, SEEDS, SYMBOL, SweepSet, value_text
from .sweep_view import SweepStrip

SEED_CHOICES = (1, SEEDS, 5, 8)  # Generate ▸ Sweep seeds: one decode each is about 0.5–1 s on the bundled model

MENU_TEXT = {
    "delta": "Sweep δ (0, ½, 1, 1.5, 2.5 × the slider's δ, and vanilla)",
    "k": "Sweep k (¼, ½, 1, 2, 4 × the slider's k, and vanilla)",
}


class SweepControl(QObject):
    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.sweep: Optional[SweepSet] = None
        self._entry_before = None  # the window's last history row when the running rung started
        self.strip = SweepStrip()
        self.strip.setVisible(False)  # until the first sweep
        middle = window.middle.layout()
        middle.insertWidget(middle.indexOf(window.views) + 1, self.strip)
        self.actions = {}
        menu = next(a.menu() for a in window.menuBar().actions()
                    if a.menu() is not None and window.cancel_action in a.menu().actions())
        for axis in AXES:
            act = QAction(MENU_TEXT[axis], window)
            act.setToolTip(f"Decode the prompt at a ladder of {SYMBOL[axis]} values around the slider's, plus vanilla, "
                           "at a few seeds each (Sweep seeds): a strip of pictures and a curve on the chart")
            act.triggered.connect(lambda _=False, axis=axis: self.start(axis))
            menu.insertAction(window.cancel_action, act)
            self.actions[axis] = act
        self.seeds = SEEDS
        self.seed_actions = {}
        seeds_menu = QMenu("Sweep seeds", menu)
        seeds_menu.setToolTipsVisible(True)
        group = QActionGroup(seeds_menu)
        for n in sorted(set(SEED_CHOICES)):
            act = QAction(f"{n} seed{'' if n == 1 else 's'} per value" + (" (default)" if n == SEEDS else ""),
                          seeds_menu, checkable=True, checked=n == SEEDS)
            act.setToolTip("The mean fidelity of a value over its seeds, with its 95 % interval; each seed is one "
                           "more decode per value (about 0.5–1 s each on the bundled model)")
            act.triggered.connect(lambda _=False, n=n: self.set_seeds(n))
            group.addAction(act)
            seeds_menu.addAction(act)
            self.seed_actions[n] = act
        menu.insertMenu(window.cancel_action, seeds_menu)
        menu.insertSeparator(window.cancel_action)
        self.strip.chosen.connect(self.choose)
        window.canvas.overlay.toggled.connect(self.strip.set_overlay)
        self.strip.set_overlay(window.canvas.overlay.isChecked())
        a = window.jobs.answers  # after the window's own receivers: its history row exists when ours run
        a.job_started.connect(self._started)
        a.frame.connect(self._frame)
        a.job_finished.connect(self._finished)
        a.job_cancelled.connect(lambda job: self._stopped(job, "cancelled"))
        a.job_failed.connect(lambda job, _message: self._stopped(job, "failed"))
        window.session.events.subscribe(QueueChanged, lambda _e: self._queue_changed())

    # ------------------------------------------------------------------ the request
    def set_seeds(self, n: int) -> None:
        """Generate ▸ Sweep seeds: how many seeds the next sweep draws of every value."""
        self.seeds = int(n)
        if n in self.seed_actions:
            self.seed_actions[n].setChecked(True)

    def start(self, axis: str) -> Optional[SweepSet]:
        """Generate ▸ Sweep δ / k: the vanilla run and the ladder's rungs queued back to back as one group."""
        w = self.window
        info = w.model_info
        asked = w.request()
        if asked is None:
            return None
        # one path for every run, as a Compare's (a compile that ends mid-sweep must not split it), each run
        # warming it untimed first: the speed-ups compare decoding only. Its seed joins the session's seeds
        sweep = w.session.sweep(axis, *asked, seeds=self.seeds)
        if sweep is None:
            return None
        self.sweep = sweep
        self.strip.fit(w.height())
        self.strip.start(sweep, info.grid ** 2 if info is not None else 0)
        self.strip.show()
        w.chart.set_curve([])
        values = ", ".join(f"{v:g}" for v in sweep.values)
        waits = f" · waiting for the model ({w.session.loading})" if w.session.loading else ""
        w.statusBar().showMessage(f"{sweep.title} queued: vanilla, then {SYMBOL[axis]} = {values} "
                                  f"({sweep.seeds_words()}){waits}")
        return sweep

    # ------------------------------------------------------------------ the worker's answers
    def _rung(self, job: Job):
        return self.sweep.rung_of(job.id) if self.sweep is not None else None

    def _started(self, job: Job) -> None:
        rung = self.sweep.started(job) if self.sweep is not None else None
        if rung is not None:
            self._entry_before = self.window.last_entry
            self.strip.refresh()
            self.strip.follow(rung.index)  # a narrow strip scrolls along as the rungs decode

    def _frame(self, f: Frame) -> None:
        rung = self.sweep.rung_of(f.job_id) if self.sweep is not None else None
        if rung is not None and rung.job.id == f.job_id:  # the strip shows each rung's first seed
            self.strip.show_frame(rung.index, f)

    def _finished(self, r: JobResult) -> None:
        if self._rung(r.job) is None:
            return
        w = self.window
        self.sweep.quality = bool(w.model_info is not None and w.model_info.has_score)
        self.sweep.finished(r, jsonable(r.record()))
        entry = w.last_entry  # the window saved it just now, unless the history could not take it
        if entry is not None and entry is not self._entry_before and entry.settings == r.job.settings.to_dict():
            self.sweep.saved(r.job, entry.id)
        self.strip.refresh()  # its picture came with its final frame
        w.chart.set_curve(self.sweep.curve())

    def _stopped(self, job: Job, how: str) -> None:
        if self.sweep is not None and self.sweep.stopped(job, how) is not None:
            self.strip.refresh()

    def _queue_changed(self) -> None:
        """Esc or Cancel all may have taken the sweep's waiting rungs off the queue: they never run."""
        if self.sweep is None:
            return
        queue = self.window.studio.queue
        if self.sweep.forget_unqueued(lambda job: queue.position(job) is not None):
            self.strip.refresh()

    # ------------------------------------------------------------------ a click on the strip
    def choose(self, index: int) -> bool:
        """A click on rung ``index``: a finished one becomes the current picture as a history click makes one
        (canvas, stats, prompt and settings with its value on the slider, seed kept, history selection); one
        still decoding (or stopped) says so."""
        w, s = self.window, self.sweep
        rung = s.choose(index) if s is not None else None
        if rung is None:
            state = s.rungs[index].state if s is not None and 0 <= index < len(s.rungs) else "gone"
            w.statusBar().showMessage(f"That picture is {state}: only a finished one can be chosen", 4000)
            return False
        entry = w.store.get(rung.entry_id) if rung.entry_id is not None else None
        if entry is None:
            w.statusBar().showMessage(f"{s.title} · {s.label(rung)} is not in the history: it cannot be shown", 6000)
            return False
        w.restore_entry(entry)
        w.gallery.select(entry.id)
        what = "the vanilla run" if rung.vanilla else value_text(s.axis, rung.value)
        w.stats.show_record(entry.record, entry.decisions, f"{s.title} · {what} · seed {rung.job.settings.seed}")
        self.strip.refresh()
        w.statusBar().showMessage(f"{s.title}: {what} (seed {rung.job.settings.seed}) is the current picture", 8000)
        return True
