"""One entry point: the GUI by default; generate / bench / batch / train / models / doctor as subcommands."""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from pathlib import Path

from tqdm import tqdm

from . import __version__
from .commands import sweep as sweep_cmd
from .devices import DeviceError, pick_device
from .doctor import display_available, qt_platform_problem, x_display_unreachable
from .engine.checkpoints import CheckpointError
from .engine.files import atomic_write
from .engine.precision import PrecisionError
from .engine.sampling import DistributionError
from .engine.settings import SettingsError
from .engine.text import PromptError, check_prompt
from .export import ExportError, save_png
from .models import load_pipeline
from .threads import configure_decode_threads

EXIT_BAD_INPUT = 2


# --------------------------------------------------------------------------- generate


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


def cmd_generate(args) -> int:
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


# --------------------------------------------------------------------------- sweep


def cmd_sweep(args) -> int:
    """The studio's Sweep from the command line (commands/sweep.py): a table, the PNGs and a contact sheet."""
    out = Path(args.out)
    try:
        check_prompt(args.prompt)
        deltas, ks = sweep_cmd.parse_values("--delta", args.delta), sweep_cmd.parse_values("--k", args.k)
        sweep_cmd.check_early(deltas, ks)
    except (sweep_cmd.SweepError, PromptError) as e:
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
        axis, runs = sweep_cmd.plan(base, deltas, ks, pipe.vocab_size)
        bar = tqdm(total=pipe.gpt.block_size * len(runs), unit="tok", desc="sweep", file=sys.stderr,
                   disable=args.quiet)
        decoded = sweep_cmd.decode(pipe, args.prompt, runs, on_event=lambda ev: bar.update(len(ev.positions)),
                                   on_run=lambda run: bar.set_description(run.name))
        bar.close()
    except (sweep_cmd.SweepError, SettingsError, PromptError, CheckpointError, DeviceError, PrecisionError,
            DistributionError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    rows = sweep_cmd.rows_of(decoded)
    quality = pipe.scorer is not None
    try:
        written = sweep_cmd.write(out, rows, quality, args.prompt, args.overwrite)
    except ExportError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except OSError as e:  # a full disk, a read-only folder
        print(f"error: could not write into {out}: {e.strerror or e}", file=sys.stderr)
        return 1
    if decoded[0]["record"].get("understood_as"):
        print(f"drew: {decoded[0]['record']['understood_as']}")
    print(f"{pipe.name} · sweep of {axis} · seed {runs[0].settings.seed} · {pipe.precision}")
    print(sweep_cmd.table(rows, quality))
    if not args.quiet:
        print(f"wrote {len(written)} files into {out} (contact sheet: {out / sweep_cmd.SHEET})")
    return 0


# --------------------------------------------------------------------------- gui


def _free_name(stem: str) -> Path:
    p = Path(f"{stem}.png")
    i = 1
    while p.exists():
        p = Path(f"{stem}-{i}.png")
        i += 1
    return p


def start_problems() -> list:
    """Every reason the studio window cannot open here, in a fixed order, one line each (empty: none).

    First a named display nobody answers on (Qt would abort with rc 134), then the X11 plugin's missing
    system libraries (Qt would abort with advice about plugins): each is fixed separately, so a user who
    fixes one must not meet the other only on the next try."""
    if not display_available():
        return []
    problems = []
    unreachable = x_display_unreachable()
    if unreachable:
        problems.append(f"the display DISPLAY={unreachable} cannot be reached (no X server answers there): "
                        "start it, or unset DISPLAY to make a sample image from the command line instead")
    libraries = qt_platform_problem()
    if libraries:
        problems.append(libraries)
    return problems


def cmd_gui(args) -> int:
    problems = start_problems()
    if problems:  # say what to fix instead of letting Qt abort the process
        for problem in problems:
            print(f"lantern-studio: {problem}", file=sys.stderr)
        return 1
    if not display_available():
        out = _free_name("lantern-sample")
        why = "no display found (DISPLAY / WAYLAND_DISPLAY are unset)"
        print(
            f"lantern-studio: {why}, so the studio window "
            "cannot open.\nUse the command line instead, e.g.\n"
            "  lantern-studio generate \"a red heart\" --out heart.png\n"
            "or run the window under a virtual display: xvfb-run lantern-studio\n"
            f"Generating a sample from the command line now: {out}",
            file=sys.stderr,
        )
        sample = build_parser().parse_args(["generate", "a red heart", "--out", str(out)]
                                           + (["--model", args.model] if getattr(args, "model", None) else []))
        return cmd_generate(sample)
    from .gui.app import main as gui_main  # noqa: PLC0415 - only the studio needs Qt's widgets (start-up time)

    return gui_main(model=getattr(args, "model", None))


# --------------------------------------------------------------------------- parser


def missing_dependency(error: ImportError):
    """The third-party package whose absence caused ``error``, or None when the
    error is anything else (one of our own modules missing or broken)."""
    root = (getattr(error, "name", None) or "").split(".")[0]
    if isinstance(error, ModuleNotFoundError) and root and root != __package__.split(".")[0]:
        return root
    return None


def _add_module(sub, name, module_path, help_text):
    """Subcommands implemented elsewhere expose add_arguments(parser) and run(args).

    A subcommand whose third-party dependency is not installed (a trimmed or
    frozen build) is listed as unavailable, naming the package, and the rest of
    the CLI works; any other import failure is a bug and is raised.
    """
    try:
        mod = importlib.import_module(module_path, __package__)
    except ImportError as e:
        package = missing_dependency(e)
        if package is None:
            raise
        why = f"needs the {package!r} package, which is not installed"
        p = sub.add_parser(name, help=f"{help_text} (unavailable: {why})")
        p.set_defaults(func=lambda a: (print(f"error: {name} unavailable: {why}", file=sys.stderr), 1)[1])
        return p
    p = sub.add_parser(name, help=help_text, description=help_text)
    mod.add_arguments(p)
    p.set_defaults(func=mod.run)
    return p


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lantern-studio", description="Autoregressive image generation with LANTERN relaxed speculative decoding.")
    parser.add_argument("--version", action="version", version=f"lantern-studio {__version__}")
    sub = parser.add_subparsers(dest="command")

    g = sub.add_parser("gui", help="open the studio (the default)")
    g.add_argument("--model", default=None)
    g.set_defaults(func=cmd_gui)

    gen = sub.add_parser("generate", help="generate one image from a prompt")
    gen.add_argument("prompt")
    add_sampling_arguments(gen)
    gen.add_argument("--out", default="lantern.png", help="PNG to write (default: lantern.png)")
    gen.add_argument("--overwrite", action="store_true", help="replace --out if it exists")
    gen.add_argument("--stats-json", default=None, help="also write settings and stats as JSON here")
    gen.add_argument("--quiet", action="store_true")
    gen.set_defaults(func=cmd_generate)

    sw = sub.add_parser("sweep", conflict_handler="resolve",  # --k and --delta take lists here
                        help="one prompt and seed at several δ (or k) values and vanilla: a table and a contact sheet",
                        description="Decode one prompt and seed once without a drafter (vanilla) and once per value "
                                    "of --delta or --k (several values for one of them); print tokens per forward, "
                                    "speed-up against the vanilla run and prompt fidelity, and write each PNG and a "
                                    "captioned contact sheet into --out.")
    sw.add_argument("prompt")
    add_sampling_arguments(sw)
    sw.add_argument("--delta", default=None, metavar="D1,D2,…",
                    help="δ values, comma-separated, e.g. 0,0.1,0.2,0.5 (default: the model's δ)")
    sw.add_argument("--k", default=None, metavar="K1,K2,…",
                    help="k values, comma-separated, e.g. 16,64,256 (default: the model's k); several values for "
                         "one of --delta and --k")
    sw.add_argument("--out", required=True, metavar="DIR", help="folder for the PNGs, contact-sheet.png and sweep.json")
    sw.add_argument("--overwrite", action="store_true", help="replace what DIR holds from an earlier sweep")
    sw.add_argument("--quiet", action="store_true", help="no progress bar")
    sw.set_defaults(func=cmd_sweep)

    _add_module(sub, "bench", ".eval.bench", "speed and quality of decoding methods side by side")
    _add_module(sub, "bench-scale", ".eval.scale",
                "the bench's speed-ups projected onto a LlamaGen-sized target timed on this machine")
    _add_module(sub, "batch", ".commands.batch",
                "render a prompt list or a settings sweep, resumable, in-process or on a Ray cluster")

    train = sub.add_parser("train", help="build data and train the bundled model's parts")
    tsub = train.add_subparsers(dest="what", required=True)
    for name, mod, text in [
        ("data", ".training.data", "fetch the emoji packages and build the dataset"),
        ("vq", ".training.vq", "train the VQ tokenizer"),
        ("ar", ".training.ar", "train the AR model"),
        ("drafter", ".training.drafter", "train the EAGLE drafter on the AR model's features"),
        ("heads", ".training.heads", "train parallel draft heads on a model folder's target"),
        ("recogniser", ".training.recogniser", "train the quality recogniser on real images"),
        ("ship", ".training.ship", "assemble the bundled model folder from trained runs"),
        ("validate", ".training.validation", "draw validation classes with a class model and score them"),
        ("jitter", ".training.jitter", "measure how jittered copies move an image's tokens to latent neighbours"),
    ]:
        _add_module(tsub, name, mod, text)

    _add_module(sub, "models", ".commands.models", "list, download and remove models")
    _add_module(sub, "doctor", ".doctor", "report the environment for bug reports")
    _add_module(sub, "install-desktop", ".desktop", "add Lantern Studio to your applications menu (this user)")
    return parser


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        return cmd_gui(args)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
