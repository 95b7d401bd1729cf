"""Replay a bundled model's recipe (:mod:`.recipe`): every stage that made its shipped files, in order.

``lantern-studio train replay RECIPE [--stage S] [--until-step N] [--work DIR] [--dry-run]``

Each stage runs in its own folder under the work folder (``--work``, by default the runs folder's
``replay/<recipe name>``). A stage whose outputs already match the recipe's hashes is skipped, so the same
command resumes a replay that stopped: a training stage resumes its checkpoint, and a stage whose schedule
changed while it ran replays that schedule segment by segment (each segment's progress is kept in the stage's
``replay.json``). ``--until-step N`` stops the training stages at global step N (a short span to compare with
the recipe's figures) and ends the replay there. After each stage its outputs are hashed and compared with the
recipe: "matches" or "differs" with both hashes (weights trained on another CPU differ in their last bits).
"""

from __future__ import annotations

import argparse
import importlib
import json
import shutil
import subprocess
from pathlib import Path

from ..engine.files import sha256_file
from ..paths import runs_dir
from .common import atomic_write_text, say, tensors_digest
from .errors import TrainingError, command
from .recipe import COMMANDS, Recipe, Stage, fill, read_recipe, repo_root

PROGRESS = "replay.json"


def digest(path: Path, kind: str) -> str:
    """A file's hash of the kind the recipe names (``sha256`` of its bytes, or ``tensors``)."""
    return sha256_file(path) if kind == "sha256" else tensors_digest(path)


def check_outputs(stage: Stage, out: Path) -> dict[str, tuple[str, str | None]]:
    """Each expected output → (expected hash, the hash found, or None when the file is missing)."""
    found = {}
    for name, want in stage.expect.items():
        kind, _ = want.split(":", 1)
        f = out / name
        try:
            found[name] = (want, f"{kind}:{digest(f, kind)}" if f.is_file() else None)
        except Exception as e:  # an unreadable or corrupt output: it does not match
            found[name] = (want, f"unreadable ({type(e).__name__})")
    return found


def done(stage: Stage, out: Path) -> bool:
    """Whether a stage need not run again: its outputs match the recipe's hashes, or (a stage the recipe
    names no hash for) every one of its command lines finished."""
    if stage.expect:
        return all(w == g for w, g in check_outputs(stage, out).values())
    return _progress(out) >= (len(stage.schedule) or 1)


def report(stage: Stage, out: Path) -> bool:
    """Say, per output, whether it matches the recipe; → whether all do."""
    ok = True
    for name, (want, got) in check_outputs(stage, out).items():
        if want == got:
            say(f"  {stage.name}/{name}: matches {want[:24]}…")
        else:
            ok = False
            say(f"  {stage.name}/{name}: differs: recipe {want[:24]}…, replay {got if got else 'missing'}")
    return ok


def fetch_pinned(stage: Stage, out: Path, repo: Path) -> None:
    """A pinned stage's files, from the commit that holds each (``git show``); where the checkout lacks that
    commit (a shallow clone), from the same path in the working tree when its hash is the recipe's."""
    out.mkdir(parents=True, exist_ok=True)
    for name, source in stage.pinned.items():
        commit, path = source.split(":", 1)
        target = out / name
        shown = subprocess.run(["git", "-C", str(repo), "show", f"{commit}:{path}"], capture_output=True)
        if shown.returncode == 0:
            target.write_bytes(shown.stdout)
        elif (repo / path).is_file():
            shutil.copyfile(repo / path, target)
        else:
            raise TrainingError(f"stage {stage.name}: {path} is neither in this checkout nor in commit {commit} "
                                "(a shallow clone: run `git fetch --unshallow`)")
        want = stage.expect[name]
        kind = want.split(":", 1)[0]
        got = f"{kind}:{digest(target, kind)}"
        if got != want:
            target.unlink()
            raise TrainingError(f"stage {stage.name}: {path} is not the pinned file ({got[:24]}…, the recipe "
                                f"names {want[:24]}…); run `git fetch --unshallow` so that commit {commit} is here")


def parse_stage_args(stage: Stage, argv: list[str]) -> argparse.Namespace:
    """The stage's command line parsed by its command's own parser (its defaults, its checks)."""
    module = importlib.import_module(f".{COMMANDS[stage.run]}", __package__)
    parser = argparse.ArgumentParser(prog=f"lantern-studio {stage.run}", exit_on_error=False)
    module.add_arguments(parser)
    try:
        ns, extra = parser.parse_known_args(argv)
    except (argparse.ArgumentError, SystemExit) as e:
        raise TrainingError(f"stage {stage.name}: its args do not parse for {stage.run} ({e})") from None
    if extra:
        raise TrainingError(f"stage {stage.name}: {stage.run} takes no {' '.join(extra)}")
    ns.func = module.run
    return ns


