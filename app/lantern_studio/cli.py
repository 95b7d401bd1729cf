"""One entry point: the GUI by default; the subcommands come from one table, :data:`COMMANDS`."""

from __future__ import annotations

import argparse
import importlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Tuple

from . import __version__
from .doctor import display_available, qt_platform_problem, x_display_unreachable


# --------------------------------------------------------------------------- gui


def _free_name(stem: str) -> Path:
    p = Path(f"{stem}.png")
    i = 1
    while p.exists():
        p = Path(f"{stem}-{i}.png")
        i += 1
    return p


def start_problems() -> list:
    """Every reason the studio window cannot open here, in a fixed order, one line each (empty: none).

    First a named display nobody answers on (Qt would abort with rc 134), then the X11 plugin's missing
    system libraries (Qt would abort with advice about plugins): each is fixed separately, so a user who
    fixes one must not meet the other only on the next try."""
    if not display_available():
        return []
    problems = []
    unreachable = x_display_unreachable()
    if unreachable:
        problems.append(f"the display DISPLAY={unreachable} cannot be reached (no X server answers there): "
                        "start it, or unset DISPLAY to make a sample image from the command line instead")
    libraries = qt_platform_problem()
    if libraries:
        problems.append(libraries)
    return problems


def cmd_gui(args) -> int:
    problems = start_problems()
    if problems:  # say what to fix instead of letting Qt abort the process
        for problem in problems:
            print(f"lantern-studio: {problem}", file=sys.stderr)
        return 1
    if not display_available():
        out = _free_name("lantern-sample")
        why = "no display found (DISPLAY / WAYLAND_DISPLAY are unset)"
        print(
            f"lantern-studio: {why}, so the studio window "
            "cannot open.\nUse the command line instead, e.g.\n"
            "  lantern-studio generate \"a red heart\" --out heart.png\n"
            "or run the window under a virtual display: xvfb-run lantern-studio\n"
            f"Generating a sample from the command line now: {out}",
            file=sys.stderr,
        )
        sample = build_parser().parse_args(["generate", "a red heart", "--out", str(out)]
                                           + (["--model", args.model] if getattr(args, "model", None) else []))
        return sample.func(sample)
    from .gui.app import main as gui_main  # noqa: PLC0415 - only the studio needs Qt's widgets (start-up time)

    return gui_main(model=getattr(args, "model", None))


class _Studio:
    """``lantern-studio gui``: the one command that lives here, because it opens the window (above every
    other layer); the table names this module for it."""

    @staticmethod
    def add_arguments(p: argparse.ArgumentParser) -> None:
        p.add_argument("--model", default=None)

    run = staticmethod(cmd_gui)


# --------------------------------------------------------------------------- the commands

AS_HELP = "as help"  # a command's description: its help line (the default), or none when None


@dataclass(frozen=True)
class Command:
    """One subcommand: its name, the module that provides ``add_arguments(parser)`` and ``run(args)`` (a
    path relative to this package), its help line; ``description`` for ``--help`` (the help line unless
    given; None: none); ``parser``: extra keywords for ``add_parser``; ``children``: sub-subcommands."""

    name: str
    module: Optional[str]
    help: str
    description: Optional[str] = AS_HELP
    parser: Tuple[Tuple[str, object], ...] = ()
    children: Tuple["Command", ...] = ()


