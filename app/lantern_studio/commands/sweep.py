"""``lantern-studio sweep PROMPT --delta 0,0.1,0.2,0.5 --k 64 --seeds 3 --out DIR``: the studio's Sweep from the
command line.

One prompt decoded with no drafter (vanilla: the baseline) and at each value of the swept setting (δ or k; the
other one fixed), at ``--seeds`` seeds each (``fidelity.SWEEP_SEEDS``, 3, by default, as the studio's Sweep: the
given seed and the ones after it), one after the other in this process, seed by seed. Prints one row per value:
tokens per target forward (over its seeds), the speed-up against the vanilla runs (the median over seeds of
vanilla's decode seconds over the value's, seed by seed, as the studio's strip and chart measure it) and, where
the model ships a recogniser, the prompt fidelity: the mean over the seeds with its 95 % interval
(``fidelity.mean_interval``, "62% (48–76%, 3 seeds)"), never one picture's score. Writes each picture as a PNG
with its settings embedded (a value's first seed as ``delta-0.1.png``, the others ``delta-0.1-seed4.png``), a
contact sheet (every value's first picture captioned with its row) and the rows as JSON (``fidelity_mean``,
``fidelity_low``, ``fidelity_high``, ``fidelity_n`` a value, and each seed's numbers) into DIR.

The rows' numbers are the batch sweep's statistics (``eval/sweep.py``: the bench's definitions) over the
(prompt, seed) pairs. The argument wiring is ``cli.py``'s, beside ``generate``; this module runs the sweep.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, List, Optional, Sequence

import numpy as np
from PIL import Image, ImageDraw, ImageFont
from tqdm import tqdm

from .. import fidelity
from ..devices import DeviceError, pick_device
from ..engine.checkpoints import CheckpointError
from ..engine.files import atomic_write
from ..engine.precision import PrecisionError
from ..engine.sampling import DistributionError
from ..engine.settings import GenerationSettings, SettingsError
from ..engine.text import PromptError, check_prompt
from ..eval import sweep as sweep_report
from ..export import ExportError, save_png, upscale
from ..models import load_pipeline
from ..threads import configure_decode_threads
from .generate import EXIT_BAD_INPUT, add_sampling_arguments, settings_from_args

DELTA, K = "delta", "k"
MAX_VALUES = 32  # values of one sweep: each is a decode a seed
MAX_SEEDS = 16  # seeds a value: vanilla and 5 values at 16 seeds are 96 decodes
SEED_TOP = 2**63  # seeds fit in 64 bits (engine/settings.py)
SHEET = "contact-sheet.png"
REPORT = "sweep.json"
REPORT_SCHEMA = "lantern-studio-sweep-one/2"  # /2: several seeds a value, the fidelity's mean and interval
SHEET_SCALE = 4  # a 64-px picture is 256 px on the sheet
SHEET_COLUMNS = 6
SHEET_FONT_SIZE = 14
WARM_STEPS = 4  # decoding steps of each path before the clock starts


FLAGS = {"cfg_scale": "--cfg"}  # a settings field → the flag that sets it, where the names differ


class SweepError(ValueError):
    """Bad input to the command, in one line naming the flag."""


@dataclass(frozen=True)
class Run:
    """One decode of the sweep: vanilla (``value`` None) or one value of the swept setting."""

    name: str  # "vanilla", "delta 0.1", "k 64": the table's value column, the PNG's name
    value: Optional[float]
    settings: GenerationSettings


@dataclass
class Row:
    """One value (or vanilla) over its seeds: its first seed's picture and record, and the numbers over all."""

    run: Run
    image: np.ndarray  # the first seed's
    record: dict  # the first seed's
    tokens_per_forward: Optional[float]  # over its seeds (the prefill's forwards included)
    speedup: Optional[float]  # median over seeds of vanilla's decode seconds over this run's; 1 for vanilla
    seconds: float  # median decode seconds over its seeds
    fidelity: Optional[fidelity.Interval]  # the meter's probability over its seeds: mean and 95 % interval
    seeds: List[dict]  # per seed: {"seed", "record", "image", "score", "file"}


