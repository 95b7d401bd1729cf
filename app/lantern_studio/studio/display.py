"""The studio window's state and rules, under the Qt window (``gui/main_window.py`` forwards each Qt
event here and redraws from what it is told).

It holds the queue (:class:`QueueState`), the Compare pairs (:class:`ComparePair`, by group), the latest
Generate ×4 (:class:`VariationSet`), which job the canvas follows, which view shows it (the single canvas,
the two race lanes of a Compare, or the 2×2 grid of variations), and the finished picture that Save, Copy and
dragging export."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Set

import numpy as np

from ..engine.settings import GenerationSettings
from .jobs import Frame, Job, JobResult
from .compare import COMPILED, EAGER, LANTERN, ROLES, VANILLA, ComparePair
from .queue import QueueState
from .sweep import SEEDS as SWEEP_SEEDS, SweepSet
from .variations import COUNT as VARIATIONS
from .variations import ROLE as VARIATION_ROLE
from .variations import Cell, VariationSet, fresh_seeds

SINGLE, RACE, GRID = "single", "race", "grid"  # the canvas column's three views


def jsonable(record: dict) -> dict:
    """A generation record as the history and the PNG store it (numbers and strings only)."""
    return json.loads(json.dumps(record, default=str))


@dataclass
class Finished:
    """The picture Save / Copy / drag export, with its generation record."""

    image: np.ndarray
    record: dict
    job_id: Optional[int] = None  # None: from the history


@dataclass(frozen=True)
class Target:
    """Where a job's frames are drawn: the single canvas, one lane of the race view, or one cell of the
    variations grid (drawn there even while the canvas column shows another view)."""

    view: str  # SINGLE | RACE | GRID
    lane: Optional[str] = None  # VANILLA | LANTERN in the race view
    cell: Optional[int] = None  # 0 … 3 in the variations grid


class Studio:
    def __init__(self) -> None:
        self.queue = QueueState()
        self.pairs: Dict[int, ComparePair] = {}  # the Compares not finished or stopped yet, by group
        self.race: Optional[ComparePair] = None  # the pair the race view shows (running, done or stopped)
        self.variations: Optional[VariationSet] = None  # the latest Generate ×4 (the grid shows it)
        self.view = SINGLE
        self.shown_job_id: Optional[int] = None  # the job whose frames the canvas (or a lane) follows
        self.finished: Optional[Finished] = None
        self.canvas_finished = False  # the single canvas shows the finished picture (not a partial one)
        self.last_result: Optional[JobResult] = None
        self._groups = itertools.count(1)
        self.seeds_used: Set[int] = set()  # every seed a job of this session was queued with
        # the history entry last opened: (prompt, settings, "compiled" | "eager"); a Generate of that prompt
        # with those settings decodes on that entry's path, so its seed redraws its picture
        self._replaying: Optional[tuple] = None

    # ------------------------------------------------------------------ requests
    def submit(self, prompt: str, settings: GenerationSettings, model: Optional[str]) -> Job:
        job = Job(prompt, settings, model, steps=self._path_for(prompt, settings))
        self._queue(job)
        return job

    def _queue(self, job: Job) -> None:
        self.seeds_used.add(int(job.settings.seed))
        self.queue.add(job)

    def submit_compare(self, prompt: str, settings: GenerationSettings, model: Optional[str],
                       path: str = EAGER) -> ComparePair:
        """Both halves of a Compare, queued back to back: vanilla first, then the settings as they are; both
        on ``path`` (how jobs decode now: a compile that ends between the halves must not split them), each
        warming that path untimed before its clock starts (state/compare.py)."""
        group = next(self._groups)
        path = COMPILED if path == COMPILED else EAGER
        vanilla = Job(prompt, settings.with_(drafter="none"), model, ROLES[VANILLA], group, steps=path, warm=True)
        lantern = Job(prompt, settings, model, ROLES[LANTERN], group, steps=path, warm=True)
        pair = ComparePair.of(group, vanilla, lantern, path)
        self.pairs[group] = pair
        self._queue(vanilla)
        self._queue(lantern)
        return pair

    def submit_sweep(self, axis: str, prompt: str, settings: GenerationSettings, values: List, model: Optional[str],
                     quality: bool = False, path: str = EAGER, seeds: int = SWEEP_SEEDS) -> SweepSet:
        """Sweep δ / k: the vanilla run and one job per value of ``axis`` at each of ``seeds`` seeds, queued back
        to back as one group (Esc stops them together), all on ``path`` and each warming it untimed first
        (state/sweep.py); their seeds join the session's, so a later Generate ×4 never draws them."""
        sweep = SweepSet.of(next(self._groups), axis, prompt, settings, values, model, quality, path, seeds)
        for job in sweep.jobs:
            self._queue(job)
        return sweep

    def submit_variations(self, prompt: str, settings: GenerationSettings, model: Optional[str],
                          seeds: List[int]) -> VariationSet:
        """Generate ×4: one job per seed, queued back to back as one group (Esc stops them together); the grid
        shows this set from now on."""
        group = next(self._groups)
        jobs = [Job(prompt, settings.with_(seed=int(seed)), model, VARIATION_ROLE, group) for seed in seeds]
        self.variations = VariationSet.of(group, jobs)
        for job in jobs:
            self._queue(job)
        return self.variations

    def variation_seeds(self, draw: Callable[[], int]) -> List[int]:
        """The seeds of a new Generate ×4: COUNT new ones from ``draw``, none used before in this session (by
        any Generate, Compare, ×4 or Sweep): four pictures never seen yet."""
        return fresh_seeds(VARIATIONS, draw, avoid=self.seeds_used)

    def variation_of(self, job: Job) -> Optional[Cell]:
        """The grid cell a job decodes into; None when it is not one of the latest Generate ×4."""
        v = self.variations
        if v is None or job.group is None or job.group != v.group:
            return None
        return v.cell_of(job.id)

    def cancel(self) -> List[Job]:
        """Esc: the running job stops; a Compare's waiting half goes with it (the pair is dropped), and so do
        the waiting variations of a Generate ×4."""
        stopped = self.queue.cancel_with_group()
        for job in stopped:
            cell = self.variation_of(job)
            if cell is not None and cell.state == "waiting":  # taken off the queue: it never runs
                cell.state = "cancelled"
        pairs = [self.pair_of(job) for job in stopped]
        for job, pair in zip(stopped, pairs):
            if pair is None:
                continue
            self.pairs.pop(pair.group, None)
            half = pair.half(job.id)
            if half is not None and half.state == "waiting":  # taken off the queue: it never runs
                half.state = "cancelled"
        return stopped

    def cancel_all(self) -> None:
        """Shift+Esc: the running job stops and the queue empties; only the running job's pair (if it is a
        Compare's half) is left to hear of its end."""
        self.queue.cancel_all()
        running = self.queue.current
        self.pairs = {g: p for g, p in self.pairs.items() if running is not None and running.group == g}
        if self.variations is not None:
            self.variations.stop_waiting()

    def pair_of(self, job: Job) -> Optional[ComparePair]:
        if job.group is None or job.role == VARIATION_ROLE:
            return None
        if self.race is not None and self.race.group == job.group:
            return self.race
        return self.pairs.get(job.group)

    def new_group(self) -> int:
        """A fresh ``Job.group`` for jobs that are one request (Esc stops them together): a Sweep's."""
        return next(self._groups)

    # ------------------------------------------------------------------ the worker's answers
    def started(self, job: Job) -> Target:
        """A job started: the canvas follows it, in the race view when it is half of a Compare, in the grid
        when it is a variation (unless a person chose a finished variation: it stays the current picture)."""
        cell = self.variation_of(job)
        if cell is not None:
            self.variations.started(job)
            if self.variations.chosen is None or self.view == GRID:  # else a chosen one is looked at
                self.shown_job_id, self.canvas_finished, self.view = job.id, False, GRID
            return Target(GRID, cell=cell.index)
        self.shown_job_id = job.id
        self.canvas_finished = False
        pair = self.pair_of(job)
        if pair is None:
            self.view = SINGLE
            return Target(SINGLE)
        half = pair.half(job.id)
        half.state = "running"
        self.view, self.race = RACE, pair
        return Target(RACE, half.side)

    def target_of(self, frame: Frame) -> Optional[Target]:
        """Where a frame is drawn; None when the canvas follows another job (or an image from the history).
        A variation's frames always go to its grid cell, shown or not, so that the grid is whole when it
        comes back."""
        v = self.variations
        cell = v.cell_of(frame.job_id) if v is not None else None
        if cell is not None:
            return Target(GRID, cell=cell.index)
        if frame.job_id != self.shown_job_id:
            return None
        if self.view == RACE and self.race is not None:
            half = self.race.half(frame.job_id)
            if half is not None:
                return Target(RACE, half.side)
        return Target(SINGLE)

    def job_finished(self, r: JobResult, record: dict) -> Optional[ComparePair]:
        """A job finished with ``record`` (its JSON-ready generation record); the Compare pair it completes,
        if it completes one."""
        self.last_result = r
        cell = self.variation_of(r.job)
        if cell is not None:
            self.variations.finished(r, record)
            if self.variations.chosen is None:  # else the chosen variation stays what Save exports
                self.finished = Finished(r.image, record, r.job.id)
            return None
        self.finished = Finished(r.image, record, r.job.id)
        self.canvas_finished = r.job.id == self.shown_job_id and self.view == SINGLE
        pair = self.pair_of(r.job)
        if pair is None:
            return None
        half = pair.half(r.job.id)
        half.state, half.result = "done", r
        if pair.complete:
            self.pairs.pop(pair.group, None)
            return pair
        return None

    def job_ended(self, job: Job, how: str) -> Optional[ComparePair]:
        """A job was cancelled or failed (``how``); the Compare pair that stops with it, if any. A variation
        stops alone: a failed one does not stop the others (Esc takes the waiting ones off, see cancel)."""
        cell = self.variation_of(job)
        if cell is not None:
            self.variations.stopped(job, how)
            return None
        pair = self.pair_of(job)
        if pair is None:
            return None
        self.pairs.pop(pair.group, None)
        half = pair.half(job.id)
        half.state = how
        for other in pair.halves:
            if other.state == "waiting":
                other.state = "cancelled"
        return pair

    def shows_race_lane(self, job: Job) -> bool:
        return self.view == RACE and self.race is not None and self.race.half(job.id) is not None

    # ------------------------------------------------------------------ the variations grid
    def variation_saved(self, job: Job, entry_id: int) -> None:
        """A variation's picture got its history row (what a click on its cell opens)."""
        if self.variation_of(job) is not None:
            self.variations.saved(job, entry_id)

    def choose_variation(self, index: int) -> Optional[Cell]:
        """A person clicked grid cell ``index``: a finished one becomes the current picture on the single
        canvas (the window shows it as it shows a history entry); None when there is none to show."""
        if self.variations is None:
            return None
        cell = self.variations.choose(index)
        if cell is not None:
            self.view, self.shown_job_id, self.canvas_finished = SINGLE, None, True
            self.finished = Finished(cell.result.image, cell.record, cell.job.id)
        return cell

    def show_grid(self) -> bool:
        """Back to the grid of the latest Generate ×4 (False: there is none). Its running variation, if
        any, is followed again."""
        v = self.variations
        if v is None:
            return False
        running = v.running
        self.view, self.shown_job_id, self.canvas_finished = GRID, running.job.id if running else None, False
        return True

    # ------------------------------------------------------------------ pictures from elsewhere
    def show_history(self, image: np.ndarray, record: dict) -> None:
        """A history entry was opened: the single canvas shows it, finished; no job is followed."""
        self.shown_job_id = None
        self.view = SINGLE
        self.finished = Finished(image, record)
        self.canvas_finished = True
        self._replaying = _path_of(record)

    def _path_for(self, prompt: str, settings: GenerationSettings) -> Optional[str]:
        """The decode path a Generate asks for: the opened history entry's, when it redraws that entry
        (same prompt and settings, seed included); else None (Generate ▸ Compiled decoding decides)."""
        if self._replaying is None:
            return None
        want_prompt, want_settings, path = self._replaying
        return path if prompt == want_prompt and settings.to_dict() == want_settings else None

    def show_lane_result(self, side: str) -> Optional[Finished]:
        """The finished picture of one race lane (what dragging that lane exports), or None."""
        if self.race is None:
            return None
        half = self.race.vanilla if side == VANILLA else self.race.lantern
        return None if half.result is None else Finished(half.result.image, jsonable(half.result.record()), half.job.id)


def _path_of(record: dict) -> Optional[tuple]:
    """(prompt, settings as a dict, "compiled" | "eager") of a record that says how it decoded (records from
    before the studio kept ``compiled`` do not: None)."""
    compiled = record.get("compiled")
    if not isinstance(compiled, bool):
        return None
    try:
        settings = GenerationSettings.from_dict(record.get("settings", {})).to_dict()
    except (TypeError, ValueError):
        return None
    return record.get("prompt", ""), settings, "compiled" if compiled else "eager"
