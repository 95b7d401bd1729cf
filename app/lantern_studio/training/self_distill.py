"""A learned drafter for any model, from the model itself (self-distillation).

No dataset is needed: the target generates its own sequences with vanilla
decoding (random classes for class-conditional models, a prompt list for
text-conditional ones) at its default sampling settings, and an EAGLE head is
trained on the target's features along those sequences with the same losses as
the bundled model's drafter (:func:`training.drafter_loss.drafter_losses`: smooth-L1
on the next feature + KL to the target's guided next-token distribution). This
is how LANTERN trains its drafters too ("self-distilled data").

``train_drafter_for_model("llamagen-c2i-b-256", steps=2000)`` writes
``eagle.safetensors`` where the catalogue finds it (see
``models.catalogue.drafter_path``), so the model then offers the "eagle" drafter.
It runs on the CPU for tiny models (slowly for real ones; use a GPU).
"""

from __future__ import annotations

import json
import math
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

import torch
from tqdm import tqdm

from ..devices import pick_device
from ..engine.checkpoints import save_weights
from ..engine.decode import generate_tokens
from ..engine.drafters import EagleHead
from ..engine.precision import cast_transformer as _cast
from ..models import catalogue, load_pipeline, resolve_spec
from ..models.catalogue import drafter_path
from .drafter_loss import HeadTrainer
from .errors import TrainingError, command
from .lifecycle import Plan, run_trainer
from .loop import EXIT_CODES, LoopSettings

DEFAULT_PROMPTS = (
    "a photo of a cat sitting on a windowsill", "a red sports car on a mountain road",
    "a bowl of fresh fruit on a wooden table", "a lighthouse on a rocky coast at sunset",
    "an astronaut riding a horse in the forest", "a cozy cabin in the snowy woods",
    "a portrait of an old man with a white beard", "a city skyline at night with lights",
    "a plate of sushi on a black table", "a golden retriever playing in the grass",
    "a watercolor painting of a field of flowers", "a steaming cup of coffee next to a book",
    "a sailing boat on a calm blue sea", "a close-up photo of a butterfly on a leaf",
    "a medieval castle on a hill under a cloudy sky", "a bicycle leaning against a brick wall",
)

ProgressFn = Callable[[str, int, int], None]  # (phase "sampling" | "training", done, total)


@dataclass
class Samples:
    """The target's own sequences, on the CPU: ``tokens`` (n, T) long, ``cond`` (n,) long or (n, P, D)
    float, ``mask`` None (class-conditional) or (n, P) bool, and the ``prompts`` they were drawn for."""

    tokens: torch.Tensor
    cond: torch.Tensor
    mask: Optional[torch.Tensor]
    prompts: list
    note = ""  # nothing to say about them before training


def _resolve(name_or_pipeline, device):
    if not isinstance(name_or_pipeline, str):
        pipe = name_or_pipeline
        return pipe, pipe.source.catalogue
    where = resolve_spec(name_or_pipeline)
    if isinstance(where, str):  # a catalogue model, loaded without the drafter this trains
        return catalogue.load_entry(where, device=device, drafter=False), where
    return load_pipeline(name_or_pipeline, device=device), None


@torch.no_grad()
def sample_sequences(pipe, n: int, seed: int = 0, prompts: Optional[Sequence[str]] = None, settings=None,
                     progress: Optional[ProgressFn] = None, should_stop=None) -> Samples:
    """Generate ``n`` token sequences with the target itself (vanilla decoding)."""
    gpt = pipe.gpt
    base = settings or pipe.defaults
    base = base.with_(drafter="none", k=0, delta=0.0, lam=None)
    g = torch.Generator().manual_seed(seed)
    c2i = gpt.model_type == "c2i"
    if not c2i:
        prompts = list(prompts or DEFAULT_PROMPTS)
    names = getattr(pipe.conditioner, "names", None)
    n_classes = len(names) if names is not None else gpt.config.num_classes
    toks, conds, masks, used = [], [], [], []
    cache = {}
    dev = pipe.device
    dtype = next(gpt.parameters()).dtype
    for i in range(n):
        if should_stop is not None and should_stop():
            break
        if c2i:
            prompt = f"#{int(torch.randint(0, n_classes, (1,), generator=g))}"
        else:
            prompt = prompts[i % len(prompts)]
        if prompt not in cache:
            cache[prompt] = pipe.conditioner(prompt)
        c = cache[prompt]
        cond = c.cond.to(dev)
        if cond.is_floating_point():
            cond = cond.to(dtype)
        mask = c.mask.to(dev) if c.mask is not None else None
        s = base.with_(seed=int(torch.randint(0, 2**31 - 1, (1,), generator=g)))
        tokens, _, _ = generate_tokens(gpt, cond, s, mask)
        toks.append(tokens.cpu())
        conds.append(c.cond.cpu())
        masks.append(c.mask.cpu() if c.mask is not None else None)
        used.append(prompt)
        if progress is not None:
            progress("sampling", i + 1, n)
    if not toks:
        raise RuntimeError("self-distillation: stopped before any sequence was generated")
    return Samples(tokens=torch.stack(toks), cond=torch.cat(conds), prompts=used,
                   mask=torch.cat(masks) if masks[0] is not None else None)