def parse_values(flag: str, text: Optional[str]) -> Optional[list]:
    """``--delta 0,0.1,0.2`` → [0.0, 0.1, 0.2]; ``--k 16,64`` → [16, 64] (repeats dropped, order kept); None when
    the flag was not given."""
    if text is None:
        return None
    kind, cast = ("a whole number", int) if flag == "--k" else ("a number", float)
    parts = [p.strip() for p in str(text).split(",")]
    if not any(parts):
        raise SweepError(f"{flag}: no values (give one or more, comma-separated, e.g. {flag} "
                         f"{'16,64,256' if flag == '--k' else '0,0.1,0.2'})")
    if len(parts) > MAX_VALUES:
        raise SweepError(f"{flag}: {len(parts)} values (at most {MAX_VALUES}: each is a decode)")
    values: list = []
    for p in parts:
        try:
            v = cast(p)
            if isinstance(v, float) and not math.isfinite(v):
                raise ValueError
        except ValueError:
            shown = repr(p) if len(p) <= 20 else repr(p[:17] + "...")
            raise SweepError(f"{flag}: {shown} is not {kind}") from None
        if v not in values:
            values.append(v)
    return values


def check_early(deltas: Optional[list], ks: Optional[list]) -> None:
    """Out-of-range values, named, before a model loads (the engine's validation; k's upper end, the codebook
    size, is checked again once the model is loaded)."""
    for flag, field, values in (("--delta", DELTA, deltas), ("--k", K, ks)):
        for v in values or ():
            try:
                GenerationSettings().with_(**{field: v}).validate(None)
            except SettingsError as e:
                raise SweepError(f"{flag}: {e}") from None
    if deltas is not None and ks is not None and len(deltas) > 1 and len(ks) > 1:
        raise SweepError("--delta and --k: sweep one of them (several values for one, at most one for the other)")


def value_name(axis: str, value) -> str:
    return f"{axis} {value:g}"


def check_seeds(n) -> int:
    """``--seeds N``: a whole number in [1, MAX_SEEDS] (SweepError names the flag)."""
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_SEEDS:
        raise SweepError(f"--seeds: must be a whole number in [1, {MAX_SEEDS}], got {n!r}")
    return n


def seeds_of(seed: int, n: int) -> List[int]:
    """The seeds a sweep draws: ``seed`` first, then the ones after it (before it past the largest seed), as the
    studio's Sweep does (studio/sweep.sweep_seeds)."""
    step = 1 if int(seed) + n <= SEED_TOP else -1
    return [int(seed) + step * i for i in range(n)]


def plan(base: GenerationSettings, deltas: Optional[list], ks: Optional[list],
         vocab_size: Optional[int]) -> tuple[str, List[Run]]:
    """(the swept setting, the runs: vanilla first, then one per value in the order given). One of ``deltas``
    and ``ks`` may hold several values; a missing one is the base settings'. Every run's settings pass the
    engine's validation (``vocab_size`` None: before the model is loaded, k's upper end is not known yet)."""
    if deltas is not None and ks is not None and len(deltas) > 1 and len(ks) > 1:
        raise SweepError("--delta and --k: sweep one of them (several values for one, at most one for the other)")
    axis = K if ks is not None and len(ks) > 1 else DELTA
    fixed = {}
    if axis == K:
        values = ks
        if deltas is not None:
            fixed[DELTA] = deltas[0]
    else:
        values = deltas if deltas is not None else [base.delta]
        if ks is not None:
            fixed[K] = ks[0]
    settings = base.with_(**fixed)
    if settings.drafter == "none":
        raise SweepError("--drafter: a sweep compares drafting against vanilla decoding: pick a drafter "
                         "(jacobi, eagle or heads)")
    runs = [Run("vanilla", None, settings.with_(drafter="none"))]
    for v in values:
        runs.append(Run(value_name(axis, v), v, settings.with_(**{axis: v})))
    for run in runs:
        try:
            run.settings.validate(vocab_size)
        except SettingsError as e:
            flag = FLAGS.get(e.field, f"--{e.field.replace('_', '-')}")
            raise SweepError(f"{flag}: {e}") from None
    return axis, [Run(r.name, r.value, r.settings.validate(vocab_size)) for r in runs]


def warm(pipe, prompt: str, runs: Sequence[Run], steps: int = WARM_STEPS) -> None:
    """Before any clock starts: what a first decode would load (the text encoder, the neighbour table) and a
    few steps of each path the sweep decodes on (vanilla, drafting), so that no run's time holds a path's
    first-call cost (which made the first vanilla run look slow and every speed-up too large)."""
    pipe.warm_up(decode_steps=0)
    paths = {}
    for run in runs:
        paths.setdefault(run.settings.drafter, run.settings)
    for settings in paths.values():
        decoding, _conditioning = pipe.decoding(prompt, settings)
        for i, _event in enumerate(decoding):
            if i + 1 >= steps:
                break


