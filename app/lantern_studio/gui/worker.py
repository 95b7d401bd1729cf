"""The engine worker: the Qt adapter of :class:`~..studio.engine_host.EngineHost`, a QObject living in its
own QThread.

The GUI talks to it only through queued signals (see :mod:`.engine_thread`); its slots call the host (which
holds the pipeline, compiled steps and the running of a job, without Qt) and it answers through
:class:`Answers`, signals that live in the GUI thread, carrying private copies (numpy arrays it will never
touch again): a job's live frames, its result, cancellation or failure, the model's loading, readiness or
failure, and how jobs decode now.
"""

from __future__ import annotations

import sys
import traceback
from typing import Optional

from PySide6.QtCore import QObject, Qt, Signal, Slot

from ..engine.checkpoints import CheckpointError
from ..engine.settings import SettingsError
from ..engine.text import PromptError
from ..studio.engine_host import EngineHost
from ..studio.jobs import Job, ModelInfo


class Answers(QObject):
    """What the worker says, declared once. The object lives in the GUI thread (the job queue makes it
    and hands it to the worker), so everything connected to it runs there, queued in emission order,
    whatever thread emits: the worker emits these from its own thread."""

    model_loading = Signal(object)  # spec
    model_status = Signal(object, str)  # spec, what the load is doing now ("loading text encoder…")
    model_ready = Signal(object)  # ModelInfo
    model_failed = Signal(object, str)  # spec, message
    job_started = Signal(object)  # Job
    frame = Signal(object)  # Frame
    job_finished = Signal(object)  # JobResult
    job_cancelled = Signal(object)  # Job
    job_failed = Signal(object, str)  # Job, message
    # spec, how jobs decode now (ModelInfo.steps: a studio.compiled_steps.StepsVerdict), and what the
    # background compile is doing ("compiling decode steps… 1/2"; "" when nothing)
    steps_changed = Signal(object, object, str)


class _Outbox:
    """The worker's side of :class:`Answers`: an answer to a window that has closed (its Answers
    object deleted while a load or a decode was still running in this thread) is dropped, not raised."""

    def __init__(self, answers: Answers):
        self._answers = answers

    def __getattr__(self, name: str):
        signal = getattr(self._answers, name)
        return _Quiet(signal)


class _Quiet:
    def __init__(self, signal):
        self._signal = signal

    def emit(self, *args) -> None:
        try:
            self._signal.emit(*args)
        except RuntimeError:  # "Signal source has been deleted": nobody is listening any more
            pass


class Worker(QObject):
    _compile_ended = Signal()  # from the compile's thread; queued into this one (connected below)

    def __init__(self, answers: Optional[Answers] = None):
        super().__init__()
        self.answers = answers if answers is not None else Answers()
        self._out = _Outbox(self.answers)
        self._compile_ended.connect(self._adopt_compiled, Qt.ConnectionType.QueuedConnection)
        ended = _Quiet(self._compile_ended)  # the worker may be gone when a cancelled compile ends
        self.host = EngineHost(lambda spec, steps, doing: self._out.steps_changed.emit(spec, steps, doing),
                               ended.emit)

    # ------------------------------------------------------------------ the host's state, as tests see it
    @property
    def pipeline(self):
        return self.host.pipeline

    @property
    def spec(self) -> Optional[str]:
        return self.host.spec

    @property
    def steps(self):
        return self.host.steps

    @property
    def compiled(self) -> bool:
        """Whether jobs decode through compiled steps (engine/compiled.py) once they are compiled."""
        return self.host.compiled

    @property
    def max_fps(self) -> float:
        return self.host.max_fps

    @max_fps.setter
    def max_fps(self, value: float) -> None:
        self.host.max_fps = value

    @property
    def warm(self) -> bool:
        return self.host.warm

    @warm.setter
    def warm(self, value: bool) -> None:
        self.host.warm = value

    def info(self) -> ModelInfo:
        return self.host.info()

    # ------------------------------------------------------------------ model
    def _ensure(self, spec: Optional[str]) -> None:
        """Load ``spec`` through the host unless it is loaded, saying so: loading, each status, ready."""
        if self.host.holds(spec):
            return
        self._out.model_loading.emit(spec)
        self.host.load(spec, lambda message: self._out.model_status.emit(spec, message), self._out.model_ready.emit)

    @Slot(bool)
    def set_compiled(self, on: bool):
        """Compiled decode steps on or off, between jobs (see EngineHost.set_compiled)."""
        self.host.set_compiled(on)

    @Slot()
    def _adopt_compiled(self):
        """The background compile ended (queued here, so never during a job): its twin decodes from the
        next job on, or its failure is said once."""
        self.host.adopt_compiled()

    def stop_compiling(self) -> None:
        """At close (from the GUI thread): a background compile stops after its current graph, silently."""
        self.host.stop_compiling()

    @Slot(object)
    def load_model(self, spec):
        try:
            self._ensure(spec)
        except Exception as e:  # noqa: BLE001 - any failure becomes a banner, never a crash
            if not isinstance(e, (CheckpointError, OSError, ValueError)):
                traceback.print_exc(file=sys.stderr)
            self._out.model_failed.emit(spec, f"{e}")

    # ------------------------------------------------------------------ jobs
    @Slot(object)
    def run_job(self, job: Job):
        self._out.job_started.emit(job)
        if job.cancel_requested:
            self._out.job_cancelled.emit(job)
            return
        try:
            try:
                self._ensure(job.model)
            except Exception as e:  # noqa: BLE001
                self._out.model_failed.emit(job.model, f"{e}")
                raise
            # frames go straight to the answers (not the outbox): a window that closed mid-decode ends it
            result = self.host.run(job, self.answers.frame.emit)
        except (PromptError, SettingsError, CheckpointError) as e:
            self._out.job_failed.emit(job, str(e))
            return
        except Exception as e:  # noqa: BLE001
            traceback.print_exc(file=sys.stderr)
            self._out.job_failed.emit(job, f"{type(e).__name__}: {e}")
            return
        if result is None:
            self._out.job_cancelled.emit(job)
        else:
            self._out.job_finished.emit(result)
