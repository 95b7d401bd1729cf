"""A generation's steps, recorded compactly so the canvas can redraw any of them.

A decode fixes each image token once and never changes it, so the final tokens
and decisions plus, per step, how many tokens were fixed and how many target /
drafter forwards had run by then are enough to rebuild the decision grid at
every step exactly. The recording is a few numbers per step (a 256-token
vanilla run: ~1 KB of JSON) and travels in the generation record: the history
row and the PNG's ``lantern`` chunk both carry it, so any saved image can be
replayed without its model.

A replayed frame shows the final picture's pixels where tokens are fixed and
the engine's grey placeholder elsewhere (re-decoding a partial grid would need
the model; the token grid and the decision overlay are exact either way).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import List, Optional

import numpy as np

from .jobs import UNFILLED, Frame

PLACEHOLDER_RGB = (128, 128, 128)  # as engine/pipeline.py paints tokens not fixed yet
FORMAT = 1
MAX_STEPS = 1 << 20  # a record claiming more steps than this is not ours


class ReplayError(ValueError):
    pass


@dataclass
class Recording:
    """Per step i: ``fixed[i]`` tokens fixed after it (cumulative), ``target[i]`` /
    ``drafter[i]`` forwards so far, ``elapsed[i]`` seconds since the decode began.
    ``order`` lists image positions in the order they were fixed (raster: 0..N-1)."""

    total: int
    fixed: List[int] = field(default_factory=list)
    target: List[int] = field(default_factory=list)
    drafter: List[int] = field(default_factory=list)
    elapsed: List[float] = field(default_factory=list)
    order: List[int] = field(default_factory=list)

    # ------------------------------------------------------------------ recording
    def add(self, event) -> None:
        """Append one engine StepEvent."""
        self.order.extend(int(p) for p in event.positions)
        self.fixed.append(int(event.n_fixed))
        self.target.append(int(event.target_forwards))
        self.drafter.append(int(event.drafter_forwards))
        self.elapsed.append(float(event.elapsed))

    @property
    def steps(self) -> int:
        return len(self.fixed)

    @property
    def duration(self) -> float:
        return self.elapsed[-1] if self.elapsed else 0.0

    # ------------------------------------------------------------------ reading back
    def step_at(self, seconds: float) -> int:
        """The last step finished by ``seconds`` into the decode (-1: none yet)."""
        return int(np.searchsorted(np.asarray(self.elapsed), seconds, side="right")) - 1

    @property
    def grid(self) -> int:
        """Tokens per side of the square image grid (``from_dict`` accepts square totals only)."""
        return math.isqrt(self.total) if self.total > 0 else 0

    def _decisions(self, decisions) -> np.ndarray:
        """The final decisions as one flat array of ``total`` entries, or ReplayError."""
        try:
            flat = np.asarray(decisions, dtype=np.uint8).reshape(-1)
        except (TypeError, ValueError, OverflowError) as e:
            raise ReplayError(f"the decisions are not a grid of numbers ({type(e).__name__}: {e})") from None
        if flat.size != self.total:
            raise ReplayError(f"the replay has {self.total} tokens but the image's decisions {flat.size}")
        return flat

    def _image(self, image) -> np.ndarray:
        """A copy of the final picture, or ReplayError when it is not a square RGB image the grid divides."""
        grid = self.grid
        if grid * grid != self.total:
            raise ReplayError(f"the replay's {self.total} tokens are not a square grid")
        try:
            img = np.array(image, dtype=np.uint8, copy=True)
        except (TypeError, ValueError, OverflowError) as e:
            raise ReplayError(f"the image is not an array of pixels ({type(e).__name__}: {e})") from None
        if img.ndim != 3 or img.shape[2] != 3 or img.shape[0] != img.shape[1] or img.shape[0] < grid \
                or img.shape[0] % grid:
            raise ReplayError(f"the image ({' × '.join(map(str, img.shape))}) does not fit the replay's "
                              f"{grid} × {grid} token grid")
        return img

    def decisions_at(self, step: int, decisions: np.ndarray) -> np.ndarray:
        """The decision grid as it stood after ``step`` (-1: before the first); ReplayError when the
        decisions do not fit the recording."""
        flat = self._decisions(decisions)
        out = np.full(self.total, UNFILLED, dtype=np.uint8)
        n = self.fixed[step] if 0 <= step < self.steps else (0 if step < 0 else self.total)
        idx = np.asarray(self.order[:n], dtype=np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= self.total):
            raise ReplayError("the replay names a position outside its token grid")
        out[idx] = flat[idx]
        return out

    def frame(self, step: int, image: np.ndarray, decisions: np.ndarray, job_id: int = -1) -> Frame:
        """The canvas frame after ``step``, built from the final image and decisions; ReplayError (never
        another error) when the image or the decisions do not fit the recording's grid."""
        step = max(-1, min(step, self.steps - 1))
        img = self._image(image)
        dec = self.decisions_at(step, decisions)
        grid = self.grid
        filled = (dec != UNFILLED).reshape(grid, grid)
        if not filled.all():
            scale = img.shape[0] // grid
            img[~np.kron(filled, np.ones((scale, scale), dtype=bool))] = PLACEHOLDER_RGB
        n = int(filled.sum())
        t = self.target[step] if step >= 0 else 0
        d = self.drafter[step] if step >= 0 else 0
        e = self.elapsed[step] if step >= 0 else 0.0
        return Frame(job_id, img, dec, n, self.total, t, d, e, final=step == self.steps - 1)

    @staticmethod
    def counts(decisions_now: np.ndarray) -> dict:
        """Tokens so far by how they were decided (engine decision ids 0 / 1 / 2)."""
        fixed = decisions_now[decisions_now != UNFILLED]
        return {"target": int((fixed == 0).sum()), "exact": int((fixed == 1).sum()),
                "relaxed": int((fixed == 2).sum())}

    # ------------------------------------------------------------------ storage
    def to_dict(self) -> dict:
        """Compact JSON: per-step increments; ``order`` left out when it is raster order."""
        def deltas(xs):
            return [b - a for a, b in zip([0] + xs[:-1], xs)]

        d = {"format": FORMAT, "total": self.total, "fixed": deltas(self.fixed), "target": deltas(self.target),
             "drafter": deltas(self.drafter), "ms": deltas([int(round(1000 * e)) for e in self.elapsed])}
        if self.order != list(range(len(self.order))):
            d["order"] = list(self.order)
        return d

    @classmethod
    def from_dict(cls, d, tokens: Optional[int] = None) -> "Recording":
        """Inverse of to_dict; a record from elsewhere that does not add up raises ReplayError.

        ``total`` must be a square grid's token count (n × n, n ≥ 1: the canvas redraws a square grid) and,
        when ``tokens`` is given (how many image tokens the generation record says the model drew), equal it."""
        try:
            if not isinstance(d, dict) or d.get("format") != FORMAT:
                raise ReplayError("not a replay recording (unknown format)")
            total = d["total"]
            if not isinstance(total, int) or isinstance(total, bool):
                raise ReplayError(f"replay token count is not an integer ({type(total).__name__})")
            if total < 1 or math.isqrt(total) ** 2 != total:
                raise ReplayError(f"replay token count {total} is not a square grid (n × n, n ≥ 1)")
            if tokens is not None and (not isinstance(tokens, int) or isinstance(tokens, bool) or tokens != total):
                raise ReplayError(f"replay token count {total} differs from the record's {tokens!r} image tokens")
            cols = [d[k] for k in ("fixed", "target", "drafter", "ms")]
            if not all(isinstance(c, list) for c in cols) or len({len(c) for c in cols}) != 1:
                raise ReplayError("replay columns differ in length")
            if len(cols[0]) > MAX_STEPS or not 0 < total <= MAX_STEPS:
                raise ReplayError("replay is too large")
            if any(not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < 2**31 for c in cols for v in c):
                raise ReplayError("replay holds a negative, huge or non-integer step")
            sums = [np.cumsum(c).astype(np.int64).tolist() if c else [] for c in cols]
            order = d.get("order", list(range(sums[0][-1] if sums[0] else 0)))
            if not isinstance(order, list) or len(order) != (sums[0][-1] if sums[0] else 0) or \
                    (sums[0] and sums[0][-1] > total) or any(not isinstance(p, int) or not 0 <= p < total for p in order) \
                    or len(set(order)) != len(order):
                raise ReplayError("replay positions do not match its token count")
        except (KeyError, TypeError, ValueError, OverflowError) as e:
            if isinstance(e, ReplayError):
                raise
            raise ReplayError(f"damaged replay recording ({type(e).__name__}: {e})") from None
        return cls(total, sums[0], sums[1], sums[2], [ms / 1000.0 for ms in sums[3]], list(order))


def recording_of(record: Optional[dict]) -> Optional[Recording]:
    """The recording a generation record carries, or None (absent, damaged, or not the record's token count)."""
    if not isinstance(record, dict) or "replay" not in record:
        return None
    stats = record.get("stats")
    tokens = stats.get("tokens") if isinstance(stats, dict) else None
    if not isinstance(tokens, int) or isinstance(tokens, bool):
        tokens = None  # the record does not say (an older or foreign one): the recording's own checks only
    try:
        return Recording.from_dict(record["replay"], tokens=tokens)
    except ReplayError:
        return None