def decode(pipe, prompt: str, runs: Sequence[Run], seeds: Sequence[int] = (), on_event: Optional[Callable] = None,
           on_run: Optional[Callable[[Run], None]] = None) -> List[dict]:
    """Each run through the pipeline at each of ``seeds`` (default: its own seed), seed by seed (every run at the
    first seed, then at the second, …), after warming its paths: [{"run", "seed", "image", "record", "score"}]."""
    warm(pipe, prompt, runs)
    out = []
    for seed in seeds or [runs[0].settings.seed]:
        for run in runs:
            if on_run is not None:
                on_run(run)
            settings = run.settings.with_(seed=int(seed))
            result = pipe.generate(prompt, settings, on_event=on_event)
            stats = result.stats.to_dict()
            stats["precision"] = pipe.precision
            score = pipe.scorer(result.image, prompt) if pipe.scorer is not None else None
            record = {"prompt": prompt, "understood_as": result.note, "model": pipe.name,
                      "settings": settings.to_dict(), "stats": stats, "sweep": run.name}
            if score is not None:
                record[fidelity.KEY] = float(score)
            out.append({"run": run, "seed": int(seed), "image": result.image, "record": record, "score": score})
    return out


def rows_of(decoded: Sequence[dict]) -> List[Row]:
    """The table's rows, one per run (value) in the order given, with the batch sweep's statistics
    (eval/sweep.py) over its (prompt, seed) pairs: speed-ups against the vanilla runs (the first run) by decode
    wall time, seed by seed; tokens per forward with the prefill's; the prompt fidelity's mean and interval."""
    entries, keys, by_run = {}, {}, {}
    for i, d in enumerate(decoded):
        rec = d["record"]
        key = f"{i}:{d['run'].name}"
        entries[key] = {"prompt": rec["prompt"], "seed": rec["settings"]["seed"], "settings": rec["settings"],
                        "stats": rec["stats"], "seconds": float(rec["stats"]["wall_seconds"]),
                        fidelity.KEY: d["score"]}
        keys.setdefault(d["run"].name, []).append(key)
        by_run.setdefault(d["run"].name, []).append(d)
    names = list(keys)
    groups = [{"name": n, "family": "vanilla" if i == 0 else None, "changes": {}, "keys": keys[n]}
              for i, n in enumerate(names)]
    report = sweep_report.build_report(groups, entries)
    rows = []
    for name, r in zip(names, report["methods"]):
        ds = by_run[name]
        first = ds[0]
        per_seed = [{"seed": int(d["record"]["settings"]["seed"]), "record": d["record"], "image": d["image"],
                     "score": d["score"], "file": file_name(d["run"], j, d["record"]["settings"]["seed"])}
                    for j, d in enumerate(ds)]
        iv = None if not r["fidelity_n"] else fidelity.Interval(r["fidelity_mean"], r["fidelity_low"],
                                                                r["fidelity_high"], r["fidelity_n"])
        rows.append(Row(first["run"], first["image"], first["record"], r["mean_accepted_length"],
                        1.0 if r["reference"] else r["decode_speedup_median"], float(r["decode_seconds_median"]),
                        iv, per_seed))
    return rows


def _f(x, spec: str) -> str:
    return "—" if x is None else format(x, spec)


def seeds_words(rows: Sequence[Row]) -> str:
    """"seed 3" or "seeds 3–5": the seeds every run was drawn at."""
    seeds = [s["seed"] for s in rows[0].seeds] if rows else []
    if not seeds:
        return "no seed"
    return f"seed {seeds[0]}" if len(seeds) == 1 else f"seeds {seeds[0]}–{seeds[-1]}"


