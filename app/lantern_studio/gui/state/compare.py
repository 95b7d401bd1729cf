"""A Compare: the same prompt, seed and sampling decoded twice, vanilla (one token per target forward)
and with the current settings (LANTERN), one after the other in the one worker thread so that each
half's wall time is its own. A pair knows which job is which half, what each produced, and the ratios."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Tuple

import numpy as np

from ...export import target_forwards
from ..jobs import Job, JobResult

VANILLA, LANTERN = "vanilla", "lantern"
ROLES = {VANILLA: "compare-vanilla", LANTERN: "compare-current"}  # Job.role of each half


def method_name(settings) -> str:
    """How a run decodes, in the words the studio shows: vanilla, exact speculative, LANTERN, LANTERN++."""
    if settings.drafter == "none":
        return "vanilla"
    if settings.k == 0:
        return "exact speculative"
    return "LANTERN++" if settings.lam is not None else "LANTERN"


@dataclass
class Half:
    side: str  # VANILLA | LANTERN
    job: Job
    state: str = "waiting"  # waiting | running | done | cancelled | failed
    result: Optional[JobResult] = None

    @property
    def name(self) -> str:
        return method_name(self.job.settings)

    @property
    def wall(self) -> Optional[float]:
        return None if self.result is None else float(self.result.stats["wall_seconds"])

    @property
    def forwards(self) -> Optional[int]:
        return None if self.result is None else target_forwards(self.result.stats["target_forwards"])


@dataclass
class ComparePair:
    group: int
    vanilla: Half
    lantern: Half
    replayable: bool = field(default=True)  # False once a recording turned out not to fit its image

    @classmethod
    def of(cls, group: int, vanilla: Job, lantern: Job) -> "ComparePair":
        return cls(group, Half(VANILLA, vanilla), Half(LANTERN, lantern))

    @property
    def halves(self) -> Tuple[Half, Half]:
        return self.vanilla, self.lantern

    def half(self, job_id: int) -> Optional[Half]:
        return next((h for h in self.halves if h.job.id == job_id), None)

    @property
    def complete(self) -> bool:
        return all(h.result is not None for h in self.halves)

    @property
    def stopped(self) -> bool:
        """A half was cancelled or failed: the pair will never be complete."""
        return any(h.state in ("cancelled", "failed") for h in self.halves)

    @property
    def speedup(self) -> Optional[float]:
        """Vanilla's wall time over LANTERN's: how many times faster the current settings decoded."""
        if not self.complete:
            return None
        return self.vanilla.wall / self.lantern.wall if self.lantern.wall > 0 else float("nan")

    @property
    def forwards_ratio(self) -> Optional[float]:
        """How many times fewer target forwards the LANTERN half needed."""
        if not self.complete:
            return None
        return self.vanilla.forwards / max(1, self.lantern.forwards)

    @property
    def identical(self) -> bool:
        return self.complete and np.array_equal(self.vanilla.result.image, self.lantern.result.image)

    @property
    def can_race(self) -> bool:
        """Both halves finished with a recording of their steps: the race replay can run."""
        return self.complete and self.replayable and all(
            h.result.recording is not None and h.result.recording.steps for h in self.halves)

    def summary(self) -> str:
        """The ratio in words, once both halves are done."""
        if not self.complete:
            return ""
        same = " · identical images" if self.identical else ""
        return (f"Speed-up {self.speedup:.2f}× (wall time)\n"
                f"{self.forwards_ratio:.2f}× fewer target forwards{same}")
