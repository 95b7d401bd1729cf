"""The studio window's state and rules, under the Qt window (``gui/main_window.py`` forwards each Qt
event here and redraws from what it is told).

It holds the queue (:class:`QueueState`), the Compare pairs (:class:`ComparePair`, by group), which job
the canvas follows, which view shows it (the single canvas, or the two race lanes of a Compare), and the
finished picture that Save, Copy and dragging export."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from typing import Dict, List, Optional

import numpy as np

from ...engine.settings import GenerationSettings
from ..jobs import Frame, Job, JobResult
from .compare import LANTERN, ROLES, VANILLA, ComparePair
from .queue import QueueState

SINGLE, RACE = "single", "race"  # the canvas column's two views


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
    """Where a job's frames are drawn: the single canvas (``lane`` None) or one lane of the race view."""

    view: str  # SINGLE | RACE
    lane: Optional[str] = None  # VANILLA | LANTERN in the race view


class Studio:
    def __init__(self) -> None:
        self.queue = QueueState()
        self.pairs: Dict[int, ComparePair] = {}  # the Compares not finished or stopped yet, by group
        self.race: Optional[ComparePair] = None  # the pair the race view shows (running, done or stopped)
        self.view = SINGLE
        self.shown_job_id: Optional[int] = None  # the job whose frames the canvas (or a lane) follows
        self.finished: Optional[Finished] = None
        self.canvas_finished = False  # the single canvas shows the finished picture (not a partial one)
        self.last_result: Optional[JobResult] = None
        self._groups = itertools.count(1)
        # the history entry last opened: (prompt, settings, "compiled" | "eager"); a Generate of that prompt
        # with those settings decodes on that entry's path, so its seed redraws its picture
        self._replaying: Optional[tuple] = None

    # ------------------------------------------------------------------ requests
    def submit(self, prompt: str, settings: GenerationSettings, model: Optional[str]) -> Job:
        job = Job(prompt, settings, model, steps=self._path_for(prompt, settings))
        self.queue.add(job)
        return job

    def submit_compare(self, prompt: str, settings: GenerationSettings, model: Optional[str]) -> ComparePair:
        """Both halves of a Compare, queued back to back: vanilla first, then the settings as they are."""
        group = next(self._groups)
        vanilla = Job(prompt, settings.with_(drafter="none"), model, ROLES[VANILLA], group)
        lantern = Job(prompt, settings, model, ROLES[LANTERN], group)
        pair = ComparePair.of(group, vanilla, lantern)
        self.pairs[group] = pair
        self.queue.add(vanilla)
        self.queue.add(lantern)
        return pair

    def cancel(self) -> List[Job]:
        """Esc: the running job stops; a Compare's waiting half goes with it (the pair is dropped)."""
        stopped = self.queue.cancel_with_group()
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

    def pair_of(self, job: Job) -> Optional[ComparePair]:
        if job.group is None:
            return None
        if self.race is not None and self.race.group == job.group:
            return self.race
        return self.pairs.get(job.group)

    # ------------------------------------------------------------------ the worker's answers
    def started(self, job: Job) -> Target:
        """A job started: the canvas follows it, in the race view when it is half of a Compare."""
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
        """Where a frame is drawn; None when the canvas follows another job (or an image from the history)."""
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
        """A job was cancelled or failed (``how``); the Compare pair that stops with it, if any."""
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
