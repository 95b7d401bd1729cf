"""A Compare: the same prompt, seed and sampling decoded twice, vanilla (one token per target forward)
and with the current settings (LANTERN), one after the other in the one worker thread so that each
half's wall time is its own. A pair knows which job is which half, what each produced, and the ratios.

The ratio compares decoding only. Both halves decode on one path (``path``: both eager or both compiled,
fixed when the Compare is asked for, so a compile that finishes between the halves cannot split them),
and each half first warms its own path with a few untimed steps (``Job.warm``): the first Compare of a
session once reported 8.65× because vanilla's path warmed up for 17–28 s inside its clock. The warm-up
times are kept apart (``Half.warm``) and said beside the ratio, never counted in it.

A Compare races one seed: the race replays two decodes of one picture, and its point is the speed of the same
decode, vanilla against the settings (a second seed would double the wait, and a third triple it, for a ratio the
first seed already measures well). Its quality is therefore one picture per side, and is said so: each half's
prompt fidelity is the mean over the seeds it ran (``fidelity.mean_interval``: one seed, its interval the whole
0–100 %), written "62% (1 seed)"; Sweep draws several seeds of a setting for a mean with a useful interval."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Tuple

import numpy as np

from .. import fidelity
from ..engine.decode_method import DecodeMethod
from ..export import target_forwards
from .jobs import Job, JobResult

VANILLA, LANTERN = "vanilla", "lantern"
EAGER, COMPILED = "eager", "compiled"  # the decode paths (as studio/compiled_steps.py and records name them)
ROLES = {VANILLA: "compare-vanilla", LANTERN: "compare-current"}  # Job.role of each half


@dataclass
class Half:
    side: str  # VANILLA | LANTERN
    job: Job
    state: str = "waiting"  # waiting | running | done | cancelled | failed
    result: Optional[JobResult] = None

    @property
    def name(self) -> str:
        return DecodeMethod.of(self.job.settings).label

    @property
    def wall(self) -> Optional[float]:
        return None if self.result is None else float(self.result.stats["wall_seconds"])

    @property
    def forwards(self) -> Optional[int]:
        return None if self.result is None else target_forwards(self.result.stats["target_forwards"])

    @property
    def path(self) -> Optional[str]:
        """The path this half decoded on, as it ran (compiled steps made some of its forwards, or none)."""
        if self.result is None:
            return None
        return COMPILED if int(self.result.stats.get("compiled_forwards") or 0) > 0 else EAGER

    @property
    def warm(self) -> Optional[float]:
        """Seconds this half's untimed warm-up took before its clock started (None: none ran)."""
        return None if self.result is None else self.result.warm_seconds

    @property
    def fidelity(self) -> Optional[fidelity.Interval]:
        """Its prompt fidelity over the seeds it ran (one: the interval is the whole 0–100 %); None unscored."""
        return None if self.result is None else fidelity.mean_interval([self.result.score])

    def fidelity_words(self) -> str:
        """"prompt fidelity 62% (1 seed)"; "" when the half is not done or was not scored."""
        iv = self.fidelity
        return "" if iv is None else f"{fidelity.NAME} {fidelity.format_interval(iv)}"


@dataclass
class ComparePair:
    group: int
    vanilla: Half
    lantern: Half
    replayable: bool = field(default=True)  # False once a recording turned out not to fit its image
    path: str = EAGER  # the path both halves were asked to decode on (Half.path: the one each ran on)

    @classmethod
    def of(cls, group: int, vanilla: Job, lantern: Job, path: str = EAGER) -> "ComparePair":
        return cls(group, Half(VANILLA, vanilla), Half(LANTERN, lantern), path=path)

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

    @property
    def path_words(self) -> str:
        """Which path the halves decoded on, as the ratio's label says it: "both eager", or each half's
        when they differ (a compiled path asked for where compiling failed ran eagerly)."""
        ran = [h.path or self.path for h in self.halves]
        return f"both {ran[0]}" if ran[0] == ran[1] else f"vanilla {ran[0]}, {self.lantern.name} {ran[1]}"

    def warm_words(self) -> str:
        """The warm-up each half had before its clock started, said apart ("" when none ran)."""
        parts = [f"{h.side if h.side == VANILLA else h.name} {h.warm:.1f} s" for h in self.halves
                 if h.warm is not None]
        return "" if not parts else "warm-up not counted: " + ", ".join(parts)

    def headline(self) -> str:
        """The race's one line: what was compared and the ratio (its tooltip: :meth:`explain`)."""
        if not self.complete:
            return ""
        return (f"{self.lantern.name} {self.speedup:.2f}× faster than vanilla (decoding only, {self.path_words}) · "
                f"{self.forwards_ratio:.2f}× fewer target forwards")

    def explain(self) -> str:
        """What the ratio compares, in full (the tooltip of the race's line and of the stats' ratio)."""
        warm = self.warm_words()
        return (f"Speed-up = vanilla's decoding wall time ÷ {self.lantern.name}'s, on the same prompt, seed and "
                f"sampling, one after the other, {self.path_words} (Generate ▸ Compiled decoding). Each half first "
                "warmed its own decode path with a few untimed steps, so a first-use warm-up (loading, compiling a "
                "step shape) is not in the ratio" + (f" ({warm})." if warm else "."))

    def quality_words(self) -> str:
        """Each half's prompt fidelity over the seed it ran, and why one seed: "" when neither was scored."""
        parts = [f"{h.side if h.side == VANILLA else h.name} {fidelity.format_interval(h.fidelity)}"
                 for h in self.halves if h.fidelity is not None]
        if not parts:
            return ""
        return (f"{fidelity.NAME[0].upper()}{fidelity.NAME[1:]}: " + ", ".join(parts) + ". A Compare races one seed: "
                "one picture a side says little of either setting's quality (its 95 % interval is the whole 0–100 %); "
                "Sweep δ or k draws several seeds of each value for a mean with its interval.")

    def summary(self) -> str:
        """The ratio in words, once both halves are done."""
        if not self.complete:
            return ""
        same = " · identical images" if self.identical else ""
        warm = self.warm_words()
        return (f"Speed-up {self.speedup:.2f}× (decoding wall time, {self.path_words})\n"
                f"{self.forwards_ratio:.2f}× fewer target forwards{same}" + (f"\n{warm}" if warm else ""))
