"""``lantern-studio batch PROMPTS --out DIR``: many images, resumable, in-process or on Ray.

    lantern-studio batch prompts.txt --out renders --seeds 4 --set k=64 --set delta=0.2
    lantern-studio batch prompts.txt --out sweep --sweep 'k=16,64,256' --sweep 'delta=0,0.1,0.2,0.4'
    lantern-studio batch prompts.jsonl --out renders --ray local --workers 4
    lantern-studio batch prompts.jsonl --out renders --ray head-node:6379

Writes ``DIR/images/*.png`` (settings embedded, as the studio's), ``DIR/manifest.jsonl``
(one line per image: prompt, seed, settings, stats, sha256) and ``DIR/report.json``
(the bench's statistics per setting; with ``--sweep`` also the vanilla reference and
``DIR/speedup-vs-fidelity.png``). Running the same command again renders only what
is missing. A command: it spans the models (loading), export (PNGs) and eval (the
report) layers (docs/architecture.md); the plan and manifest are in batch_plan.py,
the rendering in batch_run.py, the Ray workers in batch_ray.py; docs/scale-out.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Callable, Optional

import numpy as np
from PIL import Image
from tqdm import tqdm

from ..devices import DeviceError, pick_device
from ..engine.checkpoints import CheckpointError
from ..engine.files import atomic_write, sha256_file
from ..engine.precision import PRECISIONS, PrecisionError
from ..engine.settings import GenerationSettings, SettingsError
from ..eval import sweep as sweep_report
from ..eval.bench import load_quality
from ..models.dataset import DatasetError, load_dataset
from ..records import bounded_json, png_text
from ..reports import machine_info
from ..threads import configure_decode_threads
from .batch_plan import (BatchError, Manifest, build_plan, check_early, commit, parse_set, parse_sweeps,
                         read_prompts, refuse_links, remove_leftovers)
from .batch_ray import RayExecutor, RayUnavailable
from .batch_run import LocalExecutor

EXIT_OK, EXIT_FAIL, EXIT_BAD_INPUT = 0, 1, 2
REPORT = "report.json"
PLOT = "speedup-vs-fidelity.png"
MAX_RUNS = 50  # report.json keeps this many runs' timings (a re-run that renders nothing is one too)
INFO = "batch-info.json"  # what the workers said about the model: a finished re-run needs no worker


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("prompts", metavar="PROMPTS",
                   help="a text file (one prompt per line, # comments) or JSONL "
                        "({\"prompt\": …, \"seed\"?: N, \"settings\"?: {…}, \"subgroup\"?: …} per line)")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder (images/, manifest.jsonl, report.json)")
    p.add_argument("--model", default=None, help="model folder or name (default: the bundled model)")
    p.add_argument("--seeds", type=int, default=1, metavar="N",
                   help="seeds per prompt: --first-seed … --first-seed+N−1 (a JSONL line's own seed replaces them)")
    p.add_argument("--first-seed", type=int, default=0, metavar="S", help="the first seed (default 0)")
    p.add_argument("--set", action="append", default=None, metavar="NAME=VALUE",
                   help="a setting for every item, e.g. --set k=64 --set delta=0.2 --set drafter=eagle "
                        "(names as in the PNG's settings; cfg = cfg_scale, dashes allowed)")
    p.add_argument("--sweep", action="append", default=None, metavar="NAME=V1,V2,…",
                   help="every combination of the swept values, e.g. --sweep 'k=16,64,256' --sweep 'delta=0,0.1,0.2'; "
                        "adds the vanilla reference (no drafter) and a report with speed-ups")
    p.add_argument("--ray", default=None, metavar="ADDRESS|local",
                   help="run on Ray: 'local' starts a local Ray cluster, HOST:PORT or ray://HOST:PORT joins one "
                        "(needs the [cluster] extra)")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="Ray workers, one pipeline each (default: one per GPU, else one per CPU of the cluster)")
    p.add_argument("--precision", default="auto", help="auto, fp32, bf16, fp16: weights and KV caches "
                   "(auto: bf16 where the device runs it natively, else fp32); part of each item's key")
    p.add_argument("--device", default=None, help="in-process: cpu, cuda, mps (default: the best available)")
    p.add_argument("--data", default=None, metavar="DIR",
                   help="dataset folder for the Fréchet distance's real images (default: the built emoji64 "
                        "dataset, if any; a model folder's heldout_features.npy is used first)")
    p.add_argument("--no-verify", action="store_true",
                   help="trust finished items' PNGs without re-hashing them against the manifest")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    return run_batch(args)


def _err(msg: str, code: int = EXIT_FAIL) -> int:
    print(f"error: {msg}", file=sys.stderr)
    return code


def _executor(args):
    """The in-process pipeline, or Ray workers for --ray."""
    if args.ray:
        return RayExecutor(args.ray, args.workers, args.model, args.precision)
    configure_decode_threads()
    return LocalExecutor(args.model, pick_device(args.device), args.precision)


def run_batch(args: argparse.Namespace, hook: Optional[Callable[[object, dict], None]] = None) -> int:
    """The command. ``hook(executor, manifest_line)`` is called after each image is
    committed (tests use it to interrupt a run or kill a Ray worker)."""
    started = time.perf_counter()
    out = Path(args.out)
    try:
        prompts = read_prompts(args.prompts)
        fixed = parse_set(args.set)
        sweeps = parse_sweeps(args.sweep)
        check_early(fixed, sweeps)
        if args.seeds < 1:
            raise BatchError(f"--seeds: must be ≥ 1, got {args.seeds}")
        if args.workers is not None and args.workers < 1:
            raise BatchError(f"--workers: must be ≥ 1, got {args.workers}")
        if str(args.precision).strip().lower() not in PRECISIONS:
            raise BatchError(f"--precision: must be one of {', '.join(PRECISIONS)}, got {args.precision!r}")
        if out.exists() and not out.is_dir():
            raise BatchError(f"--out {out}: exists and is not a folder")
        refuse_links(out)
    except BatchError as e:
        return _err(str(e), EXIT_BAD_INPUT)
    if args.workers and not args.ray:
        print("note: --workers applies to --ray; in-process runs one pipeline", file=sys.stderr)
    if args.device and args.ray:
        print("note: --device applies in-process; Ray workers use a GPU each where the cluster has them", file=sys.stderr)

    # A re-run whose images are all there loads no model and starts no Ray: the plan's
    # keys come from what the last run's workers said about the model (batch-info.json),
    # as long as the model folder's model.json is unchanged.
    info = _cached_info(args, out)
    if info is not None:
        try:
            plan = _plan(info, prompts, fixed, sweeps, args)
        except BatchError:
            plan = None
        if plan is not None:
            done, _state = Manifest(out).done(plan, verify=not args.no_verify)
            if len(done) == len(plan.items):
                return _finish(args, None, info, plan, prompts, out, done, {}, 0.0, started=started)
    try:
        executor = _executor(args)
    except RayUnavailable as e:
        return _err(str(e), EXIT_FAIL)
    except (BatchError, CheckpointError, DeviceError, PrecisionError, SettingsError) as e:
        return _err(str(e), EXIT_BAD_INPUT)
    try:
        return _run(args, executor, prompts, fixed, sweeps, out, hook, started)
    except BatchError as e:  # e.g. a link planted in the output folder while the run was going
        return _err(str(e), EXIT_BAD_INPUT)
    finally:
        executor.close()


def _plan(info, prompts, fixed, sweeps, args):
    return build_plan(prompts, GenerationSettings.from_dict(info["defaults"]), model=info["model"],
                      precision=info["precision"], seeds=args.seeds, first_seed=args.first_seed, fixed=fixed,
                      sweeps=sweeps, vocab_size=info["vocab_size"])


def _target(args) -> str:
    return f"ray:{args.ray}" if args.ray else f"local:{args.device or 'auto'}"


def _model_json_sha(info) -> Optional[str]:
    folder = info.get("folder")
    f = Path(folder) / "model.json" if folder else None
    return sha256_file(f) if f is not None and f.is_file() else None


def _cached_info(args, out: Path) -> Optional[dict]:
    try:
        c = bounded_json((out / INFO).read_text(encoding="utf-8"), out / INFO)
    except (OSError, ValueError):  # RecordError is a ValueError: a damaged or hostile file is re-made
        return None
    if not isinstance(c, dict) or c.get("request") != {"model": args.model, "precision": args.precision,
                                                        "target": _target(args)}:
        return None
    info = c.get("info")
    if not isinstance(info, dict) or not c.get("model_json_sha256") or _model_json_sha(info) != c["model_json_sha256"]:
        return None
    return info


def _save_info(args, out: Path, info: dict) -> None:
    sha = _model_json_sha(info)
    if sha is None:
        return
    body = {"request": {"model": args.model, "precision": args.precision, "target": _target(args)},
            "model_json_sha256": sha, "info": info}
    atomic_write(out / INFO, lambda tmp: Path(tmp).write_text(json.dumps(body, indent=2, default=str), encoding="utf-8"))


def _run(args, executor, prompts, fixed, sweeps, out: Path, hook, started: float) -> int:
    info = executor.info()
    try:
        plan = _plan(info, prompts, fixed, sweeps, args)
        wrong = next((it for it in plan.items if it.settings["drafter"] not in info["drafters"]), None)
        if wrong is not None:
            raise BatchError(f"drafter {wrong.settings['drafter']!r}: {info['name']} has "
                             f"{', '.join(info['drafters'])} (no learned drafter)")
        bad = executor.check_prompts(list(dict.fromkeys(p.prompt for p in prompts)))
        if bad:
            line = next(p for p in prompts if p.prompt in bad)
            raise BatchError(f"PROMPTS line {line.line}: {bad[line.prompt]}")
    except BatchError as e:
        return _err(str(e), EXIT_BAD_INPUT)

    manifest = Manifest(out)
    removed = remove_leftovers(out)
    done, state = manifest.done(plan, verify=not args.no_verify)
    todo = [it for it in plan.items if it.key not in done]
    try:
        _save_info(args, out, info)
    except OSError as e:
        return _err(f"writing into {out} failed: {e.strerror or e}")
    workers = executor.workers
    where = "in-process" if not args.ray else f"Ray ({args.ray}), {len(workers)} workers on {executor.device}"
    print(f"batch: {info['name']} ({info['precision']}), {len(plan.items)} images from {len(prompts)} prompt(s) "
          f"and {len(plan.groups)} setting(s); {len(done)} done, {len(todo)} to render; {where}", file=sys.stderr)
    if state.torn or removed:
        print(f"note: an interrupted run left {state.torn} torn manifest line(s) and {removed} temporary file(s); "
              "they are cleaned up and their items rendered again", file=sys.stderr)

    by_key = plan.by_key()
    counts = {w: 0 for w in workers}
    written: dict = {}
    bar = None
    if not args.quiet and todo:
        bar = tqdm(total=len(plan.items), initial=len(done), unit="img", desc="batch", file=sys.stderr,
                   dynamic_ncols=True, smoothing=0.1)

    def on_result(result: dict) -> None:
        item = by_key[result["key"]]
        line = commit(out, manifest, item, result["png"], result["entry"])
        written[item.key] = line
        w = line.get("worker") or "?"
        counts[w] = counts.get(w, 0) + 1
        if bar is not None:
            bar.set_postfix_str(" ".join(f"{k}:{v}" for k, v in counts.items()), refresh=False)
            bar.update(1)
        if hook is not None:
            hook(executor, line)

    t0 = time.perf_counter()
    try:
        executor.run(todo, on_result)
    except BatchError as e:
        return _err(str(e), EXIT_FAIL)
    except OSError as e:  # a full disk, a read-only folder
        return _err(f"writing into {out} failed: {e.strerror or e}", EXIT_FAIL)
    finally:
        if bar is not None:
            bar.close()
    return _finish(args, executor, info, plan, prompts, out, done, counts, time.perf_counter() - t0, written,
                   started=started, startup=t0 - started)


def _finish(args, executor, info, plan, prompts, out: Path, done: dict, counts: dict, seconds: float,
            written: Optional[dict] = None, *, started: float, startup: float = 0.0) -> int:
    """Compact the manifest, write report.json (and the plot), print the table."""
    written = written or {}
    manifest = Manifest(out)
    try:  # leave one line per image (under the folder's lock: another batch may be appending)
        final = manifest.compact_latest()
    except OSError as e:
        return _err(f"writing {manifest.path} failed: {e.strerror or e}")
    by_key = plan.by_key()
    entries = {k: final.entries[k] for k in by_key if k in final.entries}
    missing = [k for k in by_key if k not in entries]
    if missing:
        return _err(f"{len(missing)} of {len(plan.items)} images are missing from {manifest.path} after the run")

    try:
        report = _report(args, plan, entries, info, out)
    except BatchError as e:  # an image that is not the one its manifest line lists (both ways to get here)
        return _err(str(e), EXIT_FAIL)
    n_workers = getattr(executor, "size", 1)  # workers running at once (a dead one's replacement counts once)
    report["run"] = {
        "executor": None if executor is None else executor.kind, "ray": args.ray, "workers": list(counts),
        "per_worker": counts, "dead_workers": list(getattr(executor, "dead", [])), "rendered": len(written),
        "skipped": len(done), "seconds": seconds, "startup_seconds": startup,
        "images_per_second": len(written) / seconds if written and seconds > 0 else None,
        "seconds_per_1k_images": 1000 * seconds / len(written) if written else None,
        "worker_seconds_per_1k_images": 1000 * seconds * n_workers / len(written) if written else None,
    }
    report["run"]["total_seconds"] = time.perf_counter() - started  # loading, rendering and this report
    report["run"]["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    report["runs"] = (_previous_runs(out / REPORT) + [report["run"]])[-MAX_RUNS:]  # this folder's runs, oldest first
    try:
        sweep_report.write_json(report, out / REPORT)
        plot = None
        if report["reference"] and len(report["methods"]) > 1:
            plot = sweep_report.write_plot(report, out / PLOT, title=f"{info['name']}: speed-up vs quality "
                                           f"({len(prompts)} prompts × seeds, median and IQR)",
                                           subtitle=(report["machine"].get("cpu") or "")[:90])
    except OSError as e:
        return _err(f"writing the report failed: {e.strerror or e}")

    print(sweep_report.format_table(report))
    r = report["run"]
    if written:
        print(f"rendered {r['rendered']} images in {seconds:.1f} s after {startup:.1f} s loading "
              f"({r['images_per_second']:.2f} img/s; "
              f"{r['seconds_per_1k_images'] / 60:.1f} min per 1k images with {n_workers} worker(s)); "
              + ", ".join(f"{w}: {c}" for w, c in counts.items()) + (f"; {len(done)} were already done" if done else ""))
    else:
        print(f"nothing to render: all {len(plan.items)} images are in {manifest.path}")
    for note in report["notes"]:
        print(f"note: {note}")
    print(f"manifest: {manifest.path}\nreport: {out / REPORT}" + (f"\nplot: {plot}" if plot else ""))
    return EXIT_OK


def _previous_runs(path: Path) -> list:
    try:
        runs = bounded_json(path.read_text(encoding="utf-8"), path).get("runs")
    except (OSError, ValueError, AttributeError):
        return []
    return [r for r in runs if isinstance(r, dict)] if isinstance(runs, list) else []


def _report(args, plan, entries: dict, info: dict, out: Path) -> dict:
    notes = []
    folder = Path(info["folder"]) if info.get("folder") else None
    if folder is not None and not folder.is_dir():
        notes.append(f"the model folder {folder} is not on this machine: quality fields are null")
        folder = None
    quality = None
    if folder is not None and (folder / "recogniser.safetensors").is_file():
        dataset = None
        if args.data or not (folder / "heldout_features.npy").is_file():
            try:
                dataset = load_dataset(args.data)
            except (DatasetError, OSError, ValueError) as e:
                if args.data:
                    notes.append(f"--data {args.data}: {e}")
                dataset = None
        quality = load_quality(folder, dataset)
    elif folder is not None or info.get("catalogue"):
        notes.append("the model ships no recogniser: prompt fidelity and Fréchet distance are null")

    def load_image(entry):
        try:
            png_text(out / entry["file"])  # the header's size limits, before any pixel is decoded
            with Image.open(out / entry["file"]) as im:
                return np.asarray(im.convert("RGB"))
        except (OSError, ValueError, Image.DecompressionBombError) as e:  # RecordError is a ValueError
            fix = ("re-run without --no-verify to re-render it" if args.no_verify else
                   "its bytes are the ones the manifest lists, so delete the file and re-run to re-render it")
            raise BatchError(f"{out / entry['file']}: not the image the manifest lists ({e}); {fix}") from None

    groups = [{"name": g.name, "family": g.family, "changes": g.changes, "keys": g.keys} for g in plan.groups]
    report = sweep_report.build_report(groups, entries, quality=quality, load_image=load_image)
    if quality is not None:
        notes += list(quality.notes)
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    cores = os.cpu_count() or 1
    if load and load[0] > cores:
        notes.append(f"the machine was busy (load average {load[0]:.1f} on {cores} cores): timings are noisy")
    if args.ray and args.ray != "local":
        notes.append("speed-ups pair images that different workers may have rendered: on a mixed cluster compare "
                     "settings on one kind of node")
    report.update({
        "model": {k: info.get(k) for k in ("name", "model", "folder", "catalogue", "vocab_size", "grid", "drafters",
                                           "defaults")},
        "precision": plan.precision, "machine": {**machine_info(), "device": info.get("device")},
        "workers": info.get("workers"),
        "config": {"prompts": str(args.prompts), "seeds": args.seeds, "first_seed": args.first_seed,
                   "set": list(args.set or []), "sweep": list(args.sweep or []), "ray": args.ray,
                   "workers": args.workers, "precision": args.precision},
        "items": len(plan.items), "manifest": str(out / "manifest.jsonl"), "notes": notes,
    })
    return report
