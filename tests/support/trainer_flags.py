"""The flags of every trainer's parser as a table: the option strings, destination, default, type,
choices, nargs and action of each, with the machine's run and data folders written as ``<runs>`` and
``<data>`` (tests/training/test_loop_flags.py compares it with the table taken at commit 8b77578)."""

from __future__ import annotations

import argparse
import importlib

from lantern_studio.paths import data_dir, runs_dir

#: Every trainer command: (name, the module whose ``add_arguments`` builds its parser).
TRAINERS = [
    ("train vq", "lantern_studio.training.vq"),
    ("train recogniser", "lantern_studio.training.recogniser"),
    ("train ar", "lantern_studio.training.ar"),
    ("train drafter", "lantern_studio.training.drafter"),
    ("train heads", "lantern_studio.training.heads"),
    ("models distill", "lantern_studio.training.self_distill"),
]


def _plain(value):
    """A default as JSON keeps it: folders under the machine's run / data folders by placeholder."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float)):
        return value
    text = str(value)
    for root, name in ((str(runs_dir()), "<runs>"), (str(data_dir()), "<data>")):
        if text.startswith(root):
            text = name + text[len(root):]
    return text


def parser_table(parser: argparse.ArgumentParser) -> dict[str, dict]:
    """Each argument of ``parser`` (but --help) by its destination."""
    table = {}
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        typ = action.type
        table[action.dest] = {
            "options": list(action.option_strings),
            "default": _plain(action.default),
            "type": None if typ is None else getattr(typ, "__name__", repr(typ)),
            "choices": None if action.choices is None else [_plain(c) for c in action.choices],
            "nargs": action.nargs,
            "action": type(action).__name__,
            "required": action.required,
        }
    return table


def flag_table() -> dict[str, dict[str, dict]]:
    """Every trainer's parser as :func:`parser_table`, by command."""
    out = {}
    for name, module in TRAINERS:
        parser = argparse.ArgumentParser(prog=f"lantern-studio {name}")
        importlib.import_module(module).add_arguments(parser)
        out[name] = parser_table(parser)
    return out
