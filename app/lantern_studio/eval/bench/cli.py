"""``lantern-studio bench``: its options and the command that runs it."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path

import torch
from tqdm import tqdm

from ...devices import pick_device
from ...engine.checkpoints import CheckpointError
from ...engine.precision import PrecisionError, name as precision_name, native_bf16, resolve
from ...engine.settings import SettingsError
from ...engine.text import PromptError
from ...models import load_pipeline
from ...models.lantern_profile import PROFILE_FILE, write_profile
from ...reports import machine_info
from ...threads import configure_decode_threads
from ..floor import step_vs_floor
from ..width_cost import COMPILED_WIDTHS, cost_curve, describe as describe_windows, window_picks
from .ladder import describe as describe_ladder, profile as lantern_profile
from .methods import method_grid, select_methods, with_compiled_twins
from .prompts import choose_prompts
from .quality import load_dataset_quietly, load_quality
from .report import format_table, write_csv, write_json, write_pictures
from .runner import run_bench
from .schema import BenchError
from .summary import pick_default

EXIT_BAD_INPUT = 2
QUICK_PROMPTS = 2
DEFAULT_N = 16


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None, help="model folder or name (default: the bundled model)")
    p.add_argument("--prompts", default=None, metavar="FILE",
                   help="prompts, one per line, or a JSON prompt set (common_prompts.json), or 'train-captions' "
                        "(names of training emoji: validation prompts for choosing checkpoints and defaults) "
                        "(default: the model's held-out prompts, else the dataset's)")
    p.add_argument("--n", type=int, default=None, help=f"number of prompts (default {DEFAULT_N}; {QUICK_PROMPTS} with --quick)")
    p.add_argument("--quick", action="store_true",
                   help="2 prompts and a small grid: vanilla, exact per drafter, 2 LANTERN points, Jacobi relaxed")
    p.add_argument("--methods", nargs="+", default=None, metavar="PATTERN",
                   help="only these methods (names or families, globs, commas allowed; vanilla always runs)")
    p.add_argument("--list-methods", action="store_true", help="print the method grid for the model and exit")
    p.add_argument("--seed", type=int, default=0, help="seed of prompt 1 (prompt i uses seed + i − 1)")
    p.add_argument("--seeds-per-prompt", type=int, default=1, metavar="S",
                   help="decode each of the --n prompts S times, with S different seeds (default 1)")
    p.add_argument("--json", default=None, metavar="FILE", help="write the full report as JSON")
    p.add_argument("--csv", default=None, metavar="FILE", help="write one row per method as CSV")
    p.add_argument("--out", default="bench-out", metavar="DIR",
                   help="folder for the plot, the sample grid and bench.json (default: bench-out/)")
    p.add_argument("--no-pictures", action="store_true", help="skip the plot and the sample grid")
    p.add_argument("--data", default=None, metavar="DIR", help="dataset folder (default: the built emoji64 dataset)")
    p.add_argument("--no-warmup", action="store_true", help="skip the untimed warm-up generation per method")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    p.add_argument("--device", default=None, help="cpu, cuda, mps (default: the best available)")
    p.add_argument("--precision", default="auto", help="auto, fp32, bf16, fp16: weights and KV caches of the "
                   "speculative methods (auto: bf16 where the device runs it natively); vanilla runs in fp32 and "
                   "bf16 where native, and the faster is the reference")
    p.add_argument("--measure-tv", action="store_true",
                   help="measure, exactly, each step's total variation from the target (TV mean / max columns; "
                        "slow for LANTERN with sampled drafts, so timings then include the measurement)")
    p.add_argument("--compile", action="store_true",
                   help="also run every chosen method with compiled decode steps (NAME-compiled; torch.compile, "
                        "compiled once before timing): vanilla's compiled twin can be the reference")
    p.add_argument("--max-fidelity-drop", type=float, default=0.03,
                   help="default pick: largest allowed fidelity drop vs vanilla (fraction, default 0.03)")
    p.add_argument("--style", default=None,
                   help="a class model's art style for every method: a style's name, 'any' (one per seed), or '' "
                        "(the model's default; the default)")
    p.add_argument("--write-profile", action="store_true",
                   help="keep the δ and k ladders of this run (the LANTERN rows at the default k, or at the default "
                        "δ, exact as rung 0) in the model folder as lantern_profile.json: the studio's sliders then "
                        "say what each rung did on this model and where its pictures break")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    quick = bool(getattr(args, "quick", False))
    n = args.n if args.n is not None else (QUICK_PROMPTS if quick else DEFAULT_N)
    try:
        if n < 1:
            raise BenchError(f"--n: must be ≥ 1, got {n}")
        if args.threads is not None:
            if args.threads < 1:
                raise BenchError(f"--threads: must be ≥ 1, got {args.threads}")
            torch.set_num_threads(args.threads)
        else:
            configure_decode_threads()
        if not (0.0 <= args.max_fidelity_drop <= 1.0):
            raise BenchError(f"--max-fidelity-drop: must be in [0, 1], got {args.max_fidelity_drop}")
        device = pick_device(args.device)
        try:
            spec_precision = precision_name(resolve(args.precision, device))
        except PrecisionError as e:
            raise BenchError(f"--{e}") from None
        # Vanilla runs in fp32 and, where the hardware has it natively (or it was asked
        # for), bf16: the faster one is the reference.
        vanilla_precisions = ["fp32"] + (["bf16"] if native_bf16(device)[0] or spec_precision == "bf16" else [])
        if spec_precision not in vanilla_precisions:
            vanilla_precisions.append(spec_precision)
        # Loaded in fp32: every precision's copy is cast from the most precise weights.
        pipe = load_pipeline(args.model, device=device, precision="fp32")
        if args.style is not None:  # every method's settings start from the pipeline's defaults
            pipe.defaults = replace(pipe.defaults, style=args.style).validate(pipe.vocab_size)
        grid = method_grid(pipe.drafters, pipe.vocab_size, quick=quick, vanilla_precisions=vanilla_precisions)
        methods = select_methods(grid, args.methods)
        if args.compile:
            methods = with_compiled_twins(methods)
        if args.list_methods:
            for m in methods:
                print(f"{m.name:32s} {m.label}")
            return 0
        data_dir = Path(args.data) if args.data else None
        dataset = load_dataset_quietly(data_dir)
        if args.data and not isinstance(dataset, tuple):
            raise BenchError(f"--data: {dataset}")
        if args.seeds_per_prompt < 1:
            raise BenchError(f"--seeds-per-prompt {args.seeds_per_prompt}: must be >= 1")
        chosen, source = choose_prompts(pipe, n, args.prompts, dataset, identities=True)
        chosen = [c for c in chosen for _ in range(args.seeds_per_prompt)]
        quality = load_quality(pipe.source.folder, dataset)
        if pipe.scorer is not None and quality.recogniser is not None:
            quality.meter = pipe.scorer.meter()  # the studio's own meter: calibrated, among the emoji it draws
        prompts = [c[0] for c in chosen]
        for p in dict.fromkeys(prompts):  # bad prompts (and a bad --style) fail now, not halfway through
            pipe.conditioner(p, pipe.defaults)
    except (BenchError, CheckpointError, SettingsError, PromptError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT

    print(f"bench: {pipe.name}, {len(methods)} methods × {len(prompts)} prompts ({source}), "
          f"seeds {args.seed}..{args.seed + len(prompts) - 1}, {'no ' if args.no_warmup else ''}warm-up", file=sys.stderr)
    runs_total = len(methods) * (len(prompts) + (0 if args.no_warmup else 1))
    bar = None
    if not args.quiet:
        bar = tqdm(total=runs_total, unit="img", desc="bench", file=sys.stderr, dynamic_ncols=True)

    def progress(msg):
        if bar is not None:
            bar.set_postfix_str("done: " + msg, refresh=False)
            bar.update(1)

    try:
        report = run_bench(pipe, prompts, methods, args.seed, subgroups=[c[1] for c in chosen], quality=quality,
                           identities=[c[2] for c in chosen] if any(c[2] for c in chosen) else None,
                           warmup=not args.no_warmup, on_progress=progress, precision=spec_precision,
                           measure_tv=bool(getattr(args, "measure_tv", False)))
    except (SettingsError, PromptError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    finally:
        if bar is not None:
            bar.close()
    report["default_pick"] = pick_default(report["methods"], args.max_fidelity_drop, images=len(prompts))
    machine = machine_info()
    machine["device"] = str(pipe.device)
    report["machine"] = machine
    folder = pipe.source.folder
    report["model"] = {"name": pipe.name, "folder": str(folder) if folder is not None else None,
                       "vocab_size": pipe.vocab_size, "grid": pipe.grid, "drafters": list(pipe.drafters),
                       "defaults": pipe.defaults.to_dict()}
    report["step_floor"] = [{"precision": p, "compiled": False, **step_vs_floor(pipe.with_precision(p), prompts[0])}
                            for p in vanilla_precisions]
    if args.compile:  # the compiled vanilla step against the same floor
        report["step_floor"] += [{"precision": p, "compiled": True,
                                  **step_vs_floor(pipe.with_precision(p).with_compiled_steps((1,)), prompts[0])}
                                 for p in vanilla_precisions]
    report["width_cost"] = [{"precision": p, "compiled": False, "curve": cost_curve(pipe.with_precision(p), prompts[0])}
                            for p in vanilla_precisions]
    if args.compile:  # the compiled path's own curve: its verify costs are not the eager ones
        report["width_cost"] += [{"precision": p, "compiled": True, "curve": cost_curve(
            pipe.with_precision(p).with_compiled_steps(COMPILED_WIDTHS), prompts[0], COMPILED_WIDTHS)}
            for p in vanilla_precisions]
    report["window_picks"] = window_picks(report["methods"], report["width_cost"])
    report["lantern_profile"] = lantern_profile(report)
    notes = list(report["quality"]["notes"])
    load = report["load_average"]["start"]
    cores = os.cpu_count() or 1
    if load and load[0] > cores:
        hint = ", or try --threads 1" if torch.get_num_threads() > 1 else ""
        notes.append(f"the machine was busy (load average {load[0]:.1f} on {cores} cores): timings are noisy; "
                     f"rerun when idle{hint}")
    report["notes"] = notes
    report["config"] = {"n": len(prompts), "seeds_per_prompt": args.seeds_per_prompt, "quick": quick, "seed": args.seed, "warmup": not args.no_warmup,
                        "prompt_source": source, "methods": [m.name for m in methods],
                        "max_fidelity_drop": args.max_fidelity_drop,
                        "options": {k: v for k, v in vars(args).items() if k != "func" and not callable(v)}}
    try:
        files = {}
        out = Path(args.out)
        if not args.no_pictures:
            files.update(write_pictures(report, out))
        files["json"] = str(write_json(report, out / "bench.json"))
        if args.json:
            files["json"] = str(write_json(report, args.json))
        if args.csv:
            files["csv"] = str(write_csv(report, args.csv))
        report["files"] = files
        if args.json:  # again, now with the file list
            write_json(report, args.json)
        write_json(report, out / "bench.json")
    except OSError as e:
        print(f"error: writing the results failed: {e}", file=sys.stderr)
        return 1

    m = report["machine"]
    print(f"{pipe.name} on {m['cpu']} ({m['device']}, {m['threads']} threads, torch {m['torch']}); "
          f"{len(prompts)} prompts × {len(methods)} methods, interleaved, {report['total_seconds']:.1f} s; "
          f"load average {report['load_average']['start']} → {report['load_average']['end']}")
    print(format_table(report))
    for sf in report["step_floor"]:
        how = ", compiled" if sf.get("compiled") else ""
        print(f"vanilla decode step ({sf['precision']}{how}) {sf['step_ms']:.2f} ms vs matmul-only floor "
              f"{sf['floor_ms']:.2f} ms ({sf['ratio']:.2f}×; {sf['rows']} CFG rows, {sf['threads']} threads)")
    for line in describe_windows(report["width_cost"], report["window_picks"]):
        print(line)
    for r in report["methods"]:
        if r.get("compiled"):
            used = r.get("compiled_share")
            print(f"{r['name']}: compiled steps {'used for ' + format(used, '.0%') + ' of forwards' if used is not None else 'not used'}"
                  f" (compiled in {r.get('compile_seconds') or 0:.1f} s{'; ' + r['compiled_note'] if r.get('compiled_note') else ''})")
    for lad in ((report["lantern_profile"] or {}).get("ladders") or {}).values():
        for line in describe_ladder(lad):
            print(line)
    if getattr(args, "write_profile", False):
        if report["lantern_profile"] is None:
            print("error: --write-profile: this run has no ladder (run exact and LANTERN at the default k with "
                  "several δ, e.g. --methods 'exact-jacobi*' 'lantern-jacobi-k64-*')", file=sys.stderr)
            return EXIT_BAD_INPUT
        if folder is None:
            print("error: --write-profile: the model has no folder to keep the profile in", file=sys.stderr)
            return EXIT_BAD_INPUT
        try:
            files["profile"] = str(write_profile(folder, report["lantern_profile"]))
        except OSError as e:
            print(f"error: --write-profile: writing {Path(folder) / PROFILE_FILE} failed: {e}", file=sys.stderr)
            return 1
    for note in report["notes"]:
        print(f"note: {note}")
    for kind, path in files.items():
        print(f"{kind}: {path}")
    return 0
