"""What a batch is made of, and what of it is already done (``lantern-studio batch``).

No Ray and no model here: reading PROMPTS, parsing ``--set`` / ``--sweep``,
turning them into work items with stable keys, and the output folder's
``manifest.jsonl``, which is how a re-run knows what to skip.

An item's key is a hash of the model (its name and model.json), the precision
it decodes in, the prompt and the full settings (the seed among them): the
same key means the same image, whichever worker renders it. The manifest has
one JSON line per finished image, appended (flushed and fsynced) only after
the PNG it names is on disk, so a line never points at a missing or half-written
file; a torn last line (a kill mid-append) is ignored and cut off before the
next append. The executors (commands/batch_run.py, commands/batch_ray.py) and
the CLI (commands/batch.py) use this; see docs/scale-out.md.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import math
import os
import re
import socket
import time
import typing
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

from ..engine.files import atomic_write, sha256_file
from ..engine.settings import GenerationSettings, SettingsError
from ..export import slug
from ..records import RecordError, bounded_json

try:
    import fcntl
except ImportError:  # (Windows has no flock: Manifest.locked then locks nothing)
    fcntl = None

MANIFEST = "manifest.jsonl"
LOCK = ".batch.lock"  # the output folder's writers' lock (Manifest.locked)
IMAGES = "images"
KEY_SCHEMA = "lantern-studio-batch/1"
VANILLA = "vanilla"

#: Names ``--set`` / ``--sweep`` / a JSONL line's "settings" accept besides the fields themselves.
ALIASES = {"cfg": "cfg_scale", "lambda": "lam", "λ": "lam", "δ": "delta"}
#: Fields that are not settings of a batch item: the seed comes from --seeds or the JSONL line.
NOT_SETTABLE = ("seed",)
_FIELDS = {f.name: f for f in fields(GenerationSettings)}
_HINTS = typing.get_type_hints(GenerationSettings)


class BatchError(ValueError):
    """Bad batch input; the message is one line naming what is wrong."""


# --------------------------------------------------------------------------- settings from text


#: Limits checked before anything is built or read whole (a typo must not ask for gigabytes)
MAX_PROMPTS_BYTES = 16 * 2**20
MAX_PROMPT_LINES = 100_000
MAX_SEEDS = 100_000
MAX_COMBINATIONS = 10_000  # the product of every --sweep's value count
MAX_ITEMS = 1_000_000  # prompts × seeds × settings
SHOW_CHARS = 40  # a value quoted in an error line


def show(text) -> str:
    """A value as an error line quotes it: its repr, cut to a readable length."""
    r = repr(text)
    return r if len(r) <= SHOW_CHARS else r[: SHOW_CHARS - 3] + "…" + r[-1]


def field_name(name: str, where: str) -> str:
    """A settings name as typed (``draft-length``, ``cfg``) → the GenerationSettings field."""
    raw = str(name).strip()
    key = ALIASES.get(raw, raw.replace("-", "_"))
    if key in NOT_SETTABLE:
        raise BatchError(f"{where}: {raw!r} is not a setting here (seeds come from --seeds or a JSONL line's \"seed\")")
    if key not in _FIELDS:
        names = ", ".join(n for n in _FIELDS if n not in NOT_SETTABLE)
        raise BatchError(f"{where}: unknown setting {raw!r} (one of: {names})")
    return key


def parse_value(key: str, text: str, where: str):
    """``text`` as the type of setting ``key`` (int, float, bool, str, optional float)."""
    hint = _HINTS[key]
    t = str(text).strip()
    optional = typing.get_origin(hint) is typing.Union and type(None) in typing.get_args(hint)
    base = next((a for a in typing.get_args(hint) if a is not type(None)), hint) if optional else hint
    if optional and t.lower() in ("none", "null", ""):
        return None
    try:
        if base is bool:
            low = t.lower()
            if low in ("1", "true", "yes", "on"):
                return True
            if low in ("0", "false", "no", "off"):
                return False
            raise ValueError
        if base is int:
            return int(t)
        if base is float:
            return float(t)
        return t
    except (ValueError, OverflowError):
        kind = {bool: "true or false", int: "an integer", float: "a number"}.get(base, "text")
        raise BatchError(f"{where}: {key} must be {kind}, got {show(t)}") from None


def json_value(key: str, value, where: str):
    """A JSONL line's setting value, checked for the field's type (ints are fine for floats)."""
    hint = _HINTS[key]
    optional = typing.get_origin(hint) is typing.Union and type(None) in typing.get_args(hint)
    base = next((a for a in typing.get_args(hint) if a is not type(None)), hint) if optional else hint
    if value is None and optional:
        return None
    ok = (isinstance(value, bool) if base is bool else
          (isinstance(value, int) and not isinstance(value, bool)) if base is int else
          (isinstance(value, (int, float)) and not isinstance(value, bool)) if base is float else
          isinstance(value, str))
    if not ok:
        kind = {bool: "true or false", int: "an integer", float: "a number"}.get(base, "a string")
        raise BatchError(f"{where}: {key} must be {kind}, got {json.dumps(value)[:40]}")
    return float(value) if base is float else value


def parse_set(items: Optional[Sequence[str]]) -> dict:
    """``--set k=64 --set delta=0.2`` → {"k": 64, "delta": 0.2} (later ones win)."""
    out: dict = {}
    for raw in items or ():
        name, eq, value = str(raw).partition("=")
        where = f"--set {show(raw)}"
        if not eq or not name.strip():
            raise BatchError(f"{where}: expected NAME=VALUE, e.g. --set k=64")
        key = field_name(name, where)
        out[key] = parse_value(key, value, where)
    return out


def parse_sweeps(items: Optional[Sequence[str]]) -> list[tuple[str, list]]:
    """``--sweep 'k=16,64,256' --sweep 'delta=0,0.1'`` → [("k", [16, 64, 256]), ("delta", [0.0, 0.1])]."""
    out: list[tuple[str, list]] = []
    for raw in items or ():
        name, eq, values = str(raw).partition("=")
        where = f"--sweep {show(raw)}"
        if not eq or not name.strip():
            raise BatchError(f"{where}: expected NAME=V1,V2,…, e.g. --sweep 'k=16,64,256'")
        key = field_name(name, where)
        if any(key == k for k, _ in out):
            raise BatchError(f"{where}: {key} is swept twice (give all its values in one --sweep)")
        parts = [v for v in values.split(",")]
        if not any(p.strip() for p in parts):
            raise BatchError(f"{where}: no values after '='")
        if len(parts) > MAX_COMBINATIONS:
            raise BatchError(f"{where}: {len(parts)} values (at most {MAX_COMBINATIONS})")
        vals = []
        for p in parts:
            v = parse_value(key, p, where)
            if v not in vals:
                vals.append(v)
        out.append((key, vals))
        combos = math.prod(len(v) for _, v in out)
        if combos > MAX_COMBINATIONS:
            raise BatchError(f"--sweep: {combos} combinations of settings (at most {MAX_COMBINATIONS}); sweep fewer "
                             "values or split the run")
    return out


def _fmt(v) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v).lower() if isinstance(v, bool) else str(v)


def sweep_grid(sweeps: Sequence[tuple[str, list]]) -> list[tuple[str, dict]]:
    """Every combination of the swept values, in the order given: [(name, changes)];
    without sweeps, one unnamed group with no changes."""
    if not sweeps:
        return [("batch", {})]
    keys = [k for k, _ in sweeps]
    out = []
    for combo in itertools.product(*(vals for _, vals in sweeps)):
        changes = dict(zip(keys, combo))
        out.append((" ".join(f"{k}={_fmt(v)}" for k, v in changes.items()), changes))
    return out


def vanilla_changes() -> dict:
    """The reference every sweep is timed against: no drafter, no relaxation (as the bench's vanilla)."""
    return {"drafter": "none", "k": 0, "delta": 0.0, "lam": None, "bound": "lantern", "adaptive_delta": False}


# --------------------------------------------------------------------------- PROMPTS


@dataclass(frozen=True)
class PromptLine:
    prompt: str
    line: int  # 1-based line number in PROMPTS
    seed: Optional[int] = None  # a JSONL line's own seed (then --seeds does not apply to it)
    settings: dict = field(default_factory=dict)  # a JSONL line's settings
    subgroup: Any = None  # a JSONL line's "subgroup"/"subgroups": what a recogniser should see (fidelity)


def _is_jsonl(path: Path, lines: Sequence[str]) -> bool:
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        return True
    if path.suffix.lower() == ".txt":
        return False
    body = [ln.strip() for ln in lines if ln.strip() and not ln.strip().startswith("#")]
    return bool(body) and all(ln.startswith("{") for ln in body)


def read_prompts(path) -> list[PromptLine]:
    """PROMPTS: a text file (one prompt per line, ``#`` comments, blank lines skipped)
    or JSONL (one ``{"prompt": …, "seed"?: int, "settings"?: {…}, "subgroup"?: …}`` per line).
    Any bad line is a BatchError naming the file, the line and what is wrong."""
    p = Path(path)
    if not p.is_file():
        raise BatchError(f"PROMPTS {p}: not a file (one prompt per line, or JSONL)")
    try:
        size = p.stat().st_size
        if size > MAX_PROMPTS_BYTES:
            raise BatchError(f"PROMPTS {p}: {size} bytes (at most {MAX_PROMPTS_BYTES // 2**20} MiB); split the file")
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise BatchError(f"PROMPTS {p}: cannot be read ({e})") from None
    lines = text.splitlines()
    if len(lines) > MAX_PROMPT_LINES:
        raise BatchError(f"PROMPTS {p}: {len(lines)} lines (at most {MAX_PROMPT_LINES}); split the file")
    out: list[PromptLine] = []
    if not _is_jsonl(p, lines):
        for i, ln in enumerate(lines, 1):
            s = ln.strip()
            if s and not s.startswith("#"):
                out.append(PromptLine(s, i))
    else:
        for i, ln in enumerate(lines, 1):
            s = ln.strip()
            if not s or s.startswith("#"):
                continue
            where = f"PROMPTS {p.name} line {i}"
            try:
                row = bounded_json(s, where)
            except RecordError as e:
                raise BatchError(str(e)) from None
            if not isinstance(row, dict):
                raise BatchError(f"{where}: expected an object {{\"prompt\": …}}, got {type(row).__name__}")
            unknown = sorted(set(row) - {"prompt", "seed", "settings", "subgroup", "subgroups"})
            if unknown:
                raise BatchError(f"{where}: unknown key {unknown[0]!r} (allowed: prompt, seed, settings, subgroup)")
            prompt = row.get("prompt")
            if not isinstance(prompt, str) or not prompt.strip():
                raise BatchError(f"{where}: \"prompt\" must be a non-empty string")
            seed = row.get("seed")
            if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not -(2**63) <= seed < 2**63):
                raise BatchError(f"{where}: \"seed\" must be a 64-bit integer, got {json.dumps(seed)[:40]}")
            raw_settings = row.get("settings") or {}
            if not isinstance(raw_settings, dict):
                raise BatchError(f"{where}: \"settings\" must be an object of setting: value")
            settings = {}
            for name, value in raw_settings.items():
                key = field_name(name, f"{where}: settings")
                settings[key] = json_value(key, value, f"{where}: settings")
            out.append(PromptLine(prompt.strip(), i, seed, settings, row.get("subgroups") or row.get("subgroup")))
    if not out:
        raise BatchError(f"PROMPTS {p}: no prompts (one per line, # starts a comment; or JSONL)")
    return out


