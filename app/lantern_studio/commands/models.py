"""``lantern-studio models …``: list, show, download, verify, remove, distil a drafter.

A command, not part of the models package: ``distill`` runs the trainer
(training/self_distill.py), and models must not import training
(docs/architecture.md).

    lantern-studio models list [--json]
    lantern-studio models info NAME
    lantern-studio models download NAME [--yes]
    lantern-studio models verify NAME
    lantern-studio models remove NAME [--yes]
    lantern-studio models distill NAME [--steps N] [--sequences N]
"""

from __future__ import annotations

import argparse
import json
import sys

import torch
from tqdm import tqdm

from ..devices import estimate_memory, memory_breakdown
from ..engine.checkpoints import CheckpointError
from ..models import BUNDLED, bundled_dir
from ..models.catalogue import CATALOGUE, get_entry, remove, shared_files, status
from ..models.hub import (DownloadCancelled, HubError, cached_path, check_free_space, download, format_size,
                          hf_cache_dir, is_offline, missing, prepare, verify_cached)
from ..training import self_distill

EXIT_OK, EXIT_FAIL, EXIT_BAD_INPUT = 0, 1, 2


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="models_command")
    ls = sub.add_parser("list", help="the bundled model and the Hub catalogue, with what is installed")
    ls.add_argument("--json", action="store_true", help="machine-readable output")
    info = sub.add_parser("info", help="files, sizes, memory and licence of one model")
    info.add_argument("name")
    dl = sub.add_parser("download", help="fetch a catalogue model into the Hugging Face cache")
    dl.add_argument("name")
    dl.add_argument("--yes", "-y", action="store_true", help="don't ask before downloading")
    ver = sub.add_parser("verify", help="re-hash a downloaded model's files against the hub's hashes (offline)")
    ver.add_argument("name")
    rm = sub.add_parser("remove", help="delete a catalogue model's files from the cache")
    rm.add_argument("name")
    rm.add_argument("--yes", "-y", action="store_true", help="don't ask before deleting")
    ds = sub.add_parser("distill", help="train an EAGLE drafter for a model on its own samples")
    self_distill.add_arguments(ds)
    p.set_defaults(models_command=None)


def run(args) -> int:
    cmd = getattr(args, "models_command", None) or "list"
    try:
        return {"list": cmd_list, "info": cmd_info, "download": cmd_download, "verify": cmd_verify,
                "remove": cmd_remove, "distill": cmd_distill}[cmd](args)
    except KeyError as e:  # unknown catalogue name (get_entry)
        print(f"error: {e.args[0] if e.args else e}", file=sys.stderr)
        return EXIT_BAD_INPUT


def _err(msg: str, code: int = EXIT_FAIL) -> int:
    print(f"error: {msg}", file=sys.stderr)
    return code


def _ask(question: str) -> bool:
    if not sys.stdin or not sys.stdin.isatty():
        print(f"{question} [y/N] (no terminal to ask: pass --yes)", file=sys.stderr)
        return False
    try:
        return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")
    except EOFError:
        return False


# --------------------------------------------------------------------------- list / info


def _rows():
    rows = [{"name": name, "title": title, "kind": "t2i", "source": "bundled",
             "state": "installed" if (bundled_dir(name) / "model.json").is_file() else "missing", "to_fetch_bytes": 0,
             "sizes_exact": True, "drafter": (bundled_dir(name) / "eagle.safetensors").is_file()}
            for name, title in BUNDLED.items()]
    for name in CATALOGUE:
        st = status(name)
        st["source"] = "hub"
        rows.append(st)
    return rows


def cmd_list(args) -> int:
    rows = _rows()
    if getattr(args, "json", False):
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    print("bundled")
    for r in rows[:len(BUNDLED)]:
        mark = "✓ bundled" if r["state"] == "installed" else "✗ missing (reinstall lantern-studio)"
        print(f"  {r['name']:<22} {mark:<24} {r['title']}")
    print(f"Hugging Face Hub (cache: {hf_cache_dir()}{', offline' if is_offline() else ''})")
    for r in rows[len(BUNDLED):]:
        approx = "" if r["sizes_exact"] else "≈"
        if r["state"] == "installed":
            mark = "✓ installed"
        elif r["state"] == "partial":
            mark = f"partial, {approx}{format_size(r['to_fetch_bytes'])} to fetch"
        else:
            mark = f"fetchable, {approx}{format_size(r['to_fetch_bytes'])}"
        extra = " +eagle drafter" if r["drafter"] else ""
        print(f"  {r['name']:<22} {mark:<24} {r['title']}{extra}")
    return EXIT_OK


