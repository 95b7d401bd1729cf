"""A set of jobs shown as cells (Generate ×4's grid, a Sweep's strip): each cell's job waits, runs, and ends
done, cancelled or failed; a set knows which cell a job fills, which one runs, whether all have ended, and which
finished one a person chose. Qt-free: ``state/variations.py`` and ``state/sweep.py`` build on it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from .jobs import Job, JobResult

ENDED = ("done", "cancelled", "failed")


def progress_text(n_fixed: Optional[int], total: Optional[int]) -> str:
    """How far a running cell got, as its caption says it: "37%", or "starting…" before its first frame."""
    return f"{100 * n_fixed // total}%" if n_fixed is not None and total else "starting…"


@dataclass(kw_only=True)
class JobCell:
    """What every cell holds besides its job and place (the subclasses' own fields, positional)."""

    state: str = "waiting"  # waiting | running | done | cancelled | failed
    result: Optional[JobResult] = None
    record: Optional[dict] = None  # the JSON-ready generation record, once done
    entry_id: Optional[int] = None  # its history row, once saved

    @property
    def done(self) -> bool:
        return self.state == "done"


class JobCells:
    """The bookkeeping of a set of cells; a subclass says which list holds them (``_cells``) and has a
    ``chosen`` attribute (the index a person chose, or None)."""

    chosen: Optional[int]

    def _cells(self) -> list:
        raise NotImplementedError

    def _cell_of(self, job_id: int):
        return next((c for c in self._cells() if c.job.id == job_id), None)

    @property
    def running(self):
        return next((c for c in self._cells() if c.state == "running"), None)

    @property
    def ended(self) -> bool:
        """Every cell finished, was cancelled or failed: nothing more will fill in."""
        return all(c.state in ENDED for c in self._cells())

    # ------------------------------------------------------------------ the worker's answers
    def started(self, job: Job):
        cell = self._cell_of(job.id)
        if cell is not None:
            cell.state = "running"
        return cell

    def finished(self, result: JobResult, record: dict):
        cell = self._cell_of(result.job.id)
        if cell is not None:
            cell.state, cell.result, cell.record = "done", result, record
        return cell

    def stopped(self, job: Job, how: str):
        """``job`` was cancelled or failed (``how``)."""
        cell = self._cell_of(job.id)
        if cell is not None:
            cell.state = how
        return cell

    def saved(self, job: Job, entry_id: int) -> None:
        cell = self._cell_of(job.id)
        if cell is not None:
            cell.entry_id = entry_id

    def _cancel_waiting(self, queued: Callable[[Job], bool]) -> list:
        """The waiting cells whose jobs are not ``queued`` never run: they are cancelled; those cells."""
        gone = [c for c in self._cells() if c.state == "waiting" and not queued(c.job)]
        for c in gone:
            c.state = "cancelled"
        return gone

    def choose(self, index: int):
        """A person clicked cell ``index``: it becomes the chosen one when it is done (a picture to show);
        None (and nothing changes) when it is still decoding, stopped, or not a cell."""
        cells = self._cells()
        if not 0 <= index < len(cells) or not cells[index].done:
            return None
        self.chosen = index
        return cells[index]

    def progress(self) -> str:
        """The end of a set's title line: how far it got, and what a click or Esc does now ("3 of 4 done, 1
        stopped · click one to pick it")."""
        cells = self._cells()
        done = sum(c.done for c in cells)
        counts = [f"{done} of {len(cells)} done"]
        stopped = sum(c.state in ("cancelled", "failed") for c in cells)
        if stopped:
            counts.append(f"{stopped} stopped")
        hint = "Esc stops the rest" if not self.ended else ("click one to pick it" if done else "none finished")
        return ", ".join(counts) + " · " + hint
