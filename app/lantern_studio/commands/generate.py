"""``lantern-studio generate``: one image from a prompt, its settings and stats in the PNG; and the sampling
and decoding flags every command that decodes shares (``add_sampling_arguments``, ``settings_from_args``)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from tqdm import tqdm

from ..devices import DeviceError, pick_device
from ..engine.checkpoints import CheckpointError
from ..engine.files import atomic_write
from ..engine.precision import PrecisionError
from ..engine.sampling import DistributionError
from ..engine.settings import SettingsError
from ..engine.text import PromptError
from ..export import ExportError, save_png
from ..models import load_pipeline
from ..threads import configure_decode_threads

EXIT_BAD_INPUT = 2


def add_sampling_arguments(p: argparse.ArgumentParser) -> None:
    """Sampling and decoding flags; unset flags take the model's defaults."""
    p.add_argument("--model", default=None, help="model folder or name (default: the bundled model)")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--k", type=int, default=None, help="LANTERN neighbour count (0 = exact)")
    p.add_argument("--delta", type=float, default=None, help="LANTERN total-variation bound δ in [0, 1]")
    p.add_argument("--lam", type=float, default=None, help="LANTERN++ multiplicative bound λ ≥ 1 (replaces δ)")
    p.add_argument("--bound", choices=["lantern", "lantern++", "step"], default=None,
                   help="lantern: δ bounds each token (default; with --lam it is LANTERN++); lantern++: needs --lam; "
                        "step: each step's output stays within δ of the target in total variation, sampled drafts too")
    p.add_argument("--adaptive-delta", action="store_true", default=None,
                   help="scale δ per token by the target's normalised entropy, δ·H(p)/log V (never above δ)")
    p.add_argument("--delta-decay", type=float, default=None,
                   help="tighten δ along each draft chain: the i-th draft of a verification gets δ·decay^i "
                        "(1 = the same δ for every draft; in [0, 1])")
    p.add_argument("--drafter", choices=["none", "jacobi", "eagle", "heads"], default=None)
    p.add_argument("--draft-length", type=int, default=None)
    p.add_argument("--cfg", type=float, default=None, help="classifier-free guidance scale")
    p.add_argument("--temperature", type=float, default=None)
    p.add_argument("--top-k", type=int, default=None)
    p.add_argument("--top-p", type=float, default=None)
    p.add_argument("--greedy", action="store_true", default=None)
    p.add_argument("--style", default=None, help="a class model's art style: a style name, 'any' (one per seed) "
                   "or '' (the model's default); `lantern-studio models info` lists a model's styles")
    p.add_argument("--device", default=None, help="cpu, cuda, mps (default: the best available)")
    p.add_argument("--precision", default="auto", help="auto, fp32, bf16, fp16: weights and KV caches "
                   "(auto: bf16 where the device runs it natively, else fp32)")


def settings_from_args(defaults, args):
    mapping = {"seed": "seed", "k": "k", "delta": "delta", "lam": "lam", "bound": "bound",
               "adaptive_delta": "adaptive_delta", "delta_decay": "delta_decay", "drafter": "drafter",
               "draft_length": "draft_length", "cfg": "cfg_scale", "temperature": "temperature",
               "top_k": "top_k", "top_p": "top_p", "greedy": "greedy", "style": "style"}
    changes = {field: getattr(args, a) for a, field in mapping.items() if getattr(args, a, None) is not None}
    return defaults.with_(**changes)


def add_arguments(gen: argparse.ArgumentParser) -> None:
    gen.add_argument("prompt")
    add_sampling_arguments(gen)
    gen.add_argument("--out", default="lantern.png", help="PNG to write (default: lantern.png)")
    gen.add_argument("--overwrite", action="store_true", help="replace --out if it exists")
    gen.add_argument("--stats-json", default=None, help="also write settings and stats as JSON here")
    gen.add_argument("--quiet", action="store_true")


def run(args) -> int:
    out = Path(args.out)
    if out.exists() and not args.overwrite:
        print(f"error: --out {out} already exists (pass --overwrite to replace it)", file=sys.stderr)
        return EXIT_BAD_INPUT
    configure_decode_threads()
    try:
        pipe = load_pipeline(args.model, device=pick_device(args.device), precision=args.precision)
        settings = settings_from_args(pipe.defaults, args).validate(pipe.vocab_size)
        bar = tqdm(total=pipe.gpt.block_size, unit="tok", desc="decoding", file=sys.stderr, disable=args.quiet)

        def on_event(ev):
            bar.update(len(ev.positions))

        t0 = time.perf_counter()
        result = pipe.generate(args.prompt, settings, on_event=on_event)
        bar.close()
    except (SettingsError, PromptError, CheckpointError, DeviceError, PrecisionError, DistributionError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    stats = result.stats.to_dict()
    stats["total_seconds"] = time.perf_counter() - t0
    stats["precision"] = pipe.precision
    record = {"prompt": args.prompt, "understood_as": result.note, "model": pipe.name,
              "settings": settings.to_dict(), "stats": stats}
    target = out
    try:
        save_png(out, result.image, record, overwrite=args.overwrite)
        if args.stats_json:
            target = Path(args.stats_json)
            atomic_write(target, lambda p: Path(p).write_text(json.dumps(record, indent=2, default=str)))
    except ExportError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except OSError as e:  # a full disk, a read-only folder: name the file we were writing
        print(f"error: could not write {target}: {e.strerror or e}", file=sys.stderr)
        return 1
    if not args.quiet:
        if result.note:
            print(f"drew: {result.note}")
        print(f"wrote {out}  ({stats['tokens']} tokens, {stats['target_forwards'] + 1} target forwards, "
              f"{stats['mean_accepted_length']:.2f} tokens/forward, {stats['wall_seconds']:.2f} s, {pipe.precision})")
    return 0
