"""The engine host: the studio's one loaded model and the jobs it decodes, without Qt.

One object holds the pipeline (loaded once per spec through :func:`..models.load_pipeline`, warmed, with
the decode threads limited on first use), the person's choice of compiled steps (:mod:`.compiled_steps`)
and the running of one :class:`~.jobs.Job`: its warm-up steps when it asks (``Job.warm``), its decode
through the pipeline's own ``generate``, its live frames, the recogniser's verdict and the machine's load.
It runs in whatever thread calls it; ``gui/worker.py`` is the Qt adapter that calls it from the worker
QThread and turns what it says into the window's answers, and a test calls it directly.

The protocol:

- ``load(spec, on_status, on_ready) → ModelInfo``: loads ``spec`` or reuses it; ``on_status(message)`` hears
  "loading weights…" and the warm-up's messages, ``on_ready(info)`` the model ready (before its compiled
  steps start). A failure raises, and nothing is loaded afterwards.
- ``run(job, on_frame) → JobResult | None``: None when the job was cancelled (``job.cancel_event``);
  PromptError, SettingsError, CheckpointError or any other exception when it failed. ``on_frame(frame)``
  hears partial frames at most ``max_fps`` a second — less when decoding a frame is itself slow, so that
  painting never costs more than about a quarter of the decode time — and the final frame (the
  pipeline's finished or stopped picture) always.
- ``set_compiled(on)``, ``adopt_compiled()``, ``stop_compiling()``: compiled steps; how jobs decode now is
  said to ``on_steps(spec, steps, doing)`` (given at construction), and ``on_compile_ended()`` is called
  from the background compile's thread when it ends: its owner calls ``adopt_compiled`` in the host's
  thread, between jobs.
"""

from __future__ import annotations

import os
import time
from typing import Callable, Optional

import numpy as np

from ..engine.conditioners import NamedClasses, Snapper
from ..models import load_pipeline
from ..models.lantern_profile import read_profile
from .compiled_steps import CompiledSteps, StepsVerdict
from .jobs import UNFILLED, Frame, Job, JobResult, ModelInfo
from .replay import Recording

__all__ = ["MAX_FPS", "WARM_STEPS", "EngineHost"]

MAX_FPS = 30.0
WARM_STEPS = 4  # untimed steps a Compare's half runs first: the prefill and the step shapes its decode uses

_NOTHING = object()  # the loaded spec when nothing is loaded (None is a spec: the bundled model)


def _ignore(*_args) -> None:
    pass


def _limit_threads() -> None:
    from ..threads import configure_decode_threads  # noqa: PLC0415 - torch: loaded on the engine's thread only

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


