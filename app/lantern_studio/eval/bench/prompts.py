"""Which prompts the bench decodes: ``--prompts`` (a text file or a JSON prompt set),
the model folder's held-out prompts, the dataset's held-out captions, a class
model's names, or a built-in list — each with the subgroup that judges it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ...engine.conditioners import NamedClasses, Snapper
from ..metrics import prompt_subgroup
from .schema import BenchError

#: Prompts used when neither the model folder, the dataset nor --prompts gives any.
FALLBACK_PROMPTS = (
    "red heart", "grinning face", "cat face", "thumbs up", "rocket", "green apple",
    "glowing star", "snowman", "sun with face", "pizza", "dog face", "rainbow",
    "face with tears of joy", "fire", "four leaf clover", "crescent moon",
)


def _spread(pool: list, n: int) -> list:
    """n entries spread evenly over pool (cycling when pool is shorter)."""
    if not pool:
        return []
    if n <= len(pool):
        idx = np.linspace(0, len(pool) - 1, n).round().astype(int) if n > 1 else [0]
        return [pool[i] for i in idx]
    return [pool[i % len(pool)] for i in range(n)]


def read_prompt_set(path, *, identities: bool = False) -> list[tuple]:
    """A JSON prompt set: [{"prompt", "subgroup" | "subgroups", "identities"?}]
    (heldout_prompts.json, common_prompts.json) → [(prompt, subgroup or list of
    subgroups or None)], or with ``identities`` [(prompt, subgroups, list of
    identities that count as right or None)]."""
    p = Path(path)
    try:
        rows = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BenchError(f"--prompts: {p} is not a readable JSON prompt set ({e})") from None
    if not isinstance(rows, list):
        raise BenchError(f"--prompts: {p} must hold a JSON list of {{\"prompt\": ..., \"subgroups\": [...]}}")
    out = []
    for r in rows:
        if isinstance(r, str):
            out.append((r, None, None) if identities else (r, None))
        elif isinstance(r, dict) and isinstance(r.get("prompt"), str) and r["prompt"].strip():
            row = (r["prompt"], r.get("subgroups") or r.get("subgroup"))
            if identities:
                ids = r.get("identities")
                ok = isinstance(ids, list) and ids and all(isinstance(x, str) for x in ids)
                row = (*row, list(ids) if ok else None)
            out.append(row)
    if not out:
        raise BenchError(f"--prompts: {p} has no prompts")
    return out


#: ``--prompts`` value for validation prompts: the names of training emoji (one per identity)
TRAIN_CAPTIONS = "train-captions"


def training_names(meta) -> list[tuple[str, str, list[str]]]:
    """[(emoji name, subgroup, [identity])], one per training identity in data order: the
    validation prompts that choose checkpoints and sampling defaults (never the evaluation set)."""
    seen, out = set(), []
    for m in meta:
        ident, name = m.get("identity"), m.get("name")
        if m.get("split") != "train" or m.get("skin_tone") or not ident or not name or ident in seen:
            continue
        seen.add(ident)
        out.append((str(name), m.get("subgroup"), [str(ident)]))
    return out


def read_prompts_file(path) -> list[str]:
    p = Path(path)
    if not p.is_file():
        raise BenchError(f"--prompts: {p} is not a file (one prompt per line)")
    lines = [ln.strip() for ln in p.read_text(encoding="utf-8").splitlines()]
    prompts = [ln for ln in lines if ln and not ln.startswith("#")]
    if not prompts:
        raise BenchError(f"--prompts: {p} has no prompts (one per line; # starts a comment)")
    return prompts


def choose_prompts(pipe, n: int, prompts_file=None, dataset=None, *,
                   identities: bool = False) -> tuple[list[tuple], str]:
    """→ ([(prompt, subgroup or None)] × n, where they came from); with
    ``identities`` each entry also carries the identities that count as right
    (a JSON prompt set and ``train-captions`` name them; None elsewhere).

    Order of preference: ``--prompts FILE``; ``heldout_prompts.json`` in the
    model folder; held-out captions of the dataset; the class names of a
    class-conditional model; a built-in list."""
    chosen, source = _choose(pipe, n, prompts_file, dataset)
    return (chosen if identities else [(p, s) for p, s, _ in chosen]), source


def _choose(pipe, n: int, prompts_file, dataset) -> tuple[list[tuple], str]:
    """:func:`choose_prompts` with every entry (prompt, subgroup(s), identities or None)."""
    meta = dataset[1] if isinstance(dataset, tuple) else None

    def lookup(text):
        if meta is None:
            return None
        return prompt_subgroup(text, meta)

    def no_ids(pool):
        return [(p, s, None) for p, s in pool]

    if prompts_file == TRAIN_CAPTIONS:
        if meta is None:
            raise BenchError(f"--prompts {TRAIN_CAPTIONS}: needs the dataset (`lantern-studio train data`, or --data)")
        pool = training_names(meta)
        c = getattr(pipe, "conditioner", None)
        taught = {r.get("identity") for r in c.identities} if isinstance(c, Snapper) else set()
        if taught:  # a class model: the identities it was taught (its repertoire), by their names
            pool = [row for row in pool if row[2][0] in taught]
        if not pool:
            raise BenchError(f"--prompts {TRAIN_CAPTIONS}: the dataset has no training emoji")
        return _spread(pool, n), "training emoji names (validation)"
    if prompts_file:
        if str(prompts_file).endswith(".json"):
            return _spread(read_prompt_set(prompts_file, identities=True), n), str(prompts_file)
        pool = [(p, lookup(p)) for p in read_prompts_file(prompts_file)]
        return _spread(no_ids(pool), n), str(prompts_file)
    folder = pipe.source.folder
    held = folder / "heldout_prompts.json" if folder is not None else None
    if held is not None and held.is_file():
        rows = json.loads(held.read_text(encoding="utf-8"))
        pool = [(r["prompt"], r.get("subgroup")) if isinstance(r, dict) else (str(r), lookup(str(r))) for r in rows]
        pool = [(p, s) for p, s in pool if isinstance(p, str) and p.strip()]
        if pool:
            return _spread(no_ids(pool), n), str(held)
    if meta is not None:
        seen, pool = set(), []
        for m in meta:
            cap = m.get("caption")
            if m.get("split") == "heldout" and cap and cap not in seen:
                seen.add(cap)
                pool.append((cap, m.get("subgroup")))
        if pool:
            return _spread(no_ids(pool), n), "dataset held-out captions"
    names = pipe.conditioner.names if isinstance(pipe.conditioner, NamedClasses) else None
    if names:
        return _spread(no_ids([(str(x), lookup(str(x))) for x in names]), n), "model class names"
    return _spread(no_ids([(p, lookup(p)) for p in FALLBACK_PROMPTS]), n), "built-in prompts"
