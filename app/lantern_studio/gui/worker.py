"""The engine worker: a QObject living in its own QThread that owns the pipeline.

The GUI talks to it only through queued signals (see :mod:`.engine_thread`); it
answers through :class:`Answers`, signals that live in the GUI thread, carrying private copies (numpy arrays it will never touch
again). A job runs through the pipeline's own ``generate``, whose step events
feed the live view: partial images are decoded here and emitted at most ~30
times a second — less when decoding a frame is itself slow, so that painting
never costs more than about a quarter of the decode time — and the final frame
(the pipeline's finished or stopped picture) is always sent.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from typing import Optional

import numpy as np
from PySide6.QtCore import QObject, Qt, Signal, Slot

from ..engine.checkpoints import CheckpointError
from ..engine.conditioners import NamedClasses, Snapper
from ..engine.settings import SettingsError
from ..engine.text import PromptError
from ..models import load_pipeline
from ..studio.compiled_steps import CompiledSteps
from ..studio.jobs import UNFILLED, Frame, Job, JobResult, ModelInfo
from ..studio.replay import Recording

MAX_FPS = 30.0
WARM_STEPS = 4  # untimed steps a Compare's half runs first: the prefill and the step shapes its decode uses


def _limit_threads() -> None:
    from ..threads import configure_decode_threads  # noqa: PLC0415 - torch: loaded on the worker thread only

    configure_decode_threads()


def _class_names(pipe) -> Optional[tuple]:
    if _snaps(pipe):
        return None  # its prompt box takes any text (the match line shows what it matched)
    c = pipe.conditioner
    return tuple(c.names) if isinstance(c, NamedClasses) and c.names else None


def _snaps(pipe) -> bool:
    """Whether the model snaps free text to emoji identities (engine.snap.IdentityConditioner)."""
    return isinstance(pipe.conditioner, Snapper)


def _style_previews(pipe) -> Optional[dict]:
    folder = pipe.source.folder
    if folder is None:
        return None
    return {s: str(folder / "styles" / f"{s}.png") for s in pipe.conditioner.offered_styles
            if (folder / "styles" / f"{s}.png").is_file()}


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
    # spec, how jobs decode now (ModelInfo.steps: "eager", "compiled" or why compiling failed), and what the
    # background compile is doing ("compiling decode steps… 1/2"; "" when nothing)
    steps_changed = Signal(object, str, str)


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
        self.steps = CompiledSteps(lambda message: self._out.steps_changed.emit(self.spec, self.steps.steps, message),
                                   ended.emit)
        self.pipeline = None
        self.spec: Optional[str] = None
        self._loaded_spec = object()  # sentinel: nothing loaded
        self.max_fps = MAX_FPS
        self.warm = True  # warm the text encoder, neighbour table and decode path before saying ready
        self._threads_set = False

    @property
    def compiled(self) -> bool:
        """Whether jobs decode through compiled steps (engine/compiled.py) once they are compiled."""
        return self.steps.wanted

    # ------------------------------------------------------------------ model
    def _ensure(self, spec: Optional[str]):
        if self.pipeline is not None and self._loaded_spec == spec:
            return self.pipeline
        if not self._threads_set:
            _limit_threads()
            self._threads_set = True
        self._out.model_loading.emit(spec)
        self._out.model_status.emit(spec, "loading weights…")
        pipe = load_pipeline(spec)
        if self.warm:
            # what the first Generate would otherwise pay for (~10 s for the text encoder on a CPU)
            pipe.warm_up(lambda message: self._out.model_status.emit(spec, message))
        self.pipeline, self._loaded_spec, self.spec = pipe, spec, spec
        self._out.model_ready.emit(self.info())  # ready eagerly: compiled steps follow in the background
        self.steps.model_loaded(pipe)  # a compile started there says so itself
        if not self.steps.compiling:
            self._say_steps()  # e.g. compiling failed earlier this session: the line says why
        return pipe

    def info(self) -> ModelInfo:
        p = self.pipeline
        folder = p.source.folder
        snaps = _snaps(p)
        return ModelInfo(self.spec, p.name, p.grid, p.vocab_size, tuple(p.drafters), p.defaults,
                         p.scorer is not None, str(folder) if folder is not None else None,
                         p.precision, _class_names(p), p.conditioner.match if snaps else None,
                         tuple(p.conditioner.offered_styles) if snaps else (),
                         p.conditioner.default_style if snaps else "", _style_previews(p) if snaps else None,
                         self.steps.steps)

    @Slot(bool)
    def set_compiled(self, on: bool):
        """Compiled decode steps on or off, between jobs: on compiles the loaded model's steps in the
        background (jobs decode eagerly until they are in), off goes back to eager at once; the status
        line hears how jobs decode now."""
        self.steps.want(on)
        if self.pipeline is not None:
            self._say_steps()

    @Slot()
    def _adopt_compiled(self):
        """The background compile ended (queued here, so never during a job): its twin decodes from the
        next job on, or its failure is said once."""
        if self.steps.adopt() and self.pipeline is not None:
            self._say_steps()

    def _say_steps(self) -> None:
        self._out.steps_changed.emit(self.spec, self.steps.steps, self.steps.doing if self.steps.compiling else "")

    def stop_compiling(self) -> None:
        """At close (from the GUI thread): a background compile stops after its current graph, silently."""
        self.steps.cancel()

    @Slot(object)
    def load_model(self, spec):
        try:
            self._ensure(spec)
        except Exception as e:  # noqa: BLE001 - any failure becomes a banner, never a crash
            self.pipeline, self._loaded_spec = None, object()
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
                pipe = self._ensure(job.model)
            except Exception as e:  # noqa: BLE001
                self.pipeline, self._loaded_spec = None, object()
                self._out.model_failed.emit(job.model, f"{e}")
                raise
            before = self.steps.steps
            # a compile that ended while the last job ran is in from this job on; a replayed record's path
            pipe = self.steps.for_job(job.steps, job.cancel_event.is_set, job.settings)
            if self.steps.steps != before:
                self._say_steps()
            warm = self._warm(pipe, job) if job.warm else None
            result = self._decode(pipe, job)
            if result is not None:
                result.warm_seconds = warm
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

    @staticmethod
    def _warm(pipe, job: Job) -> float:
        """A few untimed steps of ``job``'s own decode on ``pipe`` (its path: eager or compiled, its drafter
        and shapes), so that what a path pays on first use (allocations, a step shape compiling) stays out of
        the job's clock; → the seconds they took. A Compare's halves ask for it (Job.warm)."""
        t = time.perf_counter()
        run, _c = pipe.decoding(job.prompt, job.settings, job.cancel_event.is_set)
        for i, _ev in enumerate(run):
            if i + 1 >= WARM_STEPS:
                break
        return time.perf_counter() - t

    def _decode(self, pipe, job: Job) -> Optional[JobResult]:
        view = _LiveView(self, pipe, job)
        result = pipe.generate(job.prompt, job.settings, on_event=view.step, should_stop=job.cancel_event.is_set)
        ev = view.event
        if result.cancelled or ev is None or not ev.done:
            if ev is not None and (view.shown is None or view.shown.n_fixed != ev.n_fixed):
                view.send(result.image, final=True)  # show where it stopped
            return None
        final = view.send(result.image, final=True)  # the finished image, always sent
        load = _load()
        score, warning, verdict = None, None, None
        if pipe.scorer is not None:
            try:
                judge = getattr(pipe.scorer, "verdict", None)  # what it saw, in words (a plain scorer: none)
                verdict = judge(final.image, job.prompt) if judge is not None else None
                # None: the scorer cannot judge this prompt
                value = verdict["probability"] if verdict is not None else pipe.scorer(final.image, job.prompt)
                score = None if value is None else float(value)
            except Exception as e:  # noqa: BLE001 - a broken recogniser must not lose the image
                warning = f"quality score unavailable: {type(e).__name__}: {e}"
        return JobResult(job, final.image.copy(), result.tokens.reshape(-1).astype(np.int64, copy=True),
                         np.array(result.decisions.reshape(-1), dtype=np.uint8, copy=True),
                         result.stats.to_dict(), result.note, pipe.name, score, warning, view.recording,
                         verdict=verdict, load=load)


def _load() -> Optional[tuple]:
    """(1-minute load average, CPUs) now, or None where the system does not say (it costs a file read)."""
    try:
        return os.getloadavg()[0], os.cpu_count() or 1
    except (AttributeError, OSError):
        return None


class _LiveView:
    """One job's decode as the canvas sees it, fed each StepEvent by ``pipe.generate``: the
    tokens and decisions so far, the replay recording, and the partial frames — at most
    ``max_fps`` a second, and spaced so that decoding them costs at most about a quarter
    of the time. The finished (or stopped) picture is the pipeline's own, sent by the worker."""

    def __init__(self, worker: Worker, pipe, job: Job):
        n = pipe.grid * pipe.grid
        self.worker, self.pipe, self.job = worker, pipe, job
        self.tokens = np.zeros(n, dtype=np.int64)
        self.decisions = np.full(n, UNFILLED, dtype=np.uint8)
        self.recording = Recording(n)
        self.event = None  # the last StepEvent
        self.shown: Optional[Frame] = None  # the last frame sent
        self._sent_at, self._cost = -1e9, 0.0

    def step(self, ev) -> None:
        w = self.worker
        self.recording.add(ev)
        self.tokens[ev.positions] = ev.tokens
        self.decisions[ev.positions] = ev.decisions
        self.event = ev
        if ev.done:
            return  # the final frame is the finished image
        if time.perf_counter() - self._sent_at >= max(1.0 / w.max_fps, 3.0 * self._cost):
            t = time.perf_counter()
            image = self.pipe.partial_image(self.tokens, self.decisions != UNFILLED)
            self._cost = time.perf_counter() - t
            self.send(image, final=False)
            self._sent_at = time.perf_counter()

    def send(self, image, final: bool) -> Frame:
        ev = self.event
        f = Frame(self.job.id, np.array(image, dtype=np.uint8, copy=True), self.decisions.copy(), ev.n_fixed,
                  ev.total, ev.target_forwards, ev.drafter_forwards, ev.elapsed, final)
        self.worker.answers.frame.emit(f)
        self.shown = f
        return f