def _batch(data: Samples, idx: torch.Tensor, device):
    tok = data.tokens[idx].to(device)
    emb = data.cond[idx].to(device)
    if data.mask is None:
        # class-conditional: drafter_losses concatenates masks for the CFG batch; an all-valid
        # one-slot prefix mask gives the same attention as no mask at all.
        mask = torch.ones(len(idx), 1, dtype=torch.bool, device=device)
    else:
        mask = data.mask[idx].to(device)
    return tok, emb, mask


class SelfDistillTrainer(HeadTrainer):
    """An EAGLE head trained on the target's own samples (kept in memory only)."""

    kind = "self-distill"

    def __init__(self, gpt, data: Samples, train_idx, held_idx, device, *, batch, init_from_last_layer,
                 export_dtype: torch.dtype = torch.float32, **options):
        head = EagleHead(gpt.config).to(device)
        if init_from_last_layer and len(gpt.layers):
            head.layer.load_state_dict(gpt.layers[-1].state_dict())
        super().__init__(gpt, head, **options)
        self.data, self.train_idx, self.held_idx, self.device, self.batch_size = data, train_idx, held_idx, device, batch
        self.export_dtype = export_dtype

    def batch(self):
        n = min(self.batch_size, len(self.train_idx))
        return _batch(self.data, self.train_idx[torch.randint(0, len(self.train_idx), (n,), generator=self.gen)],
                      self.device)

    def held_out_batch(self):
        return _batch(self.data, self.held_idx, self.device)

    def export(self, out: Path, history: list, wall: float) -> dict:
        """The head (in the target's dtype) to ``out``; → the last evaluation's numbers."""
        self.model = self.model.to(self.export_dtype).eval()
        save_weights(self.model, out, self.gpt.config.to_dict(), "eagle")
        last = history[-1] if history else {"heldout_top1": float("nan"), "heldout_kl": float("nan"),
                                            "heldout_feature_loss": float("nan")}
        return {"heldout_top1_agreement": last["heldout_top1"], "heldout_kl": last["heldout_kl"],
                "heldout_feature_loss": last["heldout_feature_loss"], "history": history, "wall": wall}


@contextmanager
def trained_against(gpt):
    """The target frozen and in float32 while a head trains on its features; as it was afterwards."""
    orig_dtype = next(gpt.parameters()).dtype
    flags = [p.requires_grad for p in gpt.parameters()]
    for p in gpt.parameters():
        p.requires_grad_(False)
    _cast(gpt, torch.float32)
    try:
        yield orig_dtype
    finally:
        _cast(gpt, orig_dtype)
        for p, f in zip(gpt.parameters(), flags):
            p.requires_grad_(f)