# Every subcommand, in the order ``--help`` lists them: adding one is one line here.
COMMANDS = (
    Command("gui", ".cli", "open the studio (the default)", description=None),
    Command("generate", ".commands.generate", "generate one image from a prompt", description=None),
    Command("sweep", ".commands.sweep", "one prompt at several δ (or k) values and vanilla, a few seeds each: a "
            "table and a contact sheet", description="Decode one prompt without a drafter (vanilla) and at each "
            "value of --delta or --k (several values for one of them), at --seeds seeds each; print tokens per "
            "forward, speed-up against the vanilla runs and prompt fidelity (the mean over the seeds with its 95% "
            "interval), and write each PNG, a captioned contact sheet and sweep.json into --out.",
            parser=(("conflict_handler", "resolve"),)),  # --k and --delta take lists there
    Command("bench", ".eval.bench", "speed and quality of decoding methods side by side"),
    Command("bench-scale", ".eval.scale",
            "the bench's speed-ups projected onto a LlamaGen-sized target timed on this machine"),
    Command("batch", ".commands.batch",
            "render a prompt list or a settings sweep, resumable, in-process or on a Ray cluster"),
    Command("train", None, "build data and train the bundled model's parts", description=None, children=(
        Command("data", ".training.data", "fetch the emoji packages and build the dataset"),
        Command("vq", ".training.vq", "train the VQ tokenizer"),
        Command("ar", ".training.ar", "train the AR model"),
        Command("drafter", ".training.drafter", "train the EAGLE drafter on the AR model's features"),
        Command("heads", ".training.heads", "train parallel draft heads on a model folder's target"),
        Command("recogniser", ".training.recogniser", "train the quality recogniser on real images"),
        Command("ship", ".training.ship", "assemble the bundled model folder from trained runs"),
        Command("validate", ".training.validation", "draw validation classes with a class model and score them"),
        Command("jitter", ".training.jitter",
                "measure how jittered copies move an image's tokens to latent neighbours"),
        Command("retoken", ".training.retoken", "carry an AR model's token rows over to a new tokenizer's codes"),
        Command("replay", ".training.replay", "replay a bundled model's recipe, stage by stage, checking each "
                "stage's output hashes"),
    )),
    Command("models", ".commands.models", "list, download and remove models"),
    Command("doctor", ".doctor", "report the environment for bug reports"),
    Command("install-desktop", ".desktop", "add Lantern Studio to your applications menu (this user)"),
)


# --------------------------------------------------------------------------- parser


def missing_dependency(error: ImportError):
    """The third-party package whose absence caused ``error``, or None when the
    error is anything else (one of our own modules missing or broken)."""
    root = (getattr(error, "name", None) or "").split(".")[0]
    if isinstance(error, ModuleNotFoundError) and root and root != __package__.split(".")[0]:
        return root
    return None


def _module(path: str):
    """The object with ``add_arguments`` and ``run`` for a table row's module path."""
    return _Studio if path == ".cli" else importlib.import_module(path, __package__)


def _add(sub, command: Command) -> argparse.ArgumentParser:
    """One subcommand's parser, from its table row: the module's ``add_arguments`` and ``run``, or its
    children's. A subcommand whose third-party dependency is not installed (a trimmed or frozen build) is
    listed as unavailable, naming the package, and the rest of the CLI works; any other import failure is a
    bug and is raised."""
    name, help_text = command.name, command.help
    description = help_text if command.description == AS_HELP else command.description
    if command.module is None:
        p = sub.add_parser(name, help=help_text, description=description, **dict(command.parser))
        children = p.add_subparsers(dest="what", required=True)
        for child in command.children:
            _add(children, child)
        return p
    try:
        mod = _module(command.module)
    except ImportError as e:
        package = missing_dependency(e)
        if package is None:
            raise
        why = f"needs the {package!r} package, which is not installed"
        p = sub.add_parser(name, help=f"{help_text} (unavailable: {why})")
        p.set_defaults(func=lambda a: (print(f"error: {name} unavailable: {why}", file=sys.stderr), 1)[1])
        return p
    p = sub.add_parser(name, help=help_text, description=description, **dict(command.parser))
    mod.add_arguments(p)
    p.set_defaults(func=mod.run)
    return p


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lantern-studio", description="Autoregressive image generation with LANTERN relaxed speculative decoding.")
    parser.add_argument("--version", action="version", version=f"lantern-studio {__version__}")
    sub = parser.add_subparsers(dest="command")
    for command in COMMANDS:
        _add(sub, command)
    return parser


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        return cmd_gui(args)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
