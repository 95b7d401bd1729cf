"""A recipe: the chain of stages that made one bundled model's shipped files, as a TOML file
(``recipes/<model>.toml``) that ``lantern-studio train replay`` runs.

A recipe holds a name, the model folder it describes, what it ran on, and ``[[stage]]`` tables in order.
Each stage is either

* **run** — one training command (``run = "train ar"``) with its flags (``args``); a stage whose schedule
  changed while it ran lists the schedule that actually ran as ``schedule = [{steps, until, threads}, …]``:
  each segment runs the command with ``--steps`` (the cosine is read from it at every step) up to global step
  ``until`` (absent: to the end of that schedule), resuming the previous segment's checkpoint; or
* **pinned** — files that today's code cannot make again (made on a data format it no longer builds),
  taken from the commit that holds them: ``pinned = {"vq.safetensors" = "COMMIT:PATH"}``.

``expect`` names each output file's hash: ``sha256:HEX`` for data (the file's bytes) and ``tensors:HEX`` for
weights (:func:`.common.tensors_digest`: names, dtypes, shapes and bytes; a safetensors file's own bytes also
carry metadata whose order varies). Arguments name folders with ``{out}`` (the stage's own folder under the
replay's work folder), ``{STAGE}`` (an earlier stage's folder) and ``{repo}`` (the repository root).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .errors import TrainingError

#: the commands a stage may run → the training module that holds them
COMMANDS = {"train data": "data", "train vq": "vq", "train ar": "ar", "train recogniser": "recogniser",
            "train retoken": "retoken", "train ship": "ship"}
#: the flags a schedule segment sets; the stage's ``args`` must leave them to it
SEGMENT_FLAGS = ("--steps", "--threads")
_HASH = re.compile(r"^(sha256|tensors):[0-9a-f]{64}$")
_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]*$")
_FIELD = re.compile(r"\{([^{}]*)\}")


@dataclass(frozen=True)
class Segment:
    """One stretch of a stage's schedule: ``--steps steps``, stopped at global step ``until`` (None: at
    its end), on ``threads`` CPU threads (None: the command's default)."""

    steps: int
    until: int | None = None
    threads: int | None = None

    @property
    def end(self) -> int:
        return self.steps if self.until is None else self.until


@dataclass(frozen=True)
class Stage:
    name: str
    run: str | None = None
    args: tuple[str, ...] = ()
    schedule: tuple[Segment, ...] = ()
    pinned: dict[str, str] = field(default_factory=dict)
    expect: dict[str, str] = field(default_factory=dict)
    note: str = ""

    @property
    def trains(self) -> bool:
        """A stage with a schedule (a training loop that stops and resumes)."""
        return bool(self.schedule)

    def uses(self) -> list[str]:
        """The earlier stages its arguments name."""
        return [m for a in self.args for m in _FIELD.findall(a) if m not in ("out", "repo")]


@dataclass(frozen=True)
class Recipe:
    name: str
    model: str
    summary: str
    hardware: str
    stages: tuple[Stage, ...]
    path: Path | None = None
    card: dict = field(default_factory=dict)  # the model card's words: role, draws (from looking at its grid)

    def stage(self, name: str) -> Stage:
        for s in self.stages:
            if s.name == name:
                return s
        raise TrainingError(f"{self.path or self.name}: no stage {name!r}; it has "
                            f"{', '.join(s.name for s in self.stages)}")


def _fail(where, msg: str) -> TrainingError:
    return TrainingError(f"{where}: {msg}")


def _segment(where, i: int, raw) -> Segment:
    if not isinstance(raw, dict) or set(raw) - {"steps", "until", "threads"} or "steps" not in raw:
        raise _fail(where, f"schedule entry {i + 1} must be a table of steps, until and threads")
    vals = {k: raw.get(k) for k in ("steps", "until", "threads")}
    for k, v in vals.items():
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
            raise _fail(where, f"schedule entry {i + 1}: {k} must be a positive whole number, got {v!r}")
    if vals["until"] is not None and vals["until"] > vals["steps"]:
        raise _fail(where, f"schedule entry {i + 1}: until {vals['until']} is past its steps {vals['steps']}")
    return Segment(**vals)


def _strings(where, what: str, raw) -> dict[str, str]:
    if not isinstance(raw, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in raw.items()):
        raise _fail(where, f"{what} must be a table of file names to strings")
    for k in raw:
        if "/" in k or "\\" in k or k in ("", ".", ".."):
            raise _fail(where, f"{what}: {k!r} must be a plain file name inside the stage's folder")
    return dict(raw)


def _stage(path, i: int, raw, before: list[str]) -> Stage:
    where = f"{path}, stage {i + 1}"
    if not isinstance(raw, dict):
        raise _fail(where, "must be a table")
    unknown = set(raw) - {"name", "run", "args", "schedule", "pinned", "expect", "note"}
    if unknown:
        raise _fail(where, f"unknown keys {', '.join(sorted(unknown))}")
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME.match(name) or name in ("out", "repo"):
        raise _fail(where, f"name must be lower-case letters, digits, '.' or '-', got {name!r}")
    where = f"{path}, stage {name!r}"
    if name in before:
        raise _fail(where, "named twice")
    run, pinned = raw.get("run"), raw.get("pinned")
    if (run is None) == (pinned is None):
        raise _fail(where, "needs exactly one of run (a command) and pinned (files from a commit)")
    if run is not None and run not in COMMANDS:
        raise _fail(where, f"run {run!r} is not one of {', '.join(COMMANDS)}")
    args = raw.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise _fail(where, "args must be a list of strings")
    schedule = tuple(_segment(where, j, s) for j, s in enumerate(raw.get("schedule", [])))
    if schedule and run not in ("train vq", "train ar", "train recogniser"):
        raise _fail(where, f"{run or 'a pinned stage'} has no training schedule")
    if schedule and any(a.split("=")[0] in SEGMENT_FLAGS for a in args):
        raise _fail(where, f"{' and '.join(SEGMENT_FLAGS)} belong to the schedule, not to args")
    ends = [s.end for s in schedule]
    if any(b <= a for a, b in zip(ends, ends[1:])):
        raise _fail(where, f"each schedule entry must end past the one before (ends {ends})")
    pins = _strings(where, "pinned", pinned) if pinned is not None else {}
    for f, src in pins.items():
        if not re.match(r"^[0-9a-f]{7,40}:[^:]+$", src):
            raise _fail(where, f"pinned {f}: {src!r} must be COMMIT:PATH")
    expect = _strings(where, "expect", raw.get("expect", {}))
    for f, h in expect.items():
        if not _HASH.match(h):
            raise _fail(where, f"expect {f}: {h!r} must be sha256:HEX or tensors:HEX (64 hex digits)")
    if pins and set(pins) - set(expect):
        raise _fail(where, f"every pinned file needs its expected hash ({', '.join(sorted(set(pins) - set(expect)))})")
    stage = Stage(name, run, tuple(args), schedule, pins, expect, str(raw.get("note", "")))
    missing = [u for u in stage.uses() if u not in before]
    if missing:
        raise _fail(where, f"its args name {', '.join('{' + m + '}' for m in missing)}, not an earlier stage")
    return stage


def parse_recipe(text: str, path: Path | str = "recipe") -> Recipe:
    """A recipe from its TOML text; anything malformed is one :class:`TrainingError` naming where."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise _fail(path, f"not TOML ({e})") from None
    for key in ("name", "model"):
        if not isinstance(raw.get(key), str) or not raw[key]:
            raise _fail(path, f"needs a {key} (a string)")
    stages_raw = raw.get("stage")
    if not isinstance(stages_raw, list) or not stages_raw:
        raise _fail(path, "needs at least one [[stage]]")
    stages: list[Stage] = []
    for i, s in enumerate(stages_raw):
        stages.append(_stage(path, i, s, [t.name for t in stages]))
    card = raw.get("card", {})
    if not isinstance(card, dict) or not all(isinstance(v, str) for v in card.values()):
        raise _fail(path, "[card] must be a table of strings")
    return Recipe(raw["name"], raw["model"], str(raw.get("summary", "")), str(raw.get("hardware", "")),
                  tuple(stages), Path(path), dict(card))


def read_recipe(path: Path | str) -> Recipe:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise _fail(path, f"cannot be read ({e.__class__.__name__}: {e})") from None
    return parse_recipe(text, path)


def repo_root() -> Path:
    """The repository the recipes live in (their ``{repo}``): the checkout that holds this package."""
    return Path(__file__).resolve().parents[3]


def shown_path(path: Path) -> str:
    """A recipe's path as a reader types it: relative to the repository when inside it."""
    try:
        return Path(path).resolve().relative_to(repo_root()).as_posix()
    except ValueError:
        return Path(path).as_posix()


def fill(arg: str, out: Path, folders: dict[str, Path], repo: Path) -> str:
    """One argument with ``{out}``, ``{repo}`` and ``{STAGE}`` replaced by folders."""
    def one(m: re.Match) -> str:
        key = m.group(1)
        if key == "out":
            return str(out)
        if key == "repo":
            return str(repo)
        return str(folders[key])
    return _FIELD.sub(one, arg)
