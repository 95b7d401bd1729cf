"""The job queue's rules: one job runs at a time, the rest wait in order; Cancel stops the running job
between two decoding steps (its ``cancel_event``) and takes waiting ones off the queue; a Compare's two
halves are cancelled together. The session (:mod:`.session`) hands the engine the job :meth:`QueueState.take_next`
gives it and reports each job's end back."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Deque, List, Optional

from .jobs import Job


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


@dataclass(frozen=True)
class QueueSummary:
    """What the queue view shows: a title line, one row per job (running first), which buttons work."""

    title: str
    rows: List[str]
    can_cancel: bool
    can_cancel_all: bool


@dataclass
class QueueState:
    pending: Deque[Job] = field(default_factory=deque)
    current: Optional[Job] = None  # handed to the worker, not ended yet
    loading: Optional[str] = None  # what the model load is doing now; None once ready or failed
    stopped: bool = False  # shut down: nothing more is handed out

    # ------------------------------------------------------------------ order
    def add(self, job: Job) -> None:
        self.pending.append(job)

    def take_next(self) -> Optional[Job]:
        """The job to hand the worker now (it becomes ``current``), or None: one runs, none waits, or stopped."""
        if self.stopped or self.current is not None or not self.pending:
            return None
        self.current = self.pending.popleft()
        return self.current

    def ended(self, job: Job) -> bool:
        """The worker finished, cancelled or failed ``job``; True when it was the running one."""
        if self.current is not None and self.current.id == job.id:
            self.current = None
            return True
        return False

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

    def pending_in_group(self, group: int) -> List[int]:
        """The waiting jobs of one Compare pair (the running one is ``current``)."""
        return [j.id for j in self.pending if j.group == group]

    # ------------------------------------------------------------------ cancelling
    def cancel_current(self) -> Optional[Job]:
        if self.current is not None:
            self.current.cancel()
        return self.current

    def cancel(self, job_id: int) -> Optional[Job]:
        """Stop the running job ``job_id`` (between two steps) or take it off the queue; the job, or None."""
        if self.current is not None and self.current.id == job_id:
            self.current.cancel()
            return self.current
        gone = [j for j in self.pending if j.id == job_id]
        self.pending = deque(j for j in self.pending if j.id != job_id)
        return gone[0] if gone else None

    def cancel_with_group(self) -> List[Job]:
        """Esc: the running job and, when it is half of a Compare, the waiting other half (a Compare is one
        request). The jobs stopped, the running one first; [] when nothing runs."""
        job = self.cancel_current()
        if job is None:
            return []
        stopped = [job]
        if job.group is not None:
            stopped += [j for j in self.pending if j.group == job.group]
            self.pending = deque(j for j in self.pending if j.group != job.group)
        return stopped

    def cancel_all(self) -> None:
        self.pending.clear()
        self.cancel_current()

    # ------------------------------------------------------------------ what the view lists
    def summary(self) -> QueueSummary:
        rows = []
        current, loading = self.current, self.loading
        if current is not None:
            if current.cancel_requested:
                state = "cancelling…"
            elif loading:
                state = f"waiting for the model ({loading.rstrip('…')})"  # the job starts once it is ready
            else:
                state = "running"
            rows.append(f"▶ {state}: {current.label()}")
        for i, job in enumerate(self.pending, 1):
            rows.append(f"{i}. waiting, {ordinal(i)} in line: {job.label()}")
        waiting = len(self.pending)
        if current is None and not waiting:
            title = "Queue: idle" if not loading else f"Queue: idle · model {loading}"
        elif loading:
            title = f"Queue: {waiting + (current is not None)} waiting for the model ({loading})"
        else:
            title = f"Queue: {1 if current else 0} running, {waiting} waiting"
        return QueueSummary(title, rows, current is not None, current is not None or bool(waiting))
