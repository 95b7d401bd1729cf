"""The studio's one quality measure, named and shown the same way everywhere:
stats panel, Compare, the trade-off chart, PNG metadata and the history.

It is the value a model folder's meter returns (models/quality.py): its probability that the picture
shows what the prompt asks for, calibrated on pictures a person labelled. Where runs are compared (the
trade-off chart, Sweep, Compare, the bench, a model's profile) it is the mean over the run's seeds with
its 95 % interval (:func:`mean_interval`), never one picture's score.
A leaf module (standard library only), so the GUI can use it without the engine.
"""

from __future__ import annotations

import math
from typing import Iterable, NamedTuple

NAME = "prompt fidelity"
KEY = "prompt_fidelity"  # its key in a generation record (records before 2026-12 used "score")
UNIT = "%"
HELP = ("prompt fidelity: the quality meter's probability, in %, that the picture shows what the prompt asks for "
        "(the emoji it was matched to), calibrated on pictures a person marked right or wrong; over several seeds, "
        "the mean with its 95 % interval; — when the meter cannot judge the prompt")

#: seeds a Sweep (the studio's and ``lantern-studio sweep``'s) draws of every value by default, the vanilla run's
#: too: one picture says nothing of the next, and 3 is what a person waits for — a bundled-model picture decodes
#: in 0.5–1 s on a 2-core CPU, so vanilla and five δ values × 3 seeds are 18 decodes, about 9–18 s
SWEEP_SEEDS = 3

#: Student's t, two-sided 95 %, by degrees of freedom (1-30); the normal 1.96 past them
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


class Interval(NamedTuple):
    """A mean over pictures with its 95 % interval, clipped to [0, 1]; ``n`` pictures."""

    mean: float
    low: float
    high: float
    n: int


def mean_interval(values: Iterable) -> "Interval | None":
    """The mean of per-picture fidelities (fractions; None values left out) with a 95 % Student-t interval
    on it, clipped to [0, 1]; one picture gives an interval of the whole range ([0, 1]: one seed says
    nothing about the next). None when there is no value."""
    xs = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)]
    if not xs:
        return None
    n, m = len(xs), sum(xs) / len(xs)
    if n == 1:
        return Interval(m, 0.0, 1.0, 1)
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))
    half = (_T95[n - 2] if n - 1 <= len(_T95) else 1.96) * sd / math.sqrt(n)
    return Interval(m, max(0.0, m - half), min(1.0, m + half), n)


def format_interval(iv: "Interval | None", unit: str = "seed") -> str:
    """'62% (48–76%, 4 seeds)'; one picture: '62% (1 seed)'; None: '—'. ``unit``: what was counted ("seed", or
    "picture" where the pictures are of several prompts)."""
    if iv is None:
        return "—"
    if iv.n == 1:
        return f"{percent(iv.mean):.0f}% (1 {unit})"
    return f"{percent(iv.mean):.0f}% ({percent(iv.low):.0f}–{percent(iv.high):.0f}%, {iv.n} {unit}s)"


def percent(value) -> float:
    return 100.0 * float(value)


def format_value(value) -> str:
    """0.372 → '37%'; None → '—'."""
    return "—" if value is None else f"{percent(value):.0f}%"


def of_record(record: dict):
    """The fidelity stored in a generation record (either key), or None."""
    for key in (KEY, "score"):
        value = record.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return None