def train_drafter_for_model(
    name_or_pipeline,
    steps: int = 1000,
    *,
    sequences: int = 256,
    prompts: Optional[Sequence[str]] = None,
    batch: int = 8,
    lr: float = 2e-3,
    warmup: int = 20,
    cfg_scale: Optional[float] = None,
    noise: float = 0.1,
    p_weight: float = 0.1,
    seed: int = 0,
    out: Optional[Path] = None,
    device: Optional[str] = None,
    init_from_last_layer: bool = True,
    progress: Optional[ProgressFn] = None,
    should_stop: Optional[Callable[[], bool]] = None,
) -> dict:
    """Self-distil an EAGLE drafter for a model; returns a summary with ``path``.

    ``name_or_pipeline``: a catalogue name (its files must be downloaded), any model spec
    ``models.load_pipeline`` takes, or an ImagePipeline. The head is saved to ``out`` (default:
    the catalogue's drafter path for catalogue models) and attached to the pipeline
    (``pipe.eagle``), so ``drafter="eagle"`` works right away.
    """
    pipe, name = _resolve(name_or_pipeline, device)
    if out is None:
        if name is None:
            raise TrainingError("out: give a path for the drafter (the model is not a catalogue entry)")
        out = drafter_path(name)
    out = Path(out)
    gpt = pipe.gpt.eval()
    cfg = pipe.defaults.cfg_scale if cfg_scale is None else cfg_scale
    t0 = time.perf_counter()

    data = sample_sequences(pipe, sequences, seed=seed, prompts=prompts, progress=progress, should_stop=should_stop)
    n = data.tokens.shape[0]
    n_held = max(1, n // 10) if n > 1 else 0
    train_idx = torch.arange(n - n_held) if n_held else torch.arange(n)
    held_idx = torch.arange(n - n_held, n) if n_held else torch.arange(n)

    built: list[SelfDistillTrainer] = []

    with trained_against(gpt) as orig_dtype:
        def build(_resumed):
            torch.manual_seed(seed)
            trainer = SelfDistillTrainer(gpt, data, train_idx, held_idx, next(gpt.parameters()).device, lr=lr,
                                         steps=steps, batch=batch, warmup=min(warmup, max(1, steps // 10)), cfg=cfg,
                                         noise=noise, p_weight=p_weight, seed=seed + 1,
                                         init_from_last_layer=init_from_last_layer, export_dtype=orig_dtype)
            built.append(trainer)  # the head the pipeline gets
            return trainer

        # the samples are not kept, so nothing to resume (no run folder); a cancel (or Ctrl-C) ends it early
        plan = Plan(kind=SelfDistillTrainer.kind, settings=LoopSettings(steps=steps, log_every=max(1, steps // 20)),
                    out=out, log=lambda _msg: None, should_stop=should_stop,
                    on_step=(lambda done: progress("training", done, steps)) if progress is not None else None)
        outcome = run_trainer(plan, build, describe=lambda _t: "")
    m = outcome.metrics
    summary = {
        "path": str(out), "model": name or getattr(pipe, "name", "model"), "steps": outcome.step, "sequences": n,
        "heldout_sequences": int(len(held_idx)), "cfg_scale": cfg, "seed": seed,
        "heldout_top1_agreement": m["heldout_top1_agreement"], "heldout_kl": m["heldout_kl"],
        "heldout_feature_loss": m["heldout_feature_loss"], "seconds": time.perf_counter() - t0,
        "history": m["history"], "stopped_by": outcome.stopped_by,
    }
    if not math.isfinite(summary["heldout_kl"]):
        summary["heldout_kl"] = None
    out.with_name("self_distill.json").write_text(json.dumps(summary, indent=2))
    pipe.eagle = built[-1].model
    return summary


# --------------------------------------------------------------------------- CLI glue


def add_arguments(p) -> None:
    p.add_argument("name", help="catalogue name (downloaded) or model folder")
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--sequences", type=int, default=256, help="sequences the target generates for training")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--prompts", default=None, help="text file, one prompt per line (text-conditional models)")
    p.add_argument("--out", default=None, help="where to write eagle.safetensors (default: the model's drafter path)")
    p.add_argument("--device", default=None)
    p.add_argument("--seed", type=int, default=0)


def distill(args) -> dict:
    """``models distill`` (and ``train drafter --model``) from Python: self-distil with progress bars and
    a closing line; → the summary. Bad input raises :class:`.errors.TrainingError`."""
    prompts = None
    if args.prompts:
        prompts = [ln.strip() for ln in Path(args.prompts).read_text().splitlines() if ln.strip()]
    bars = {}

    def progress(phase, done, total):
        bar = bars.get(phase)
        if bar is None:
            bar = bars[phase] = tqdm(total=total, desc=phase, unit="seq" if phase == "sampling" else "step",
                                     file=sys.stderr)
        bar.update(done - bar.n)

    summary = train_drafter_for_model(args.name, args.steps, sequences=args.sequences, batch=args.batch, lr=args.lr,
                                      prompts=prompts, out=Path(args.out) if args.out else None,
                                      device=pick_device(args.device), seed=args.seed, progress=progress)
    for bar in bars.values():
        bar.close()
    print(f"wrote {summary['path']}: held-out top-1 agreement {summary['heldout_top1_agreement']:.3f} "
          f"after {summary['steps']} steps on {summary['sequences']} self-generated sequences"
          + (f" (stopped early by {summary['stopped_by']})" if summary["stopped_by"] else ""))
    return summary


@command
def run(args) -> int:
    """The command: self-distil; → the exit code (130 / 143 when a signal stopped it early)."""
    return EXIT_CODES.get(distill(args)["stopped_by"] or "", 0)