def command_lines(stage: Stage, out: Path, folders: dict[str, Path], repo: Path) -> list[tuple[list[str], int | None]]:
    """The stage's command lines, one per schedule segment, with the global step each stops at (None: its end)."""
    base = [fill(a, out, folders, repo) for a in stage.args]
    if not stage.trains:
        return [(base, None)]
    return [(base + ["--steps", str(s.steps)] + (["--threads", str(s.threads)] if s.threads else []), s.until)
            for s in stage.schedule]


def _progress(out: Path) -> int:
    try:
        return int(json.loads((out / PROGRESS).read_text())["segments_done"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def run_stage(stage: Stage, out: Path, folders: dict[str, Path], repo: Path, until_step: int | None) -> bool:
    """Run one stage (resuming where it stopped); → False when ``until_step`` cut it short."""
    if stage.pinned:
        fetch_pinned(stage, out, repo)
        return True
    out.mkdir(parents=True, exist_ok=True)
    lines = command_lines(stage, out, folders, repo)
    for j, (argv, until) in enumerate(lines):
        if j < _progress(out):
            continue
        end = stage.schedule[j].end if stage.trains else None
        stop = until if until_step is None or end is None or until_step >= end else until_step
        ns = parse_stage_args(stage, argv)
        ns.stop_at = stop
        tail = f" (to step {stop})" if stop is not None else ""
        say(f"stage {stage.name} [{j + 1}/{len(lines)}]: lantern-studio {stage.run} {' '.join(argv)}{tail}")
        code = ns.func(ns)
        if code:
            raise TrainingError(f"stage {stage.name}: {stage.run} ended with exit code {code}; run the replay "
                                "again to resume it")
        if stop is not None and end is not None and stop < end and stop != until:
            return False
        atomic_write_text(out / PROGRESS, json.dumps({"stage": stage.name, "segments_done": j + 1}))
    return True


def replay(recipe: Recipe, work: Path, *, only: str | None = None, until_step: int | None = None,
           repo: Path | None = None, dry_run: bool = False) -> dict[str, bool]:
    """Replay ``recipe`` in ``work`` (one folder per stage); → each stage replayed or skipped: whether its
    outputs match the recipe."""
    repo = repo or repo_root()
    folders = {s.name: work / s.name for s in recipe.stages}
    stages = [recipe.stage(only)] if only else list(recipe.stages)
    results: dict[str, bool] = {}
    for stage in stages:
        out = folders[stage.name]
        if dry_run:
            for argv, until in command_lines(stage, out, folders, repo):
                say(f"{stage.name}: " + (f"pinned {stage.pinned}" if stage.pinned else
                    f"lantern-studio {stage.run} {' '.join(argv)}" + (f"   # to step {until}" if until else "")))
            continue
        if until_step is None and done(stage, out):
            say(f"stage {stage.name}: done already (its outputs match the recipe); skipped")
            results[stage.name] = True
            continue
        missing = [u for u in stage.uses() if not folders[u].is_dir()]
        if missing:
            raise TrainingError(f"stage {stage.name} needs stage {missing[0]} first ({folders[missing[0]]} is missing)")
        finished = run_stage(stage, out, folders, repo, until_step)
        results[stage.name] = report(stage, out)
        if not finished:
            say(f"stopped at step {until_step} (--until-step): stage {stage.name} is part-way; the same command "
                "without --until-step resumes it")
            break
    return results


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("recipe", help="a recipe file, e.g. recipes/emoji-64.toml")
    p.add_argument("--stage", default=None, help="replay this stage only (the stages it uses must have run)")
    p.add_argument("--until-step", type=int, default=None, metavar="N",
                   help="stop the training stages at global step N and end the replay there")
    p.add_argument("--work", default=None, help="where each stage's folder goes (default: the runs folder's "
                   "replay/<recipe name>)")
    p.add_argument("--dry-run", action="store_true", help="print each stage's command lines and stop")


@command
def run(args) -> int:
    recipe = read_recipe(args.recipe)
    if args.until_step is not None and args.until_step < 1:
        raise TrainingError(f"train replay --until-step: must be 1 or more, got {args.until_step}")
    work = Path(args.work) if args.work else runs_dir() / "replay" / recipe.name
    results = replay(recipe, work, only=args.stage, until_step=args.until_step, dry_run=args.dry_run)
    if results:
        say(f"{sum(results.values())} of {len(results)} stages match the recipe ({work})")
    return 0