class EngineHost:
    """The loaded model, compiled steps and one job at a time (see the module's docstring for the protocol).

    ``on_steps(spec, steps, doing)`` hears how jobs decode now (``ModelInfo.steps``, a :class:`StepsVerdict`:
    eager, compiled, eager because compiling failed, or per family as measured) and what the background
    compile does ("compiling decode steps… 1/2"; "" when nothing); ``on_compile_ended()`` is called from the
    compile's thread when it ends. Everything but ``stop_compiling`` is called from one thread;
    ``job.cancel_event`` may be set from any."""

    def __init__(self, on_steps: Callable[[Optional[str], StepsVerdict, str], None] = _ignore,
                 on_compile_ended: Callable[[], None] = _ignore):
        self.on_steps = on_steps
        self.steps = CompiledSteps(lambda message: self.on_steps(self.spec, self.steps.steps, message),
                                   on_compile_ended)
        self.pipeline = None
        self.spec: Optional[str] = None
        self._loaded_spec = _NOTHING
        self._profile = (None, "")  # the loaded model's lantern_profile.json, read once per load
        self.max_fps = MAX_FPS
        self.warm = True  # warm the text encoder, neighbour table and decode path before saying ready
        self._threads_set = False

    @property
    def compiled(self) -> bool:
        """Whether jobs decode through compiled steps (engine/compiled.py) once they are compiled."""
        return self.steps.wanted

    # ------------------------------------------------------------------ model
    def holds(self, spec: Optional[str]) -> bool:
        """Whether ``spec`` is the loaded model (``load`` would reuse it, saying nothing)."""
        return self.pipeline is not None and self._loaded_spec == spec

    def load(self, spec: Optional[str], on_status: Callable[[str], None] = _ignore,
             on_ready: Callable[[ModelInfo], None] = _ignore) -> ModelInfo:
        """The model ``spec`` names, loaded and warmed (or the loaded one, reused): → its ModelInfo.
        ``on_status(message)`` hears what the load does now, ``on_ready(info)`` the model ready, before its
        compiled steps start (the status line says so). A failure raises; nothing is loaded then."""
        if self.holds(spec):
            return self.info()
        if not self._threads_set:
            _limit_threads()
            self._threads_set = True
        try:
            on_status("loading weights…")
            pipe = load_pipeline(spec)
            if self.warm:
                # what the first Generate would otherwise pay for (~10 s for the text encoder on a CPU)
                pipe.warm_up(on_status)
            self.pipeline, self._loaded_spec, self.spec = pipe, spec, spec
            self._profile = read_profile(pipe.source.folder)
            on_ready(self.info())  # ready eagerly: compiled steps follow in the background
            self.steps.model_loaded(pipe)  # a compile started there says so itself
            if not self.steps.compiling:
                self._say_steps()  # e.g. compiling failed earlier this session: the line says why
        except BaseException:  # whatever failed, nothing half-loaded is reused by the next load
            self.pipeline, self._loaded_spec = None, _NOTHING
            raise
        return self.info()

    def info(self) -> ModelInfo:
        """What the window shows of the loaded model (it must be loaded)."""
        p = self.pipeline
        folder = p.source.folder
        snaps = _snaps(p)
        profile, problem = self._profile
        return ModelInfo(self.spec, p.name, p.grid, p.vocab_size, tuple(p.drafters), p.defaults,
                         p.scorer is not None, str(folder) if folder is not None else None,
                         p.precision, _class_names(p), p.conditioner.match if snaps else None,
                         tuple(p.conditioner.offered_styles) if snaps else (),
                         p.conditioner.default_style if snaps else "", _style_previews(p) if snaps else None,
                         self.steps.steps, profile, problem or "")

    # ------------------------------------------------------------------ compiled steps
    def set_compiled(self, on: bool) -> None:
        """Compiled decode steps on or off, between jobs: on compiles the loaded model's steps in the
        background (jobs decode eagerly until they are in), off goes back to eager at once; ``on_steps``
        hears how jobs decode now."""
        self.steps.want(on)
        if self.pipeline is not None:
            self._say_steps()

    def adopt_compiled(self) -> bool:
        """The background compile ended (call it in the host's thread, never during a job): its twin decodes
        from the next job on, or its failure is said once. True when something changed."""
        changed = self.steps.adopt()
        if changed and self.pipeline is not None:
            self._say_steps()
        return changed

    def stop_compiling(self) -> None:
        """At close (from any thread): a background compile stops after its current graph, silently."""
        self.steps.cancel()

    def _say_steps(self) -> None:
        self.on_steps(self.spec, self.steps.steps, self.steps.doing if self.steps.compiling else "")

    # ------------------------------------------------------------------ jobs
    def run(self, job: Job, on_frame: Callable[[Frame], None] = _ignore) -> Optional[JobResult]:
        """Decode ``job``: → its result, or None when it was cancelled (before or during). Loads
        ``job.model`` first if it is not loaded (silently: call ``load`` first to hear it). Raises
        PromptError / SettingsError / CheckpointError on bad input, anything else on a failure."""
        if job.cancel_requested:
            return None
        self.load(job.model)
        before = self.steps.steps
        # a compile that ended while the last job ran is in from this job on; a replayed record's path
        pipe = self.steps.for_job(job.steps, job.cancel_event.is_set, job.settings)
        if self.steps.steps != before:
            self._say_steps()
        warm = self._warm(pipe, job) if job.warm else None
        view = _LiveView(self, pipe, job, on_frame)
        done = pipe.generate(job.prompt, job.settings, on_event=view.step, should_stop=job.cancel_event.is_set)
        result = self._result(pipe, job, view, done)
        if result is not None:
            result.warm_seconds = warm
        return result

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

    @staticmethod
    def _result(pipe, job: Job, view: "_LiveView", result) -> Optional[JobResult]:
        """The decode's end as the studio keeps it: the last frame sent, the recogniser's verdict; None when
        it was cancelled."""
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
    ``host.max_fps`` a second, and spaced so that decoding them costs at most about a quarter
    of the time. The finished (or stopped) picture is the pipeline's own, sent by the host."""

    def __init__(self, host: EngineHost, pipe, job: Job, on_frame: Callable[[Frame], None]):
        n = pipe.grid * pipe.grid
        self.host, self.pipe, self.job, self.on_frame = host, pipe, job, on_frame
        self.tokens = np.zeros(n, dtype=np.int64)
        self.decisions = np.full(n, UNFILLED, dtype=np.uint8)
        self.recording = Recording(n)
        self.event = None  # the last StepEvent
        self.shown: Optional[Frame] = None  # the last frame sent
        self._sent_at, self._cost = -1e9, 0.0

    def step(self, ev) -> None:
        self.recording.add(ev)
        self.tokens[ev.positions] = ev.tokens
        self.decisions[ev.positions] = ev.decisions
        self.event = ev
        if ev.done:
            return  # the final frame is the finished image
        if time.perf_counter() - self._sent_at >= max(1.0 / self.host.max_fps, 3.0 * self._cost):
            t = time.perf_counter()
            image = self.pipe.partial_image(self.tokens, self.decisions != UNFILLED)
            self._cost = time.perf_counter() - t
            self.send(image, final=False)
            self._sent_at = time.perf_counter()

    def send(self, image, final: bool) -> Frame:
        ev = self.event
        f = Frame(self.job.id, np.array(image, dtype=np.uint8, copy=True), self.decisions.copy(), ev.n_fixed,
                  ev.total, ev.target_forwards, ev.drafter_forwards, ev.elapsed, final)
        self.on_frame(f)
        self.shown = f
        return f
