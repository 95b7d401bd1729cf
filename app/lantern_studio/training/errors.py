"""How a training command says its input was wrong: one exception, one place that reports it.

Anything under ``training/`` that finds bad input (an option, a missing or unreadable file, a
checkpoint of another run) raises :class:`TrainingError` with a message that names what was wrong.
Only the command edge, :func:`command`, turns it into what the user sees: one line
``lantern-studio: …`` on stderr and exit code 2. The Python API (``ar.train(args)``,
``train_drafter_for_model(...)``) lets it propagate.
"""

from __future__ import annotations

import functools
import sys
from typing import Callable, TypeVar

#: The exit code of a training command given bad input (as argparse's for a bad option).
EXIT_BAD_INPUT = 2

A = TypeVar("A")


class TrainingError(ValueError):
    """Bad input to a trainer; the message names what was wrong, in one line.

    A ValueError, so callers that caught the ValueErrors the input checks raised before keep working.
    """


def one_line(message: str) -> str:
    """``message`` on one line (an embedded error text can bring its own line breaks)."""
    return " ".join(str(message).split())


def need(cond: bool, flag: str, allowed: str, value) -> None:
    """A flag's value checked: when ``cond`` is false, a :class:`TrainingError` ``FLAG=VALUE: must be ALLOWED``."""
    if not cond:
        raise TrainingError(f"{flag}={value!r}: must be {allowed}")


def command(run: Callable[[A], int]) -> Callable[[A], int]:
    """A training command's ``run(args)`` at the edge: a :class:`TrainingError` from anywhere inside
    becomes one ``lantern-studio: …`` line on stderr and exit code 2."""

    @functools.wraps(run)
    def edge(args: A) -> int:
        try:
            return run(args)
        except TrainingError as e:
            print(f"lantern-studio: {one_line(str(e))}", file=sys.stderr)
            return EXIT_BAD_INPUT

    return edge
