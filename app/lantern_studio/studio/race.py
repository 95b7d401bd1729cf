"""The race replay: a finished Compare's two decodes again, on ONE clock. Each lane advances by its own
recorded per-step wall times (``Recording.elapsed``), so the faster decode visibly finishes first; the
whole race is slowed down by one factor for both lanes (the bundled model decodes an image in well under
a second), so what the eye sees keeps the measured ratio."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

from .replay import Recording
from .compare import LANTERN, VANILLA

RACE_SECONDS = 4.0  # the slower lane takes about this long on screen …
MAX_SLOWMO = 1000.0  # … slowed down at most this much (and never sped up)


def slowmo_for(*durations: float) -> float:
    """One slow-motion factor for every lane: the slowest takes RACE_SECONDS, within 1 … MAX_SLOWMO."""
    longest = max([d for d in durations if d > 0] or [0.0])
    if longest <= 0:
        return 1.0
    return min(MAX_SLOWMO, max(1.0, RACE_SECONDS / longest))


@dataclass(frozen=True)
class Lane:
    """One lane as it stands at a moment of the race: the recorded step, clock and counts."""

    step: int  # -1 before the first step
    seconds: float  # the recorded clock: seconds into this decode
    n_fixed: int
    total: int
    target_forwards: int
    done: bool

    @property
    def tokens_per_forward(self) -> float:
        # as Frame.mean_accepted_length: the prefill's forward included
        return self.n_fixed / max(1, self.target_forwards + 1)


def lane_at(rec: Recording, seconds: float) -> Lane:
    """``rec`` at ``seconds`` of its own recorded time."""
    step = min(rec.step_at(seconds), rec.steps - 1)
    done = step >= rec.steps - 1
    return Lane(step, min(max(0.0, seconds), rec.duration), rec.fixed[step] if step >= 0 else 0, rec.total,
                rec.target[step] if step >= 0 else 0, done)


@dataclass
class Race:
    vanilla: Recording
    lantern: Recording
    slowmo: float

    @classmethod
    def of(cls, vanilla: Recording, lantern: Recording, slowmo: Optional[float] = None) -> "Race":
        return cls(vanilla, lantern, slowmo_for(vanilla.duration, lantern.duration) if slowmo is None else slowmo)

    def at(self, replay_seconds: float) -> Tuple[Lane, Lane]:
        """Both lanes ``replay_seconds`` after the start (on screen): the same recorded moment for both."""
        t = max(0.0, replay_seconds) / self.slowmo
        return lane_at(self.vanilla, t), lane_at(self.lantern, t)

    @property
    def replay_seconds(self) -> float:
        """How long the race runs on screen: until the slower lane is done."""
        return max(self.vanilla.duration, self.lantern.duration) * self.slowmo

    def done(self, replay_seconds: float) -> bool:
        return all(lane.done for lane in self.at(replay_seconds))

    @property
    def winner(self) -> Optional[str]:
        """The lane that finishes first (VANILLA or LANTERN); None on a tie."""
        a, b = self.vanilla.duration, self.lantern.duration
        return None if a == b else (LANTERN if b < a else VANILLA)

    def describe(self) -> str:
        # "slowed 1×" said nothing: a factor under 10 keeps its decimal
        slow = "real time" if self.slowmo == 1.0 else (
            f"slowed {self.slowmo:.1f}×" if self.slowmo < 10 else f"slowed {self.slowmo:.0f}×")
        return f"Race replay, both lanes on one clock ({slow})"
