"""The studio's one quality measure, named and shown the same way everywhere:
stats panel, Compare, the trade-off chart, PNG metadata and the history.

It is the value a model folder's scorer returns (models/quality.py): the
recogniser's probability that the image shows what the prompt asks for.
A leaf module (no imports), so the GUI can use it without the engine.
"""

from __future__ import annotations

NAME = "prompt fidelity"
KEY = "prompt_fidelity"  # its key in a generation record (records before 2026-12 used "score")
UNIT = "%"
HELP = ("prompt fidelity: the recogniser's probability, in %, that the image shows what the prompt asks for "
        "(its emoji subgroup); — when the recogniser cannot judge the prompt")


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
