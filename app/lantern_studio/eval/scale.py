"""What the bundled model's speculative speed-ups become on a LlamaGen-sized target.

The bundled model is small; on a GPU its forwards are bound by launch overhead, not by the weights, and
its speed-ups say little about the models LANTERN's paper measured. This probe times a transformer of a
LlamaGen preset's shape (random weights: a forward's cost does not depend on their values) at every
verify width, on the path decoding runs (eager, or compiled — CUDA graphs on a GPU), and weighs that cost
curve against the tokens per round the bench measured on the bundled model:

    projected speed-up = tokens per round × cost(width 1) / cost(window + 1)

for each Jacobi method of the bench report (its drafts cost no forward), the same formula as the bench's
window pick (:mod:`.width_cost`).

``lantern-studio bench-scale --preset GPT-XL --acceptance docs/bench/reports/bench-common-emoji64-v4.json --device cuda
--compile --json scale.json`` (packaging/gpu/bench_gpu.sh runs it on a GPU machine).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

import torch

from ..engine.model import Transformer, preset_args
from ..engine.precision import cast_transformer
from ..engine.runner import Runner
from .width_cost import WIDTHS, cost_at, runner_cost_curve


class ScaleError(ValueError):
    """A setting or an acceptance report the probe cannot use (one line for the command)."""


def sized_target(preset: str, grid: int, classes: int, device: str, dtype: torch.dtype) -> Transformer:
    """A class-conditional transformer of ``preset``'s shape (random weights) for ``grid``² image tokens."""
    try:
        args = preset_args(preset, vocab_size=16384, block_size=grid * grid, num_classes=classes, cls_token_num=1,
                           model_type="c2i")
    except ValueError as e:
        raise ScaleError(str(e)) from None
    torch.manual_seed(0)
    return cast_transformer(Transformer(args).to(device).eval(), dtype)  # the rotary table stays fp32


def acceptance_from(report: dict) -> list[dict]:
    """The Jacobi methods of a bench report: their window and measured tokens per round (a draft-free
    rule: exact or relaxed acceptance on Jacobi drafts)."""
    out = []
    for m in report.get("methods", []):
        if m.get("drafter") != "jacobi" or not m.get("rounds_per_image") or not m.get("draft_length"):
            continue
        out.append({"name": m["name"], "window": int(m["draft_length"]),
                    "tokens_per_round": float(m["tokens_per_image"]) / float(m["rounds_per_image"]),
                    "measured_speedup": m.get("speedup_median"), "identity_top5": m.get("identity_top5")})
    if not out:
        raise ScaleError("the acceptance report holds no Jacobi method with rounds measured (run the bench "
                         "with e.g. --methods vanilla-fp32 exact-jacobi-L12 lantern-jacobi-k64-d0.2-L12)")
    return out


def project(curve: Sequence[dict], methods: Sequence[dict]) -> list[dict]:
    """Each method's projected speed-up over vanilla decoding on the timed target."""
    step = cost_at(curve, 1)
    return [{**m, "verify_ms": cost_at(curve, m["window"] + 1), "vanilla_ms": step,
             "verify_over_step": cost_at(curve, m["window"] + 1) / step,
             "projected_speedup": m["tokens_per_round"] * step / cost_at(curve, m["window"] + 1)} for m in methods]


def probe(preset: str, grid: int, device: str, dtype: torch.dtype, cfg: bool, compile_steps: bool,
          widths: Sequence[int] = WIDTHS, rounds: int = 12, repeats: int = 5, classes: int = 1000) -> dict:
    """The cost curve of a ``preset``-sized target (two rows per position when ``cfg``)."""
    gpt = sized_target(preset, grid, classes, device, dtype)
    runner = Runner(gpt)
    rows = 2 if cfg else 1
    note = None
    if compile_steps:
        graphs = runner.compile(list(widths))
        note = graphs.note
    cond = torch.zeros(rows, dtype=torch.long, device=device)
    if cfg:
        cond = torch.cat([cond[:1], gpt.null_condition(cond[:1])])
    curve = runner_cost_curve(runner, cond, None, grid * grid, widths, rounds, repeats)
    params = sum(p.numel() for p in gpt.parameters())
    return {"preset": preset, "grid": grid, "params": params, "device": device, "dtype": str(dtype).split(".")[-1],
            "rows": rows, "compiled": compile_steps and note is None, "compile_note": note, "curve": curve}


def describe(result: dict) -> list[str]:
    c = result["curve"]
    lines = [f"{result['preset']} ({result['params'] / 1e6:.0f} M parameters, {result['grid']}² tokens, "
             f"{result['rows']} row(s) per position, {result['dtype']} on {result['device']}"
             f"{', compiled' if result['compiled'] else ''}): verify cost by width (ms) "
             + " · ".join(f"{p['width']}: {p['ms']:.2f}" for p in c)]
    if result.get("compile_note"):
        lines.append(f"  {result['compile_note']}")
    for m in result.get("projection", []):
        lines.append(f"  {m['name']}: {m['tokens_per_round']:.2f} tokens per round, a verify of width "
                     f"{m['window'] + 1} = {m['verify_over_step']:.2f}× a vanilla step → projected "
                     f"{m['projected_speedup']:.2f}× (measured on the bundled model: "
                     f"{m['measured_speedup'] or float('nan'):.2f}×)")
    return lines


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--preset", default="GPT-XL", help="a LlamaGen preset (GPT-B, GPT-L, GPT-XL, …)")
    p.add_argument("--grid", type=int, default=24, help="image tokens per side (24: LlamaGen's 384 px)")
    p.add_argument("--acceptance", required=True, metavar="BENCH_JSON",
                   help="a bench report (--json) of the bundled model: its Jacobi methods' tokens per round")
    p.add_argument("--device", default="cpu")
    p.add_argument("--precision", choices=("fp32", "bf16", "fp16"), default="bf16")
    p.add_argument("--no-cfg", action="store_true", help="one row per position (a guidance-free model)")
    p.add_argument("--compile", action="store_true", help="time compiled steps (CUDA graphs on a GPU)")
    p.add_argument("--widths", type=int, nargs="+", default=list(WIDTHS))
    p.add_argument("--rounds", type=int, default=12)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--json", default=None, metavar="FILE")


def run(args) -> int:
    try:
        report = json.loads(Path(args.acceptance).read_text())
        methods = acceptance_from(report)
    except (OSError, json.JSONDecodeError, ScaleError, TypeError, KeyError) as e:
        print(f"lantern-studio bench-scale: {args.acceptance}: {e}", file=sys.stderr)
        return 2
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("lantern-studio bench-scale: --device cuda but torch sees no CUDA device", file=sys.stderr)
        return 2
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[args.precision]
    try:
        result = probe(args.preset, args.grid, args.device, dtype, not args.no_cfg, args.compile, args.widths,
                       args.rounds, args.repeats)
    except ScaleError as e:
        print(f"lantern-studio bench-scale: {e}", file=sys.stderr)
        return 2
    result["projection"] = project(result["curve"], methods)
    result["acceptance"] = str(args.acceptance)
    for line in describe(result):
        print(line)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    return 0
