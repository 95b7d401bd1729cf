"""Train the EAGLE-style drafter on the AR model's own features.

``lantern-studio train drafter --gpt GPT.safetensors --prepared PREPARED.pt [--run DIR] [--steps N]``

For a batch of training sequences the frozen target gives its final hidden
states f (post-norm, what its output head reads) for the conditional and the
unconditional prefix (CFG batch). The drafter reads (f_{t-1} + noise, e(x_t))
and is trained to predict f_t (smooth-L1) and, through the target's head, the
target's *guided* next-token distribution (KL between CFG-combined drafter and
target logits at the model's default guidance scale): it learns what the
sampler will actually ask of it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from ..engine.checkpoints import load_gpt, load_state_strict, load_weights, save_weights
from ..engine.drafters import EagleHead
from ..paths import runs_dir
from . import self_distill
from .common import write_json
from .drafter_loss import HeadTrainer
from .errors import TrainingError
from .lifecycle import Outcome, Plan, entry_points, run_log, run_trainer
from .loop import EXIT_CODES, LoopDefaults, LoopSettings, check_loop_arguments, loop_arguments
from .prepared import Prep, as_prep, batch_from, load_prepared


class DrafterTrainer(HeadTrainer):
    """The bundled recipe's EAGLE head, on batches of the AR run's prepared data."""

    kind = "drafter"

    def __init__(self, args, gpt, prep: Prep, log):
        super().__init__(gpt, EagleHead(gpt.config), lr=args.lr, steps=args.steps, warmup=args.warmup, cfg=args.cfg,
                         noise=args.noise, p_weight=args.p_weight, seed=args.seed)
        self.a, self.data, self.log = args, prep, log
        self.train_idx = torch.nonzero(prep.train).flatten()
        self.held_idx = torch.nonzero(~prep.train).flatten()

    def batch(self):
        b = self.train_idx[torch.randint(0, len(self.train_idx), (self.a.batch,), generator=self.gen)]
        return batch_from(self.data, b, self.gen)

    def held_out_batch(self):
        return batch_from(self.data, self.held_idx[: self.a.eval_images], torch.Generator().manual_seed(0),
                          augment=False)

    def export(self, out: Path, history: list, wall: float) -> dict:
        """``eagle.safetensors`` and ``metrics.json`` (the last evaluation's numbers)."""
        last = history[-1]
        metrics = {"step": self.step, "heldout_top1_agreement": last["heldout_top1"], "heldout_kl": last["heldout_kl"],
                   "heldout_feature_loss": last["heldout_feature_loss"], "wall_seconds": wall,
                   "cfg_scale": self.a.cfg, "history": history}
        save_weights(self.model, out, self.gpt.config.to_dict(), "eagle")
        write_json(out.parent / "metrics.json", metrics)
        self.log(f"exported {out}: held-out top-1 agreement {last['heldout_top1']:.3f}")
        return metrics


def frozen_target(path) -> torch.nn.Module:
    """The AR model the drafter learns from, in eval mode, without gradients."""
    gpt = load_gpt(path).eval()
    for p in gpt.parameters():
        p.requires_grad_(False)
    return gpt


def prepared_data(prepared) -> Prep:
    """``--prepared``: the AR run's prepared.pt (or, from Python, the prepared data itself)."""
    if isinstance(prepared, (str, Path)):
        return load_prepared(Path(prepared), "train drafter --prepared")
    return as_prep(prepared)


def _run(args) -> Outcome:
    """Train (or resume) the drafter and export it (its metrics; ``{"step", "stopped_by"}`` when a signal
    stopped it, checkpointed); with ``--model``, self-distil that model's drafter instead (its summary)."""
    if getattr(args, "model", None):
        ns = argparse.Namespace(name=args.model, steps=args.steps, sequences=args.sequences, batch=args.batch,
                                lr=args.lr, prompts=args.prompts_file, out=args.out, device=args.device,
                                seed=args.seed)
        summary = self_distill.distill(ns)
        stopped_by = summary["stopped_by"]
        return Outcome(EXIT_CODES.get(stopped_by or "", 0), summary["steps"], summary, stopped_by)
    if not args.gpt:
        raise TrainingError("train drafter needs --gpt (the bundled recipe) or --model NAME (self-distillation)")
    check_loop_arguments(args, min_steps=0)
    folder = Path(args.run)
    log = run_log(folder)

    def build(resumed: dict | None) -> DrafterTrainer:
        trainer = DrafterTrainer(args, frozen_target(args.gpt), prepared_data(args.prepared), log)
        if resumed is None and getattr(args, "init_from", None):
            # warm start (e.g. the shipped head, when its AR model was trained further): the schedule starts afresh
            sd, _ = load_weights(args.init_from, "eagle")
            load_state_strict(trainer.model, sd, args.init_from)
            log(f"initialised from {args.init_from}")
        return trainer

    def describe(t: DrafterTrainer) -> str:
        return f"drafter: {sum(p.numel() for p in t.model.parameters()) / 1e6:.2f} M params; target {args.steps} steps"

    plan = Plan(kind=DrafterTrainer.kind, settings=LoopSettings.from_args(args), out=folder / "eagle.safetensors",
                log=log, folder=folder, threads=args.threads)
    return run_trainer(plan, build, describe)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gpt", default=None, help="the trained AR model (gpt.safetensors) of the bundled-model recipe")
    p.add_argument("--model", default=None,
                   help="instead: a catalogue name or model folder; trains by self-distillation on its own samples")
    p.add_argument("--sequences", type=int, default=256, help="with --model: sequences the target generates")
    p.add_argument("--prompts-file", default=None, help="with --model: prompts for text-conditional models")
    p.add_argument("--out", default=None, help="with --model: where to write eagle.safetensors")
    p.add_argument("--device", default=None)
    p.add_argument("--prepared", default=str(runs_dir() / "ar" / "prepared.pt"), help="the AR run's prepared.pt")
    p.add_argument("--run", default=str(runs_dir() / "drafter"))
    loop_arguments(p, LoopDefaults(steps=1500, batch=16, lr=2e-3, warmup=50, threads=2, log_every=10, eval_every=100))
    p.add_argument("--cfg", type=float, default=3.0, help="guidance scale the drafter is tuned for")
    p.add_argument("--noise", type=float, default=0.1, help="uniform noise on input features (EAGLE)")
    p.add_argument("--p-weight", type=float, default=0.1, help="weight of the distribution loss")
    p.add_argument("--init-from", default=None, help="start from these drafter weights (an eagle.safetensors)")
    p.add_argument("--eval-images", type=int, default=64)


train, run, main = entry_points("train drafter", __doc__, add_arguments, _run)
