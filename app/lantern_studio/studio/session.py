"""The studio session: what the studio does when a person asks for something, without Qt.

It owns the state under the window (:class:`~.display.Studio`: the queue, Compare pairs, the ×4 grid, which
job the canvas follows), the history store, the preferences and the loaded model's :class:`ModelInfo`, and it
talks to the engine through a link (:class:`EngineLink`): ``load(spec)`` and ``run(job)`` are asked, and the
link's answers come back, in the session's own thread, as calls of the ``on_*`` methods below (the studio's
link is gui/engine_link.py's worker thread; a test's runs the engine in its own thread).

Requests (Generate, Compare, ×4, Sweep, cancel, a model, Save) check their input, change the state, hand the
next job to the link and publish typed events (:mod:`.events`) that the views draw; an answer updates the
state first (the queue hands out the next job, a finished picture gets its history row) and then publishes.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Callable, List, Optional, Protocol

import numpy as np
from PIL import Image

from ..engine.settings import GenerationSettings, SettingsError
from ..engine.text import PromptError, check_prompt
from ..export import ExportError, save_png, slug
from ..models import BUNDLED_NAME, TINY_DEMO, is_bundled
from ..models.catalogue import CATALOGUE
from ..records import RecordError, png_text
from .compare import COMPILED, EAGER
from .compiled_steps import COMPILED_STEPS, StepsVerdict
from .display import Studio, jsonable
from .events import (
    Events, FrameShown, JobFinished, JobQueued, JobStarted, JobStopped, ModelFailed, ModelLoading, ModelReady,
    Notice, QueueChanged, Said, StepsChanged,
)
from .history_store import Entry, HistoryStore
from .jobs import Frame, Job, JobResult, ModelInfo
from .preferences import KeyValueStore, StudioPreferences
from .replay import recording_of
from .sweep import SEEDS as SWEEP_SEEDS, SweepSet, ladder, problem
from .sweep import ROLE as SWEEP_ROLE
from .variations import ROLE as VARIATION_ROLE
from .variations import VariationSet


class EngineLink(Protocol):
    """The engine, as the session asks it: each call returns at once, the answers come later (``on_*``)."""

    def load(self, spec: Optional[str]) -> None: ...

    def run(self, job: Job) -> None: ...

    def set_compiled(self, on: bool) -> None: ...


class StudioSession:
    def __init__(self, data_dir: Path, link: EngineLink, prefs: Optional[StudioPreferences] = None,
                 store: Optional[KeyValueStore] = None):
        self.display = Studio()
        self.queue = self.display.queue
        self.history = HistoryStore(Path(data_dir))
        self.history_open = True
        self.prefs = prefs if prefs is not None else StudioPreferences.defaults()
        self.store = store  # where the preferences are written (None: nowhere)
        self.events = Events()
        self.link = link
        self.model_info: Optional[ModelInfo] = None
        self.model_spec: Optional[str] = self.prefs.model
        self.last_entry: Optional[Entry] = None
        # the controls hold a person's (or a saved) settings: a model that gets ready later keeps them
        self.settings_chosen = self.prefs.settings is not None
        self.settings_model: Optional[str] = None  # the model whose defaults or runs the settings are for

    @classmethod
    def opened(cls, data_dir: Path, link: EngineLink, store: KeyValueStore) -> "StudioSession":
        return cls(data_dir, link, StudioPreferences.read(store), store)

    def remember(self) -> None:
        """Write the preferences now (a choice a person just made survives a crash)."""
        if self.store is not None:
            self.prefs.write(self.store)

    # ------------------------------------------------------------------ what the views read
    @property
    def loading(self) -> Optional[str]:
        """What the model load is doing (None: no load running)."""
        return self.queue.loading

    def decode_path(self) -> str:
        """The one path every job of a Compare or a Sweep decodes on: compiled when jobs decode compiled now,
        else eager (also where measured timings pick per family: one path keeps the ratios about the method)."""
        return COMPILED if self.model_info is not None and self.model_info.steps == COMPILED_STEPS else EAGER

    @property
    def vocab(self) -> Optional[int]:
        return self.model_info.vocab_size if self.model_info is not None else None

    # ------------------------------------------------------------------ requests
    def checked(self, prompt: str, settings: GenerationSettings) -> Optional[GenerationSettings]:
        """``settings`` validated for the model (and the prompt checked), or None after a Notice says why."""
        try:
            check_prompt(prompt)
            return settings.validate(self.vocab)
        except (PromptError, SettingsError) as e:
            self.events.publish(Notice(str(e), topic="input"))
            return None

    def _queued(self, jobs: List[Job], said: str = "") -> None:
        """A request's jobs are in the queue (and the first handed to the engine, when none ran): say so."""
        self.settings_chosen = True  # what ran is what the controls hold
        self.events.publish(JobQueued(tuple(jobs), self.loading))
        if said:
            self.events.publish(Said(said, 10000))

    def generate(self, prompt: str, settings: GenerationSettings) -> Optional[Job]:
        """One job of ``prompt`` with ``settings`` (their seed is the one it draws)."""
        s = self.checked(prompt, settings)
        if s is None:
            return None
        job = self.display.submit(prompt.strip(), s, self.model_spec)
        self._dispatch()
        waits = f"#{job.id} queued: the model is still getting ready ({self.loading})" if self.loading else ""
        self._queued([job], waits)
        return job

    def compare(self, prompt: str, settings: GenerationSettings) -> Optional[tuple]:
        """Vanilla, then ``settings``, on one prompt and seed and one decode path: a race."""
        s = self.checked(prompt, settings)
        if s is None:
            return None
        if s.drafter == "none":
            self.events.publish(Notice("Compare runs vanilla decoding against the current settings: pick a "
                                       "drafter first.", topic="input", level="info"))
            return None
        pair = self.display.submit_compare(prompt.strip(), s, self.model_spec, self.decode_path())
        self._dispatch()
        self._queued([pair.vanilla.job, pair.lantern.job])
        return pair.vanilla.job, pair.lantern.job

    def variations(self, prompt: str, settings: GenerationSettings, draw: Callable[[], int]) -> Optional[VariationSet]:
        """Generate ×4: four jobs, each with a seed ``draw`` gives that this session never used."""
        s = self.checked(prompt, settings)
        if s is None:
            return None
        seeds = self.display.variation_seeds(draw)
        v = self.display.submit_variations(prompt.strip(), s, self.model_spec, seeds)
        self._dispatch()
        waits = f" · waiting for the model ({self.loading})" if self.loading else ""
        self._queued([c.job for c in v.cells], f"Generate ×4 queued: seeds {', '.join(map(str, seeds))}{waits}")
        return v

    def sweep(self, axis: str, prompt: str, settings: GenerationSettings, seeds: int = SWEEP_SEEDS
              ) -> Optional[SweepSet]:
        """Sweep δ / k: the vanilla run and the ladder's rungs at ``seeds`` seeds each, one group, on one path,
        each warmed first."""
        s = self.checked(prompt, settings)
        if s is None:
            return None
        why = problem(axis, s, self.vocab)
        if why is not None:
            self.events.publish(Notice(why, topic="input", level="info"))
            return None
        has_score = bool(self.model_info is not None and self.model_info.has_score)
        sweep = self.display.submit_sweep(axis, prompt.strip(), s, ladder(axis, s, self.vocab), self.model_spec,
                                          has_score, self.decode_path(), seeds)
        self._dispatch()
        self._queued(list(sweep.jobs))
        return sweep

    def cancel(self) -> List[Job]:
        """Esc: the running job stops, and the rest of its request (a Compare's pair, a ×4, a Sweep)."""
        stopped = self.display.cancel()
        if stopped:
            first, rest = stopped[0], len(stopped) - 1
            if first.role == VARIATION_ROLE:
                said = f"Cancelling the Generate ×4 (#{first.id}{f' and the {rest} waiting' if rest else ''})…"
            elif first.role == SWEEP_ROLE:
                said = f"Cancelling the sweep (#{first.id} and {rest} waiting)…"
            elif rest or first.group is not None:
                said = f"Cancelling the Compare (#{first.id} and its pair)…"
            else:
                said = f"Cancelling #{first.id}…"
            self.events.publish(Said(said))
        self._dispatch()
        return stopped

    def cancel_all(self) -> None:
        self.display.cancel_all()
        self._dispatch()
        self.events.publish(Said("Cancelled all jobs"))

    def cancel_job(self, job_id: int) -> None:
        self.queue.cancel(job_id)
        self._dispatch()

    def _dispatch(self) -> None:
        """Hand the next job to the engine when none runs; the views hear the queue changed."""
        job = self.queue.take_next()
        if job is not None:
            self.link.run(job)
        self.events.publish(QueueChanged())

    # ------------------------------------------------------------------ the model
    def choose_model(self, spec: Optional[str]) -> None:
        if not is_bundled(spec) and spec != TINY_DEMO and spec not in CATALOGUE:
            spec = str(Path(spec).expanduser())
            self.prefs.remember_model(spec)
        self.model_spec = spec
        self.prefs.model = spec
        self.link.load(spec)

    def set_compiled(self, on: bool) -> None:
        self.prefs.compiled_decoding = bool(on)
        self.remember()
        self.link.set_compiled(bool(on))

    # ------------------------------------------------------------------ the engine's answers
    def on_model_loading(self, spec) -> None:
        self.queue.loading = "loading model…"
        self.events.publish(ModelLoading(spec, "loading model…", started=True))

    def on_model_status(self, spec, message: str) -> None:
        self.queue.loading = message
        self.events.publish(ModelLoading(spec, message))
        self.events.publish(QueueChanged())

    def on_model_ready(self, info: ModelInfo) -> None:
        self.queue.loading = None
        changed = self.model_info is None or self.model_info.name != info.name
        # another model than the one the controls' settings were for: its own defaults (sampling, k, δ), since
        # one model's sampling draws poorly on another (the v5 preview at the default's T 0.5 / top-k 10)
        switched = self.settings_model is not None and self.settings_model != info.name
        if switched:
            self.settings_chosen = False
        self.model_info, self.settings_model = info, info.name
        self.events.publish(QueueChanged())
        self.events.publish(ModelReady(info, changed, switched))
        self.settings_chosen = True
        if changed and info.profile_problem:  # the model loads; only the sliders' measured notes are missing
            self.events.publish(Notice(info.profile_problem, topic="model", level="warning"))

    def on_model_failed(self, spec, message: str) -> None:
        self.queue.loading = None
        self.model_info = None
        self.events.publish(QueueChanged())
        self.events.publish(ModelFailed(spec, message))
        what = f"The bundled model ({spec or BUNDLED_NAME})" if is_bundled(spec) else f"The model {spec}"
        self.events.publish(Notice(f"{what} could not be loaded: {message}\nOpen a model folder, or use the tiny "
                                   "demo model (random weights: it draws noise, but shows how decoding works).",
                                   topic="model", actions=("model",)))

    def on_steps_changed(self, spec, steps: StepsVerdict, doing: str) -> None:
        """The background compile moved on (``doing``) or ended: how steps run now."""
        if self.model_info is None or spec != self.model_info.spec:
            return
        compiled_now = steps != self.model_info.steps and steps == COMPILED_STEPS
        self.model_info = replace(self.model_info, steps=steps)
        self.events.publish(StepsChanged(self.model_info, doing, compiled_now))

    def on_job_started(self, job: Job) -> None:
        target = self.display.started(job)
        self.events.publish(JobStarted(job, target))
        self.events.publish(QueueChanged())

    def on_frame(self, f: Frame) -> None:
        target = self.display.target_of(f)
        if target is not None:
            self.events.publish(FrameShown(f, target))

    def on_job_finished(self, r: JobResult) -> None:
        self.queue.ended(r.job)
        self._dispatch()
        record = jsonable(r.record())
        on_lane = self.display.shows_race_lane(r.job)
        cell = self.display.variation_of(r.job)
        followed = r.job.id == self.display.shown_job_id
        pair = self.display.job_finished(r, record)
        entry = self._save(r, record) if self.history_open else None
        self.events.publish(JobFinished(r, record, entry, cell.index if cell is not None else None, pair, on_lane,
                                        followed))
        self.events.publish(Said(f"Done #{r.job.id} in {r.stats['wall_seconds']:.2f} s", 6000, queued=True))
        if r.warning:
            self.events.publish(Notice(r.warning, topic="score", level="warning"))

    def _save(self, r: JobResult, record: dict) -> Optional[Entry]:
        try:
            entry = self.history.add(r.image, record, r.decisions)
        except Exception as e:  # noqa: BLE001 - a full disk must not take the app down
            self.events.publish(Notice(f"The image could not be saved to the history: {e}", topic="history"))
            return None
        self.last_entry = entry
        self.display.variation_saved(r.job, entry.id)
        return entry

    def on_job_cancelled(self, job: Job) -> None:
        self._stopped(job, "Cancelled", "")
        self.events.publish(Said(f"Cancelled #{job.id}", 6000, queued=True))

    def on_job_failed(self, job: Job, message: str) -> None:
        self._stopped(job, "Failed", message)
        actions = ("model",) if self.model_info is None else ()  # the model failed: keep the way out on offer
        self.events.publish(Notice(f"Generation #{job.id} failed: {message}",
                                   topic="model" if actions else "job", actions=actions))

    def _stopped(self, job: Job, how: str, message: str) -> None:
        self.queue.ended(job)
        self._dispatch()
        cell = self.display.variation_of(job)
        on_lane = cell is None and self.display.shows_race_lane(job)
        pair = self.display.job_ended(job, how.lower())
        self.events.publish(JobStopped(job, how, message, cell.index if cell is not None else None, pair, on_lane))

    # ------------------------------------------------------------------ pictures from the history
    def open_entry(self, e: Entry) -> Optional[tuple]:
        """A history entry opened: (its settings or None, its image, its replay or None); None when its PNG
        cannot be read (a Notice says why). The canvas shows it, finished, from now on."""
        settings = None
        try:
            settings = GenerationSettings.from_dict(e.settings)
        except (TypeError, ValueError) as err:
            self.events.publish(Notice(f"This history entry's settings could not be restored: {err}", topic="history"))
        try:
            png_text(e.path)  # the header's size limits, checked before any pixel is decoded
            with Image.open(e.path) as img:
                image = np.asarray(img.convert("RGB")).copy()
        except (OSError, RecordError, Image.DecompressionBombError) as err:
            self.events.publish(Notice(f"{e.path}: could not be read ({err})", topic="history"))
            return None
        self.display.show_history(image, e.record)
        recording = recording_of(e.record)
        ok = recording is not None and e.decisions is not None and e.decisions.size == recording.total \
            and image.shape[0] % int(round(recording.total ** 0.5)) == 0
        if self.model_info is not None and e.model and e.model != self.model_info.name:
            self.events.publish(Notice(f"This image was made with the model {e.model}; the current model is "
                                       f"{self.model_info.name}, so regenerating it gives a different picture.",
                                       topic="history", level="info"))
        return settings, image, recording if ok else None

    def chart_history(self, model_name: str, most: int) -> List[Entry]:
        """The model's newest ``most`` history rows, oldest first (a restart refills the chart from them)."""
        if not self.history_open:
            return []
        runs = [e for e in self.history.entries(limit=4 * most) if e.model == model_name]
        return runs[:most][::-1]

    # ------------------------------------------------------------------ export
    def suggested_name(self) -> str:
        record = self.display.finished.record if self.display.finished is not None else {}
        return f"{slug(record.get('prompt', 'lantern'))}.png"

    def exportable(self) -> bool:
        """Whether there is a finished picture to export; a Notice says so when there is none."""
        if self.display.finished is None:
            self.events.publish(Notice("Nothing to export yet: generate an image or pick one from the history.",
                                       level="info"))
        return self.display.finished is not None

    def save_png(self, target: Path, factor: int, method: str) -> Optional[Path]:
        """The finished picture (with its record) as a PNG at ``target``; None after a Notice says why not."""
        if not self.exportable():
            return None
        done = self.display.finished
        try:
            save_png(target, done.image, done.record, overwrite=True, factor=factor, method=method)
        except (ExportError, ValueError) as e:
            self.events.publish(Notice(f"Export failed: {e}", topic="export"))
            return None
        self.events.publish(Said(f"Saved {target}", 6000))
        return target

    def close(self) -> None:
        """At the end: the preferences written, the history closed."""
        self.remember()
        self.history.close()
        self.history_open = False

