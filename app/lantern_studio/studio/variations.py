"""Generate ×4: one prompt and one set of settings decoded four times, each with a fresh seed of its own, one
after the other in the one worker thread, shown as a 2×2 grid that fills in as the four decode.

A set knows which job is which cell, how far each got, its history row once saved, and which cell a person
chose (clicking a finished one makes it the current picture, as a history click does). A chosen cell stays the
current picture while the rest decode: they fill in their cells but take neither the canvas nor Save from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, List, Optional

from .jobs import Job
from .job_cells import JobCell, JobCells, progress_text

COUNT = 4  # cells of the grid: 2 × 2
COLUMNS = 2
ROLE = "variation"  # Job.role of each cell's job


def fresh_seeds(n: int, draw: Callable[[], int], avoid: Iterable[int] = ()) -> List[int]:
    """``n`` different seeds from ``draw`` (a new random seed at each call, as New seed each Generate draws
    one), none of them in ``avoid``: four variations are four different pictures."""
    taken, seeds = set(avoid), []
    while len(seeds) < n:
        seed = int(draw())
        if seed not in taken:
            taken.add(seed)
            seeds.append(seed)
    return seeds


@dataclass
class Cell(JobCell):
    index: int  # 0 … COUNT-1, row by row
    job: Job  # state, result, record, entry_id and done: a JobCell's (state/job_cells.py)

    @property
    def seed(self) -> int:
        return int(self.job.settings.seed)

    def caption(self, n_fixed: Optional[int] = None, total: Optional[int] = None) -> str:
        """The cell's line over its picture: its seed and how far it got (short: a cell is a quarter of a
        small window's canvas)."""
        if self.state == "running":
            how = progress_text(n_fixed, total)  # not "122/256": cut in a small cell
        elif self.done and self.result is not None:
            how = f"{float(self.result.stats['wall_seconds']):.2f} s"
        else:
            how = self.state
        return f"seed {self.seed} · {how}"


@dataclass
class VariationSet(JobCells):
    group: int  # Job.group of its four jobs: Esc stops the running one and takes the waiting ones off
    prompt: str
    cells: List[Cell] = field(default_factory=list)
    chosen: Optional[int] = None  # the cell a person made the current picture

    @classmethod
    def of(cls, group: int, jobs: List[Job]) -> "VariationSet":
        return cls(group, jobs[0].prompt if jobs else "", [Cell(i, job) for i, job in enumerate(jobs)])

    @property
    def seeds(self) -> List[int]:
        return [c.seed for c in self.cells]

    def _cells(self) -> List[Cell]:
        return self.cells

    def cell_of(self, job_id: int) -> Optional[Cell]:
        return self._cell_of(job_id)

    # running, ended, started, finished, stopped, saved and choose: a JobCells' (state/job_cells.py)

    def stop_waiting(self) -> List[Cell]:
        """The waiting cells were taken off the queue (Esc, Cancel all): they never run. Those cells."""
        return self._cancel_waiting(lambda job: False)

    def summary(self) -> str:
        """The grid's title line: how far the set got, and what a click or Esc does now."""
        return "Generate ×4 · " + self.progress()

    @staticmethod
    def help() -> str:
        """The grid's tooltip: all that a click, ⊞ Variations and Esc do."""
        return ("Four variations of one prompt and settings, each with a new seed of its own. Click a finished "
                "one to make it the current picture (canvas, stats, seed, history selection); ⊞ Variations on the "
                "canvas's toolbar comes back here. Esc stops the running one and the waiting ones.")
