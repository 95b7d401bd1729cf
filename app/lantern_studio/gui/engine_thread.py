"""The engine's thread: the studio session's link to the engine (studio/session.py ``EngineLink``).

A :class:`~.worker.Worker` lives in a QThread and owns the pipeline. The session asks through this object
(``load``, ``run``, ``set_compiled``: queued signals, so each call returns at once) and hears the worker's
answers (:class:`~.worker.Answers`, signals living in the GUI thread) as calls of its ``on_*`` methods, in
the GUI thread, in the order the worker sent them. The session hears an answer before anything else
connected to ``answers`` later (a test waiting for ``job_finished`` reads a session already up to date).
"""

from __future__ import annotations

from typing import Optional

from PySide6.QtCore import QObject, Qt, QThread, Signal

from ..studio.jobs import Job
from .worker import Answers, Worker

Q = Qt.ConnectionType.QueuedConnection


class EngineThread(QObject):
    _run_requested = Signal(object)
    _load_requested = Signal(object)
    _compiled_requested = Signal(bool)

    def __init__(self, parent: Optional[QObject] = None):
        super().__init__(parent)
        self.answers = Answers(self)  # in the GUI thread: its receivers run here
        self.thread = QThread()
        self.thread.setObjectName("lantern-engine")
        self.worker = Worker(self.answers)
        self.worker.moveToThread(self.thread)
        self._run_requested.connect(self.worker.run_job, Q)
        self._load_requested.connect(self.worker.load_model, Q)
        self._compiled_requested.connect(self.worker.set_compiled, Q)
        self.stopped = False
        self.thread.start()

    def answer_to(self, session) -> None:
        """The worker's answers go to ``session``'s ``on_*`` methods (connected first: it hears them first)."""
        a = self.answers
        a.model_loading.connect(session.on_model_loading)
        a.model_status.connect(session.on_model_status)
        a.model_ready.connect(session.on_model_ready)
        a.model_failed.connect(session.on_model_failed)
        a.steps_changed.connect(session.on_steps_changed)
        a.job_started.connect(session.on_job_started)
        a.frame.connect(session.on_frame)
        a.job_finished.connect(session.on_job_finished)
        a.job_cancelled.connect(session.on_job_cancelled)
        a.job_failed.connect(session.on_job_failed)

    # ------------------------------------------------------------------ the session's requests
    def load(self, spec: Optional[str]) -> None:
        self._load_requested.emit(spec)

    def run(self, job: Job) -> None:
        if not self.stopped:
            self._run_requested.emit(job)

    def set_compiled(self, on: bool) -> None:
        """Decode through compiled steps (or not): applied by the worker between jobs, before any load asked
        for after this call."""
        self._compiled_requested.emit(bool(on))

    def shutdown(self, timeout_ms: int = 30000) -> bool:
        """Stop the thread (the session cancelled the jobs first); True when it stopped in time."""
        if self.stopped:
            return True
        self.stopped = True
        self.worker.stop_compiling()  # a background compile is left to end on its own, unheard
        self.thread.quit()
        return bool(self.thread.wait(timeout_ms))
