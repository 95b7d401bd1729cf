"""The GUI-side half of the engine: owns the worker thread and the job queue.

The queue lives here, in the GUI thread, because the worker is busy inside a
decode loop while a job runs and could not take new requests. The controller
hands the worker one job at a time over a queued signal and dispatches the next
when the worker reports the current one finished, cancelled or failed.
Cancelling the running job sets its ``cancel_event``, which the decode loop
polls between steps.
"""

from __future__ import annotations

from collections import deque
from typing import Optional

from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot

from ..engine.settings import GenerationSettings
from .jobs import Job, JobResult
from .worker import Worker

Q = Qt.ConnectionType.QueuedConnection


class JobQueue(QObject):
    # requests to the worker (queued → run in the worker thread)
    _run_requested = Signal(object)
    _load_requested = Signal(object)
    _compiled_requested = Signal(bool)

    # re-emitted for the window, in the GUI thread
    queue_changed = Signal()
    model_loading = Signal(object)
    model_status = Signal(object, str)
    model_ready = Signal(object)
    model_failed = Signal(object, str)
    job_started = Signal(object)
    frame = Signal(object)
    job_finished = Signal(object)
    job_cancelled = Signal(object)
    job_failed = Signal(object, str)

    def __init__(self, parent: Optional[QObject] = None):
        super().__init__(parent)
        self.model_spec: Optional[str] = None
        self.pending: deque[Job] = deque()
        self.current: Optional[Job] = None
        self.loading: Optional[str] = None  # what the model load is doing now; None once ready or failed
        self.thread = QThread()
        self.thread.setObjectName("lantern-engine")
        self.worker = Worker()
        self.worker.moveToThread(self.thread)
        self._run_requested.connect(self.worker.run_job, Q)
        self._load_requested.connect(self.worker.load_model, Q)
        self._compiled_requested.connect(self.worker.set_compiled, Q)
        w = self.worker
        # Every answer reaches the window unchanged, as this object's signal in the GUI thread. Queued
        # slots run in the order they were connected: the loading stage is noted before the window
        # hears of it (it reads ``loading``); a job's end frees the queue after the window has it.
        w.model_loading.connect(self._on_loading, Q)
        w.model_status.connect(self._on_status, Q)
        w.model_ready.connect(self._on_loaded, Q)
        w.model_failed.connect(self._on_loaded, Q)
        for name in ("model_loading", "model_status", "model_ready", "model_failed",
                     "job_started", "frame", "job_finished", "job_cancelled", "job_failed"):
            getattr(w, name).connect(getattr(self, name), Q)
        w.job_finished.connect(self._on_finished, Q)
        w.job_cancelled.connect(self._on_ended, Q)
        w.job_failed.connect(self._on_ended, Q)
        self.thread.start()
        self._stopped = False

    # ------------------------------------------------------------------ requests
    def load_model(self, spec: Optional[str]) -> None:
        self.model_spec = spec
        self._load_requested.emit(spec)

    def set_compiled(self, on: bool) -> None:
        """Decode through compiled steps (or not): applied by the worker between jobs, before any
        load asked for after this call."""
        self._compiled_requested.emit(bool(on))

    def submit(self, prompt: str, settings: GenerationSettings, role: str = "single",
               group: Optional[int] = None) -> Job:
        job = Job(prompt, settings, self.model_spec, role, group)
        self.pending.append(job)
        self._dispatch()
        self.queue_changed.emit()
        return job

    def cancel_current(self) -> Optional[Job]:
        if self.current is not None:
            self.current.cancel()
        return self.current

    def cancel_job(self, job_id: int) -> None:
        if self.current is not None and self.current.id == job_id:
            self.current.cancel()
            return
        self.pending = deque(j for j in self.pending if j.id != job_id)
        self.queue_changed.emit()

    def pending_in_group(self, group: int) -> list:
        """The queued jobs of one Compare pair (the running one is ``current``)."""
        return [j.id for j in self.pending if j.group == group]

    def cancel_all(self) -> None:
        self.pending.clear()
        self.cancel_current()
        self.queue_changed.emit()

    def position(self, job: Job) -> Optional[int]:
        """0 = running, 1 = next in line, …; None when gone."""
        if self.current is not None and self.current.id == job.id:
            return 0
        for i, j in enumerate(self.pending, 1):
            if j.id == job.id:
                return i
        return None

    @property
    def busy(self) -> bool:
        return self.current is not None or bool(self.pending)

    # ------------------------------------------------------------------ worker answers
    @Slot(object)
    def _on_loading(self, _spec) -> None:
        self.loading = "loading model…"

    @Slot(object, str)
    def _on_status(self, _spec, message: str) -> None:
        self.loading = message
        self.queue_changed.emit()

    @Slot(object)  # model_ready(info)
    @Slot(object, str)  # model_failed(spec, message)
    def _on_loaded(self, _info_or_spec, _message: str = "") -> None:
        self.loading = None
        self.queue_changed.emit()

    def _dispatch(self) -> None:
        if self._stopped or self.current is not None or not self.pending:
            return
        self.current = self.pending.popleft()
        self._run_requested.emit(self.current)

    def _done(self, job: Job) -> None:
        if self.current is not None and self.current.id == job.id:
            self.current = None
        self._dispatch()
        self.queue_changed.emit()

    @Slot(object)
    def _on_finished(self, result: JobResult) -> None:
        self._done(result.job)

    @Slot(object)  # job_cancelled(job)
    @Slot(object, str)  # job_failed(job, message)
    def _on_ended(self, job: Job, _message: str = "") -> None:
        self._done(job)

    # ------------------------------------------------------------------ shutdown
    def shutdown(self, timeout_ms: int = 30000) -> bool:
        """Cancel everything and stop the thread; True when it stopped in time."""
        if self._stopped:
            return True
        self._stopped = True
        self.cancel_all()
        self.thread.quit()
        ok = self.thread.wait(timeout_ms)
        return bool(ok)
