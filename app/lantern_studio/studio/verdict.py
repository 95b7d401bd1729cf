"""A run's numbers in words a person reads: what the recogniser saw, and whether the machine was busy
while the picture decoded.

"Fidelity 40 %" under a clearly good cat read as a poor grade; it is the recogniser's probability for
the prompt's subgroup, and 40 % can be its first choice among hundreds. So the stats panel says what the
recogniser saw ("recognised as *cat face*, rank 1 of 1,349"), from the record's ``recognised`` entry
(``models/quality.PromptScorer.verdict``). And the same decode took 1.8–4.5 s without a word why: a record
keeps the 1-minute load average and the CPU count when its decode ended, and a load above the CPUs says
the machine was busy. Both read records that may come from elsewhere: anything malformed reads as nothing.
"""

from __future__ import annotations

import math
from typing import Optional

from .jobs import LOAD_KEY, RECOGNISED_KEY

BUSY_SHARE = 1.0  # load per CPU above this: other work competed with the decode for the cores


def _count(v) -> Optional[int]:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def _text(v, limit: int = 80) -> Optional[str]:
    return v[:limit] if isinstance(v, str) and v.strip() else None


def verdict_words(record: dict) -> str:
    """"recognised as *cat face*, rank 1 of 1,349", or "recognised as *dog face*; *cat face* (asked) ranks
    3 of 1,349"; "" when the record has no usable verdict."""
    v = record.get(RECOGNISED_KEY) if isinstance(record, dict) else None
    if not isinstance(v, dict):
        return ""
    seen, asked = _text(v.get("seen")), _text(v.get("asked"))
    rank, classes = _count(v.get("rank")), _count(v.get("classes"))
    if seen is None or asked is None or rank is None or classes is None or rank > classes:
        return ""
    if rank == 1:
        return f"recognised as {seen}, rank 1 of {classes:,}"
    return f"recognised as {seen}; {asked} (asked) ranks {rank:,} of {classes:,}"


def verdict_tip(record: dict) -> str:
    """What the words mean, for a tooltip; "" without a verdict."""
    if not verdict_words(record):
        return ""
    v = record[RECOGNISED_KEY]
    what = "emoji this model draws" if v.get("level") == "identity" else "subgroups the recogniser knows"
    return (f"The recogniser's first choice for this picture, and where what the prompt asked for ranks among the "
            f"{v['classes']:,} {what} (1 = its first choice). Prompt fidelity is its probability for the asked "
            "subgroup: a good picture can score well under 100 % when look-alike classes share the probability.")


def load_of(record: dict) -> Optional[tuple]:
    """(1-minute load average, CPUs) kept with a record, or None."""
    v = record.get(LOAD_KEY) if isinstance(record, dict) else None
    if not (isinstance(v, list) and len(v) == 2):
        return None
    load, cpus = v
    if isinstance(load, bool) or not isinstance(load, (int, float)) or not math.isfinite(load) or load < 0:
        return None
    cpus = _count(cpus)
    return None if cpus is None else (float(load), cpus)


def busy_words(load: Optional[tuple]) -> str:
    """"machine busy: load 3.1 on 2 CPUs" when other work competed for the cores, else ""."""
    if load is None:
        return ""
    value, cpus = load
    if value <= BUSY_SHARE * cpus:
        return ""
    return f"machine busy: load {value:.1f} on {cpus} CPU" + ("" if cpus == 1 else "s")