def cmd_info(args) -> int:
    e = get_entry(args.name)
    st = status(e.name)
    a = e.args()
    print(f"{e.name}: {e.title}")
    print(f"  {e.image_size}×{e.image_size} px, {e.grid}×{e.grid} = {e.tokens} tokens, vocabulary {a.vocab_size}, "
          f"{a.n_layer} layers × {a.dim} wide, ≈{e.params / 1e6:.0f} M parameters")
    if e.kind == "janus":
        print("  conditioning: the prompt in Janus's chat template, then <begin_of_image> (its own tokenizer)")
    else:
        print(f"  conditioning: {'ImageNet-1k class name' if e.kind == 'c2i' else f'caption ({e.text_encoder.repo_id}, {e.text_encoder.length} tokens)'}")
    d = e.defaults
    print(f"  defaults: cfg {d.cfg_scale}, top-k {d.top_k}, top-p {d.top_p}, temperature {d.temperature}")
    print(f"  state: {st['state']}{' (+ self-distilled eagle drafter)' if st['drafter'] else ''}")
    print("  files:")
    for f in e.files:
        here = "✓" if cached_path(f) is not None else " "
        print(f"    {here} {f.label:<58} {'' if f.size_exact else '≈'}{format_size(f.size)}")
    for dt, label in (("bf16", "bf16/fp16 (GPU)"), ("fp32", "fp32 (CPU)")):
        dtype = torch.bfloat16 if dt == "bf16" else torch.float32
        parts = memory_breakdown(e, dtype)
        print(f"  memory, {label}: ≈{format_size(estimate_memory(e, dtype))} "
              f"({', '.join(f'{k} {format_size(v)}' for k, v in parts.items())})")
    print(f"  licence: {e.licence}")
    if e.notes:
        print(f"  notes: {e.notes}")
    print(f"  source: {e.source}")
    return EXIT_OK


# --------------------------------------------------------------------------- download / verify / remove


def cmd_download(args) -> int:
    e = get_entry(args.name)
    try:
        plan = prepare(e.files, check_space=False)
    except HubError as err:
        return _err(str(err))
    except OSError as err:  # reading the cache; writing it is worded by the hub module
        return _err(f"{hf_cache_dir()}: {err.strerror or err}")
    if plan.nothing_to_do:
        print(f"{e.name} is already downloaded ({len(plan.cached)} files in {plan.cache_dir})")
        return EXIT_OK
    print(f"{e.name}: {len(plan.fetch)} file(s) to fetch into {plan.cache_dir}:")
    for r in plan.fetch:
        print(f"  {r.file.label:<58} {format_size(r.size if r.size is not None else r.file.size)}")
    print(f"  total {format_size(plan.total_bytes)}")
    if not args.yes and not _ask(f"Download {format_size(plan.total_bytes)}?"):
        print("nothing downloaded")
        return EXIT_FAIL
    bar = tqdm(total=plan.total_bytes, unit="B", unit_scale=True, unit_divisor=1000, desc=e.name, file=sys.stderr,
               disable=None)  # a bar on a terminal only: a log or a pipe gets the result line, not bar frames

    def progress(p):
        bar.set_postfix_str(p.filename, refresh=False)
        bar.update(p.bytes_done - bar.n)

    try:
        check_free_space(plan.cache_dir, plan.total_bytes)
        download(plan, progress=progress)
    except KeyboardInterrupt:
        bar.close()
        print("download interrupted; run the command again to fetch the rest", file=sys.stderr)
        return 130
    except DownloadCancelled:
        bar.close()
        return _err("download cancelled")
    except HubError as err:
        bar.close()
        return _err(str(err))
    except OSError as err:
        bar.close()
        return _err(f"{plan.cache_dir}: {err.strerror or err}")
    bar.close()
    if e.shards() and missing(e.files):  # the shard index is in: now the shards it names
        return cmd_download(args)
    print(f"downloaded {e.name} ({format_size(plan.total_bytes)}); try: lantern-studio generate "
          f"{'golden retriever' if e.kind == 'c2i' else repr('a photo of a cat')} --model {e.name}")
    return EXIT_OK


def cmd_verify(args) -> int:
    e = get_entry(args.name)
    unchecked: list = []
    problems = verify_cached(e.files, unchecked=unchecked)
    for u in unchecked:
        print(f"  ? {u}", file=sys.stderr)
    if problems:
        for p in problems:
            print(f"  ✗ {p}", file=sys.stderr)
        return _err(f"{e.name}: {len(problems)} problem(s); remove and download it again")
    checked = len(e.files) - len(unchecked)
    if checked == 0:
        return _err(f"{e.name}: none of its {len(e.files)} files could be checked (no hash to compare with)")
    if unchecked:
        return _err(f"{e.name}: {len(unchecked)} of {len(e.files)} files could not be checked (listed above; the "
                    f"other {checked} match): remove and download it again to check them")
    pinned = sum(1 for f in e.files if f.sha256)
    against = ("the catalogue's pinned sha256" if pinned == len(e.files) else "the hub's hashes" if not pinned
               else "the catalogue's pinned sha256 or the hub's hashes")
    print(f"{e.name}: all {len(e.files)} files match {against}")
    return EXIT_OK


def cmd_remove(args) -> int:
    e = get_entry(args.name)
    expected = remove(e.name, dry_run=True)
    if expected == 0:
        print(f"{e.name}: nothing to remove")
        return EXIT_OK
    kept = shared_files(e.name)
    note = f" (keeping {', '.join(f.filename for f in kept)}: used by another installed model)" if kept else ""
    if not args.yes and not _ask(f"Delete {e.name} ({format_size(expected)}){note}?"):
        print("nothing removed")
        return EXIT_FAIL
    freed = remove(e.name)
    print(f"removed {e.name}: freed {format_size(freed)}{note}")
    return EXIT_OK


def cmd_distill(args) -> int:
    try:
        return self_distill.run(args)
    except (CheckpointError, ValueError) as err:
        return _err(str(err), EXIT_BAD_INPUT)
