"""The GUI-side half of the engine: owns the worker thread and hands it the queue's jobs.

The queue's order and cancel rules are the studio model's (:mod:`..studio.queue`); this object runs them
against the worker. The queue lives in the GUI thread because the worker is busy inside a decode loop
while a job runs and could not take new requests: the worker gets one job at a time over a queued signal,
and the next is handed out when it reports the current one finished, cancelled or failed. Cancelling the
running job sets its ``cancel_event``, which the decode loop polls between steps.

The worker's answers are declared once, on :class:`~.worker.Answers`, which this object makes in the GUI
thread: connect to ``jobs.answers.frame`` and the rest. This object's own bookkeeping is connected first,
so the queue's state (what the model load is doing, which job runs) is up to date before anyone else
hears an answer.
"""

from __future__ import annotations

from typing import Deque, Optional

from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot

from ..studio.jobs import Job, JobResult
from ..studio.queue import QueueState
from .worker import Answers, Worker

Q = Qt.ConnectionType.QueuedConnection


class JobQueue(QObject):
    # requests to the worker (queued → run in the worker thread)
    _run_requested = Signal(object)
    _load_requested = Signal(object)
    _compiled_requested = Signal(bool)
    queue_changed = Signal()  # the queue's state changed: redraw it

    def __init__(self, parent: Optional[QObject] = None, state: Optional[QueueState] = None):
        super().__init__(parent)
        self.state = state if state is not None else QueueState()
        self.model_spec: Optional[str] = None
        self.answers = Answers(self)  # in the GUI thread: its receivers run here
        self.thread = QThread()
        self.thread.setObjectName("lantern-engine")
        self.worker = Worker(self.answers)
        self.worker.moveToThread(self.thread)
        self._run_requested.connect(self.worker.run_job, Q)
        self._load_requested.connect(self.worker.load_model, Q)
        self._compiled_requested.connect(self.worker.set_compiled, Q)
        a = self.answers
        a.model_loading.connect(self._on_loading)
        a.model_status.connect(self._on_status)
        a.model_ready.connect(self._on_loaded)
        a.model_failed.connect(self._on_loaded)
        a.job_finished.connect(self._on_finished)
        a.job_cancelled.connect(self._on_ended)
        a.job_failed.connect(self._on_ended)
        self.thread.start()

    # ------------------------------------------------------------------ the model's state, read through
    @property
    def current(self) -> Optional[Job]:
        return self.state.current

    @property
    def pending(self) -> Deque[Job]:
        return self.state.pending

    @property
    def loading(self) -> Optional[str]:
        return self.state.loading

    @loading.setter
    def loading(self, text: Optional[str]) -> None:
        self.state.loading = text

    @property
    def busy(self) -> bool:
        return self.state.busy

    def position(self, job: Job) -> Optional[int]:
        return self.state.position(job)

    def pending_in_group(self, group: int) -> list:
        return self.state.pending_in_group(group)

    # ------------------------------------------------------------------ requests
    def load_model(self, spec: Optional[str]) -> None:
        self.model_spec = spec
        self._load_requested.emit(spec)

    def set_compiled(self, on: bool) -> None:
        """Decode through compiled steps (or not): applied by the worker between jobs, before any
        load asked for after this call."""
        self._compiled_requested.emit(bool(on))

    def changed(self) -> None:
        """The queue's state was changed (here or by the studio model): run what can run, redraw."""
        self._dispatch()
        self.queue_changed.emit()

    def cancel_current(self) -> Optional[Job]:
        job = self.state.cancel_current()
        self.queue_changed.emit()
        return job

    def cancel_job(self, job_id: int) -> None:
        self.state.cancel(job_id)
        self.queue_changed.emit()

    def cancel_all(self) -> None:
        self.state.cancel_all()
        self.queue_changed.emit()

    # ------------------------------------------------------------------ worker answers
    @Slot(object)
    def _on_loading(self, _spec) -> None:
        self.state.loading = "loading model…"

    @Slot(object, str)
    def _on_status(self, _spec, message: str) -> None:
        self.state.loading = message
        self.queue_changed.emit()

    @Slot(object)  # model_ready(info)
    @Slot(object, str)  # model_failed(spec, message)
    def _on_loaded(self, _info_or_spec, _message: str = "") -> None:
        self.state.loading = None
        self.queue_changed.emit()

    def _dispatch(self) -> None:
        job = self.state.take_next()
        if job is not None:
            self._run_requested.emit(job)

    @Slot(object)
    def _on_finished(self, result: JobResult) -> None:
        self.state.ended(result.job)
        self.changed()

    @Slot(object)  # job_cancelled(job)
    @Slot(object, str)  # job_failed(job, message)
    def _on_ended(self, job: Job, _message: str = "") -> None:
        self.state.ended(job)
        self.changed()

    # ------------------------------------------------------------------ shutdown
    def shutdown(self, timeout_ms: int = 30000) -> bool:
        """Cancel everything and stop the thread; True when it stopped in time."""
        if self.state.stopped:
            return True
        self.state.stopped = True
        self.worker.stop_compiling()  # a background compile is left to end on its own, unheard
        self.cancel_all()
        self.thread.quit()
        ok = self.thread.wait(timeout_ms)
        return bool(ok)