# --------------------------------------------------------------------------- the plan


def _canonical(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def model_id(name: str, manifest: Optional[dict] = None, catalogue: Optional[str] = None) -> str:
    """What a key says about the model: its name and a hash of its model.json (which
    lists every weight file's sha256), or its catalogue name."""
    if manifest:
        return f"{name}@{hashlib.sha256(_canonical(manifest).encode()).hexdigest()[:16]}"
    return f"{name}@{catalogue}" if catalogue else name


def item_key(model: str, precision: str, prompt: str, settings: dict) -> str:
    """The hex sha256 naming one image: model, precision, prompt and every setting (seed included)."""
    body = {"schema": KEY_SCHEMA, "model": model, "precision": precision, "prompt": prompt,
            "settings": {k: settings[k] for k in sorted(settings)}}
    return hashlib.sha256(_canonical(body).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class WorkItem:
    """One image to render. Plain data (a dict on the wire to Ray workers)."""

    key: str
    prompt: str
    seed: int
    settings: dict  # GenerationSettings.to_dict(), validated, seed included
    file: str  # relative to the output folder
    prompt_index: int = 0  # which PROMPTS line (0-based among the prompts)
    subgroup: Any = None

    def to_dict(self) -> dict:
        return {"key": self.key, "prompt": self.prompt, "seed": self.seed, "settings": dict(self.settings),
                "file": self.file, "prompt_index": self.prompt_index, "subgroup": self.subgroup}

    @classmethod
    def from_dict(cls, d: dict) -> "WorkItem":
        return cls(d["key"], d["prompt"], int(d["seed"]), dict(d["settings"]), d["file"],
                   int(d.get("prompt_index", 0)), d.get("subgroup"))


@dataclass
class Group:
    """One row of a sweep's report: a setting and the items (keys) rendered with it."""

    name: str
    family: str  # "vanilla" (the reference) | "sweep" | "batch"
    changes: dict
    keys: list = field(default_factory=list)


@dataclass
class Plan:
    items: list  # [WorkItem], unique by key, in the order they should run
    groups: list  # [Group]
    model: str  # model_id(...)
    precision: str

    def by_key(self) -> dict:
        return {it.key: it for it in self.items}


def image_file(prompt: str, seed: int, key: str) -> str:
    return f"{IMAGES}/{slug(prompt)}-seed{seed}-{key[:12]}.png"


def build_plan(prompts: Sequence[PromptLine], defaults: GenerationSettings, *, model: str, precision: str,
               seeds: int = 1, first_seed: int = 0, fixed: Optional[dict] = None,
               sweeps: Optional[Sequence[tuple[str, list]]] = None, vocab_size: Optional[int] = None) -> Plan:
    """Every (prompt, seed, setting) to render. Settings: the model's defaults, then
    ``fixed`` (--set), then the line's own settings, then the sweep combination.
    A sweep also gets the vanilla reference (drafter none) on the same prompts and
    seeds. Items are ordered prompt by prompt, seed by seed, settings interleaved
    (vanilla first), so a slow drift of the machine hits every setting alike and a
    partial run already has comparable pairs. Identical items (same key) are kept once."""
    if not 1 <= seeds <= MAX_SEEDS:
        raise BatchError(f"--seeds: must be in [1, {MAX_SEEDS}], got {seeds}")
    if not -(2**63) <= first_seed or first_seed + seeds - 1 >= 2**63:
        raise BatchError(f"--first-seed: {first_seed} + {seeds} seeds runs past the largest seed (2**63 - 1)")
    combos = math.prod(len(v) for _, v in (sweeps or [])) + (1 if sweeps else 0)
    total = sum(1 if line.seed is not None else seeds for line in prompts) * combos
    if total > MAX_ITEMS:
        raise BatchError(f"{total} images planned (prompts × seeds × settings; at most {MAX_ITEMS}); use fewer "
                         "seeds, prompts or sweep values, or split the run")
    fixed = dict(fixed or {})
    grid = sweep_grid(sweeps or [])
    groups = [Group(name, "batch" if not sweeps else "sweep", changes) for name, changes in grid]
    if sweeps:
        groups.insert(0, Group(VANILLA, "vanilla", vanilla_changes()))
    items: dict[str, WorkItem] = {}
    for index, line in enumerate(prompts):
        line_seeds = [line.seed] if line.seed is not None else [first_seed + j for j in range(seeds)]
        for seed in line_seeds:
            for g in groups:
                changes = {**fixed, **line.settings, **g.changes, "seed": int(seed)}
                try:
                    s = defaults.with_(**changes).validate(vocab_size)
                except SettingsError as e:
                    where = f"PROMPTS line {line.line}" if line.settings else ("--set/--sweep" if fixed or sweeps else "model defaults")
                    raise BatchError(f"{where} ({g.name}): {e}") from None
                d = s.to_dict()
                key = item_key(model, precision, line.prompt, d)
                if key not in items:
                    items[key] = WorkItem(key, line.prompt, int(seed), d, image_file(line.prompt, seed, key), index,
                                          line.subgroup)
                if key not in g.keys:
                    g.keys.append(key)
    return Plan(list(items.values()), groups, model, precision)


def check_early(fixed: dict, sweeps: Sequence[tuple[str, list]]) -> None:
    """Catch out-of-range --set / --sweep values before a model loads (against the
    plain defaults; the model's own ones are checked again when the plan is built)."""
    for name, changes in sweep_grid(sweeps):
        try:
            GenerationSettings().with_(**{**fixed, **changes}).validate(None)
        except SettingsError as e:
            raise BatchError(f"{'--sweep ' + name if sweeps else '--set'}: {e}") from None


# --------------------------------------------------------------------------- the manifest

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def refuse_links(out_dir) -> None:
    """The output folder's manifest and images/ must be what they say, not links to elsewhere: a link
    planted there would have lines appended to an outside file or outside files deleted."""
    for name in (MANIFEST, IMAGES):
        p = Path(out_dir) / name
        if p.is_symlink():
            raise BatchError(f"{p}: is a symbolic link (to {os.readlink(p)}); refused — the output folder's "
                             f"{name} must be its own")


@dataclass
class ManifestState:
    entries: dict  # key → the last valid line for it
    lines: int = 0
    torn: int = 0  # unparsable lines (a kill mid-append leaves at most one, at the end)
    superseded: int = 0  # lines replaced by a later one for the same key


class Manifest:
    """``DIR/manifest.jsonl``: one JSON object per finished image."""

    def __init__(self, out_dir):
        self.dir = Path(out_dir)
        self.path = self.dir / MANIFEST
        self._checked_tail = False

    def read(self) -> ManifestState:
        st = ManifestState({})
        refuse_links(self.dir)
        if not self.path.is_file():
            return st
        with os.fdopen(os.open(self.path, os.O_RDONLY | NOFOLLOW), "rb") as fh:
            for raw in fh:
                if not raw.strip():
                    continue
                st.lines += 1
                try:
                    row = bounded_json(raw.decode("utf-8"), self.path)
                except (UnicodeDecodeError, RecordError):
                    st.torn += 1
                    continue
                if not raw.endswith(b"\n") or not isinstance(row, dict) or not isinstance(row.get("key"), str):
                    st.torn += 1
                    continue
                if row["key"] in st.entries:
                    st.superseded += 1
                st.entries[row["key"]] = row
        return st

    def is_done(self, entry: dict, verify: bool = True) -> bool:
        """The line's PNG is there (and, with ``verify``, its bytes hash to the line's sha256)."""
        f = self.dir / str(entry.get("file", ""))
        if not entry.get("file") or not f.is_file():
            return False
        if entry.get("bytes") is not None and f.stat().st_size != entry["bytes"]:
            return False
        return not verify or sha256_file(f) == entry.get("sha256")

    def done(self, plan: Plan, verify: bool = True) -> tuple[dict, ManifestState]:
        """{key: entry} of the plan's items that are finished, and what the manifest held."""
        st = self.read()
        wanted = {it.key: it for it in plan.items}
        done = {k: e for k, e in st.entries.items() if k in wanted and e.get("file") == wanted[k].file
                and self.is_done(e, verify)}
        return done, st

    def _repair_tail(self) -> None:
        """Cut a torn last line (no newline: a kill mid-append) so the next line starts clean."""
        self._checked_tail = True
        if not self.path.is_file() or self.path.stat().st_size == 0:
            return
        refuse_links(self.dir)
        with os.fdopen(os.open(self.path, os.O_RDWR | NOFOLLOW), "rb+") as fh:
            fh.seek(-1, os.SEEK_END)
            if fh.read(1) == b"\n":
                return
            fh.seek(0)
            data = fh.read()
            cut = data.rfind(b"\n") + 1
            fh.truncate(cut)
            fh.flush()
            os.fsync(fh.fileno())

    def append(self, entry: dict) -> None:
        """One line, written whole, flushed and fsynced (the PNG it names must already be on disk)."""
        if not self._checked_tail:
            self._repair_tail()
        line = (json.dumps(entry, sort_keys=True, ensure_ascii=False, default=str) + "\n").encode("utf-8")
        self.dir.mkdir(parents=True, exist_ok=True)
        refuse_links(self.dir)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | NOFOLLOW, 0o666)
        try:
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)

    def compact(self, keep: Iterable[dict]) -> None:
        """Rewrite the manifest with exactly ``keep`` (one line each), atomically. (Under :meth:`locked`,
        with ``keep`` read under it too, when another writer may be appending.)"""
        body = "".join(json.dumps(e, sort_keys=True, ensure_ascii=False, default=str) + "\n" for e in keep)
        atomic_write(self.path, lambda tmp: Path(tmp).write_text(body, encoding="utf-8"), durable=True)
        self._checked_tail = True

    def compact_latest(self) -> ManifestState:
        """Under the lock: read the manifest and, if it holds torn or superseded lines, rewrite it with one
        line per image (a line another writer appends meanwhile waits, so none is lost); → what it held."""
        with self.locked():
            st = self.read()
            if st.torn or st.superseded:
                self.compact(st.entries.values())
            return st

    @contextlib.contextmanager
    def locked(self):
        """The output folder's writers' lock (``DIR/.batch.lock``, ``flock``): a PNG's rename and its line,
        and a compaction, happen under it, one writer at a time, processes and threads alike. (Where
        ``flock`` does not exist, nothing is locked.)"""
        self.dir.mkdir(parents=True, exist_ok=True)
        if fcntl is None:
            yield
            return
        fd = os.open(self.dir / LOCK, os.O_RDWR | os.O_CREAT | NOFOLLOW, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # (closing releases the lock)


#: A temporary PNG of another process on another host (whose life cannot be asked) is stale after this.
STALE_TEMP_SECONDS = 3600.0
#: ``.<file>.<host tag>-<pid>.<random>.tmp.png``: the temporary name of a PNG being committed (commit)
_OWNED_TEMP = re.compile(r"\.([0-9a-f]{8})-(\d+)\.[A-Za-z0-9_]+\.tmp\.png$")


def _host_tag() -> str:
    return hashlib.sha256(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:8]


def temp_owner() -> str:
    """This process's part of its temporary PNG names: the host (hashed) and the process id."""
    return f"{_host_tag()}-{os.getpid()}"


def _alive(pid: int) -> bool:
    """Whether process ``pid`` of this host still runs (where that cannot be asked: assumed so)."""
    if pid <= 0:
        return False
    if os.name == "nt":  # os.kill would end it there
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it runs, as another user
        return True
    return True


def is_stale_temp(f: Path, now: Optional[float] = None) -> bool:
    """Whether a hidden ``*.tmp.png`` in ``images/`` is a leftover (safe to delete), not a write in progress:
    one this host's dead process named, one named the way older versions did (no owner to ask), or one
    untouched for :data:`STALE_TEMP_SECONDS` (another host's, or a reused process id)."""
    m = _OWNED_TEMP.search(f.name)
    if m is None:
        return True
    if m.group(1) == _host_tag() and not _alive(int(m.group(2))):
        return True
    try:
        return (time.time() if now is None else now) - f.stat().st_mtime > STALE_TEMP_SECONDS
    except OSError:
        return False


def remove_leftovers(out_dir) -> int:
    """Delete temporary files a killed write left in ``DIR/images`` (hidden ``*.tmp.png``); → how many.
    A write in progress (another ``batch`` into the same folder) is left alone: :func:`is_stale_temp`."""
    folder = Path(out_dir) / IMAGES
    n = 0
    refuse_links(out_dir)
    if folder.is_dir():
        for f in folder.iterdir():
            if f.name.startswith(".") and f.name.endswith(".tmp.png") and f.is_file() and is_stale_temp(f):
                try:
                    f.unlink()
                    n += 1
                except OSError:
                    pass
    return n


def commit(out_dir, manifest: Manifest, item: WorkItem, png: bytes, entry: dict) -> dict:
    """Write one finished image: its PNG (atomically, durably), then its manifest line.
    ``entry`` is the worker's description (stats, seconds, worker); → the line written.

    Two writers of one folder (two ``batch`` runs, or threads) stay in step: the temporary PNG is
    named for this process (:func:`temp_owner`, so another run's start-up leaves it alone), and the
    rename and its line happen under the folder's lock (:meth:`Manifest.locked`), so the last line
    for a file always describes the bytes renamed into place last."""
    path = Path(out_dir) / item.file
    refuse_links(out_dir)
    line = {**entry, "key": item.key, "file": item.file, "prompt": item.prompt, "seed": item.seed,
            "settings": item.settings, "prompt_index": item.prompt_index,
            # the line's own subgroup, else the one the worker's scorer matched the prompt to
            "subgroup": item.subgroup if item.subgroup is not None else entry.get("subgroup"),
            "sha256": hashlib.sha256(png).hexdigest(), "bytes": len(png)}
    with manifest.locked():
        atomic_write(path, lambda tmp: Path(tmp).write_bytes(png), durable=True,
                     temp_prefix=f".{path.name}.{temp_owner()}.")
        manifest.append(line)
    return line
