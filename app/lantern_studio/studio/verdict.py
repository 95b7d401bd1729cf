"""A run's numbers in words a person reads: what the quality meter made of the picture, and whether the
machine was busy while it decoded.

"Fidelity 40 %" under a clearly good cat read as a poor grade, and a bare probability says nothing of where
the asked emoji stands among the hundreds a model draws. So the stats panel says where the asked emoji ranks
among the emoji this model draws ("octopus: ranked first of 1,349 emoji this model draws"), and names the
meter's first choice only when it is another ("octopus ranks 3 of 1,349; the meter sees dog face first"),
from the record's ``recognised`` entry (``models/quality.PromptScorer.verdict``). The meter's probability is
shown as a percentage (prompt fidelity) only where the verdict says it was ``calibrated`` on pictures a
person labelled; an uncalibrated probability is no chance anyone can read, so then only the rank is said.
Records made before the meter was calibrated (no ``calibrated`` key) read as uncalibrated; records without a
verdict show their stored fidelity as before. And the same decode took 1.8–4.5 s without a word why: a record
keeps the 1-minute load average and the CPU count when its decode ended, and a load above the CPUs says
the machine was busy. Both read records that may come from elsewhere: anything malformed reads as nothing.
"""

from __future__ import annotations

import math
from typing import Optional

from .. import fidelity
from .jobs import LOAD_KEY, RECOGNISED_KEY

BUSY_SHARE = 1.0  # load per CPU above this: other work competed with the decode for the cores
IDENTITY = "identity"  # a verdict's level when it ranks the emoji a model draws (else: subgroups)


def _count(v) -> Optional[int]:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def _text(v, limit: int = 80) -> Optional[str]:
    return v[:limit] if isinstance(v, str) and v.strip() else None


def _verdict(record: dict) -> Optional[dict]:
    """The record's verdict, checked: asked, seen, rank and classes usable (rank within classes), or None."""
    v = record.get(RECOGNISED_KEY) if isinstance(record, dict) else None
    if not isinstance(v, dict):
        return None
    seen, asked = _text(v.get("seen")), _text(v.get("asked"))
    rank, classes = _count(v.get("rank")), _count(v.get("classes"))
    if seen is None or asked is None or rank is None or classes is None or rank > classes:
        return None
    return {"seen": seen, "asked": asked, "rank": rank, "classes": classes,
            "identity": v.get("level") == IDENTITY, "calibrated": v.get("calibrated") is True,
            "probability": v.get("probability")}


def _what(v: dict) -> str:
    return "emoji this model draws" if v["identity"] else "subgroups the recogniser knows"


def verdict_words(record: dict) -> str:
    """"octopus: ranked first of 1,349 emoji this model draws", or "octopus ranks 3 of 1,349; the meter sees
    dog face first"; "" when the record has no usable verdict."""
    v = _verdict(record)
    if v is None:
        return ""
    if v["rank"] == 1:
        return f"{v['asked']}: ranked first of {v['classes']:,} {_what(v)}"
    return f"{v['asked']} ranks {v['rank']:,} of {v['classes']:,}; the meter sees {v['seen']} first"


def calibrated_probability(record: dict) -> Optional[float]:
    """The verdict's probability when its meter was calibrated on labelled pictures, else None."""
    v = _verdict(record)
    p = None if v is None else v["probability"]
    if v is None or not v["calibrated"] or isinstance(p, bool) or not isinstance(p, (int, float)):
        return None
    return float(p) if math.isfinite(p) and 0.0 <= p <= 1.0 else None


def fidelity_words(record: dict) -> str:
    """The note's fidelity: "prompt fidelity 87%" from a calibrated verdict; "" for an uncalibrated one (its
    rank speaks); for a record without a verdict, its stored fidelity as before ("" without one)."""
    if _verdict(record) is not None:
        p = calibrated_probability(record)
        return "" if p is None else f"{fidelity.NAME} {fidelity.format_value(p)}"
    score = fidelity.of_record(record) if isinstance(record, dict) else None
    return "" if score is None else f"{fidelity.NAME} {fidelity.format_value(score)}"


def fidelity_field(record: dict) -> str:
    """The stats grid's Fidelity value: "87%" (a calibrated verdict, or a record without a verdict), or the
    asked emoji's rank ("rank 3/1,349") where the verdict is uncalibrated; "—" when nothing is known."""
    v = _verdict(record)
    if v is not None:
        p = calibrated_probability(record)
        return f"rank {v['rank']:,}/{v['classes']:,}" if p is None else fidelity.format_value(p)
    return fidelity.format_value(fidelity.of_record(record) if isinstance(record, dict) else None)


def verdict_tip(record: dict) -> str:
    """What the words mean, for a tooltip; "" without a verdict."""
    v = _verdict(record)
    if v is None:
        return ""
    if v["identity"]:
        head = (f"Where the emoji the prompt was matched to ranks among the {v['classes']:,} emoji this model "
                "draws, as the quality meter sees this picture (1 = its first choice), and the emoji it ranks "
                "first when that is another.")
    else:
        head = (f"Where the prompt's subgroup ranks among the {v['classes']:,} subgroups the recogniser knows, as "
                "it sees this picture (1 = its first choice), and the subgroup it ranks first when that is "
                "another.")
    if v["calibrated"]:
        return head + (f" {fidelity.NAME[0].upper()}{fidelity.NAME[1:]} is the meter's probability that the "
                       "picture shows what was asked, calibrated on pictures a person marked right or wrong.")
    return head + (" This meter was not calibrated on pictures a person labelled, so its probability is no chance "
                   "to read as a percentage: only the rank is said.")


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