def table(rows: Sequence[Row], quality: bool) -> str:
    """value · tokens/forward · speed-up vs vanilla (seed by seed) · seconds · fidelity (mean and 95 % interval
    over the seeds), one line per value."""
    head = ["value", "tokens/forward", "speed-up", "seconds", fidelity.NAME]
    body = [[r.run.name, _f(r.tokens_per_forward, ".2f"),
             "baseline" if r.run.value is None else _f(r.speedup, ".2f") + ("×" if r.speedup is not None else ""),
             f"{r.seconds:.3f}", fidelity.format_interval(r.fidelity) if quality else "— (no recogniser)"]
            for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    lines = ["  ".join(str(c).ljust(w) if j == 0 else str(c).rjust(w) for j, (c, w) in enumerate(zip(line, widths)))
             for line in [head] + body]
    lines.insert(1, "  ".join("-" * w for w in widths))
    many = bool(rows) and len(rows[0].seeds) > 1
    lines.append(("speed-up: the median over seeds of the vanilla run's decode seconds over each run's, seed by seed"
                  if many else "speed-up: the vanilla run's decode seconds over each run's")
                 + f", same prompt, {seeds_words(rows)} and sampling; seconds: the median decode seconds"
                 + (f"; {fidelity.HELP}" if quality else ""))
    return "\n".join(lines)


def caption(row: Row, quality: bool) -> List[str]:
    """A contact-sheet cell's lines (ASCII: the sheet's font has no δ or ×)."""
    speed = "baseline" if row.run.value is None else ("-" if row.speedup is None else f"{row.speedup:.2f}x vanilla")
    lines = [row.run.name, f"{_f(row.tokens_per_forward, '.2f')} tok/fwd", speed]
    if quality:
        lines.append(f"fidelity {fidelity.format_interval(row.fidelity)}".replace("–", "-"))
    return lines


def contact_sheet(images: Sequence[np.ndarray], captions: Sequence[Sequence[str]], title: str = "",
                  scale: int = SHEET_SCALE, columns: int = SHEET_COLUMNS) -> Image.Image:
    """Every picture (crisp, ``scale`` ×) with its caption lines under it, ``columns`` to a row, under a title line."""
    font = ImageFont.load_default(size=SHEET_FONT_SIZE)
    line_h = SHEET_FONT_SIZE + 4
    pad = 8
    cells = [upscale(np.asarray(im), scale, "nearest") for im in images]
    cw = max([c.width for c in cells] + [1])
    ch = max([c.height for c in cells] + [1])
    n_lines = max([len(c) for c in captions] + [1])
    cols = max(1, min(columns, len(cells)))
    n_rows = max(1, math.ceil(len(cells) / cols))
    top = line_h + pad if title else 0
    cell_h = ch + n_lines * line_h + pad
    sheet = Image.new("RGB", (pad + cols * (cw + pad), pad + top + n_rows * (cell_h + pad)), (24, 24, 28))
    draw = ImageDraw.Draw(sheet)
    if title:
        draw.text((pad, pad), title, fill=(230, 230, 236), font=font)
    for i, (cell, lines) in enumerate(zip(cells, captions)):
        x = pad + (i % cols) * (cw + pad)
        y = pad + top + (i // cols) * (cell_h + pad)
        sheet.paste(cell, (x + (cw - cell.width) // 2, y))
        for j, line in enumerate(lines):
            draw.text((x, y + ch + 4 + j * line_h), line, fill=(230, 230, 236) if j == 0 else (170, 172, 182),
                      font=font)
    return sheet


def file_name(run: Run, index: int = 0, seed: Optional[int] = None) -> str:
    """A picture's file: a value's first seed "delta-0.1.png", its later ones "delta-0.1-seed4.png"."""
    base = run.name.replace(" ", "-")
    if index == 0:
        return base + ".png"
    return f"{base}-seed{run.settings.seed + index if seed is None else seed}.png"


def outputs(runs: Sequence[Run], seeds: Sequence[int] = ()) -> List[str]:
    """The file names a sweep writes into its folder."""
    seeds = list(seeds) or [None]
    return [file_name(r, i, s) for i, s in enumerate(seeds) for r in runs] + [SHEET, REPORT]


def report_of(rows: Sequence[Row], prompt: str) -> dict:
    """The rows as ``sweep.json`` keeps them (REPORT_SCHEMA): per value its numbers over the seeds, the fidelity's
    mean, low, high and n, and each seed's own numbers and file."""
    seeds = [s["seed"] for s in rows[0].seeds] if rows else []
    out = []
    for r in rows:
        per_seed = [{"seed": s["seed"], "tokens_per_forward": s["record"]["stats"].get("mean_accepted_length"),
                     "seconds": s["record"]["stats"].get("wall_seconds"), fidelity.KEY: s["score"], "file": s["file"]}
                    for s in r.seeds]
        out.append({"value": r.run.name, "settings": r.record["settings"], "tokens_per_forward": r.tokens_per_forward,
                    "speedup": r.speedup, "seconds": r.seconds, **sweep_report.interval_fields(r.fidelity),
                    "file": file_name(r.run), "seeds": per_seed})
    return {"schema": REPORT_SCHEMA, "prompt": prompt, "seed": seeds[0] if seeds else None, "seeds": seeds,
            "rows": out}


def write(out: Path, rows: Sequence[Row], quality: bool, prompt: str, overwrite: bool) -> List[Path]:
    """Every picture's PNG (settings embedded), the contact sheet (each value's first seed) and the rows as JSON,
    into ``out``; the files. A PNG already there is replaced only with ``overwrite`` (ExportError)."""
    out.mkdir(parents=True, exist_ok=True)
    written = [save_png(out / s["file"], s["image"], s["record"], overwrite=overwrite) for r in rows for s in r.seeds]
    sheet = contact_sheet([r.image for r in rows], [caption(r, quality) for r in rows],
                          title=f"{prompt!r} - {seeds_words(rows)}".replace("–", "-"))
    sheet_path = out / SHEET
    atomic_write(sheet_path, lambda tmp: sheet.save(tmp, format="PNG"))
    written.append(sheet_path)
    written.append(sweep_report.write_json(report_of(rows, prompt), out / REPORT))
    return written



def add_arguments(sw: argparse.ArgumentParser) -> None:
    sw.add_argument("prompt")
    add_sampling_arguments(sw)
    sw.add_argument("--delta", default=None, metavar="D1,D2,…",
                    help="δ values, comma-separated, e.g. 0,0.1,0.2,0.5 (default: the model's δ)")
    sw.add_argument("--k", default=None, metavar="K1,K2,…",
                    help="k values, comma-separated, e.g. 16,64,256 (default: the model's k); several values for "
                         "one of --delta and --k")
    sw.add_argument("--seeds", type=int, default=fidelity.SWEEP_SEEDS, metavar="N",
                    help=f"seeds a value (and vanilla), from --seed on (default {fidelity.SWEEP_SEEDS}: the fidelity is "
                         "their mean with its 95%% interval; each seed is one more decode a value)")
    sw.add_argument("--out", required=True, metavar="DIR", help="folder for the PNGs, contact-sheet.png and sweep.json")
    sw.add_argument("--overwrite", action="store_true", help="replace what DIR holds from an earlier sweep")
    sw.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args) -> int:
    """The studio's Sweep from the command line (commands/sweep.py): a table, the PNGs and a contact sheet."""
    out = Path(args.out)
    try:
        check_prompt(args.prompt)
        deltas, ks = parse_values("--delta", args.delta), parse_values("--k", args.k)
        check_early(deltas, ks)
        n_seeds = check_seeds(args.seeds)
    except (SweepError, PromptError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not args.overwrite)):
        why = "is not a folder" if not out.is_dir() else "already holds files (pass --overwrite to replace them)"
        print(f"error: --out {out} {why}", file=sys.stderr)
        return EXIT_BAD_INPUT
    configure_decode_threads()
    try:
        pipe = load_pipeline(args.model, device=pick_device(args.device), precision=args.precision)
        base = settings_from_args(pipe.defaults, argparse.Namespace(**{**vars(args), "k": None, "delta": None}))
        axis, runs = plan(base, deltas, ks, pipe.vocab_size)
        seeds = seeds_of(runs[0].settings.seed, n_seeds)
        bar = tqdm(total=pipe.gpt.block_size * len(runs) * len(seeds), unit="tok", desc="sweep", file=sys.stderr,
                   disable=args.quiet)
        decoded = decode(pipe, args.prompt, runs, seeds, on_event=lambda ev: bar.update(len(ev.positions)),
                         on_run=lambda run: bar.set_description(run.name))
        bar.close()
    except (SweepError, SettingsError, PromptError, CheckpointError, DeviceError, PrecisionError,
            DistributionError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    rows = rows_of(decoded)
    quality = pipe.scorer is not None
    try:
        written = write(out, rows, quality, args.prompt, args.overwrite)
    except ExportError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except OSError as e:  # a full disk, a read-only folder
        print(f"error: could not write into {out}: {e.strerror or e}", file=sys.stderr)
        return 1
    if decoded[0]["record"].get("understood_as"):
        print(f"drew: {decoded[0]['record']['understood_as']}")
    print(f"{pipe.name} · sweep of {axis} · {seeds_words(rows)} · {pipe.precision}")
    print(table(rows, quality))
    if not args.quiet:
        print(f"wrote {len(written)} files into {out} (contact sheet: {out / SHEET})")
    return 0
