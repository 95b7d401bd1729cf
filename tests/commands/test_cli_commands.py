"""The subcommands come from one table (cli.COMMANDS), and ``lantern-studio --help`` and every subcommand's
``--help`` list the same commands and flags as before the table existed: ``cli_surface.json`` was generated
from the parser at the commit it names, before the table replaced the hand-built parser."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from lantern_studio import cli

SURFACE = json.loads((Path(__file__).parent / "cli_surface.json").read_text(encoding="utf-8"))["commands"]


def surface(parser, path=(), out=None, help_text=None) -> dict:
    """{command path: its help line, its subcommands and its flags}, walked from a parser."""
    out = {} if out is None else out
    subs = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    flags = [f for a in parser._actions if a is not subs for f in (a.option_strings or [a.dest])]
    out[" ".join(path) or "lantern-studio"] = {"help": help_text, "flags": flags,
                                               "subcommands": list(subs.choices) if subs else []}
    if subs is not None:
        helps = {c.dest: c.help for c in subs._choices_actions}
        for name, p in subs.choices.items():
            surface(p, (*path, name), out, helps.get(name))
    return out


def test_the_parser_built_from_the_table_has_the_commands_flags_and_help_lines_of_before():
    got = surface(cli.build_parser())
    assert sorted(got) == sorted(SURFACE)
    for path, want in SURFACE.items():
        assert got[path] == want, path


def parser_at(path: str) -> argparse.ArgumentParser:
    parser = cli.build_parser()
    for name in ([] if path == "lantern-studio" else path.split()):
        subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = subs.choices[name]
    return parser


@pytest.mark.parametrize("path", sorted(SURFACE))
def test_each_help_lists_its_commands_and_flags(path, capsys):
    """What ``--help`` prints names every flag of the table's parser (those its parser hides aside), so the
    flags compared above are the ones a person reads."""
    argv = [] if path == "lantern-studio" else path.split()
    with pytest.raises(SystemExit) as done:
        cli.main([*argv, "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    for action in parser_at(path)._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._SubParsersAction):
            continue
        for name in action.option_strings or [action.metavar or action.dest]:
            assert name in text, f"{path} --help does not mention {name}"
    for sub in SURFACE[path]["subcommands"]:
        assert sub in text, f"{path} --help does not list {sub}"


def test_every_command_is_one_row_of_the_table_with_a_module_that_adds_arguments_and_runs():
    rows = [(c.name, c) for c in cli.COMMANDS] + [(f"{c.name} {k.name}", k) for c in cli.COMMANDS for k in c.children]
    assert sorted(name for name, _ in rows) == sorted(p for p in SURFACE if p != "lantern-studio"
                                                      and not p.startswith("models "))
    for name, row in rows:
        if row.children:
            continue
        mod = cli._module(row.module)
        assert callable(mod.add_arguments) and callable(mod.run), name


def test_a_row_added_to_the_table_is_a_command(monkeypatch):
    extra = cli.Command("hello", ".desktop", "a command added in one line")
    monkeypatch.setattr(cli, "COMMANDS", (*cli.COMMANDS, extra))
    got = surface(cli.build_parser())
    assert got["hello"]["help"] == "a command added in one line"
    assert "hello" in got["lantern-studio"]["subcommands"]
