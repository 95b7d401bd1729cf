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
import sys
import time
from pathlib import Path

import torch

from ..engine.checkpoints import load_gpt, load_state_strict, load_weights, save_weights
from ..engine.drafters import EagleHead
from ..paths import runs_dir
from . import self_distill
from .ar import batch_from
from .common import Budget, RunLog, cosine_lr, load_checkpoint, save_checkpoint, write_json
from .drafter_loss import drafter_losses


def train(args) -> dict:
    run = Path(args.run)
    run.mkdir(parents=True, exist_ok=True)
    log = RunLog(run)
    torch.set_num_threads(args.threads)
    gpt = load_gpt(args.gpt).eval()
    for p in gpt.parameters():
        p.requires_grad_(False)
    prep = torch.load(args.prepared, map_location="cpu", weights_only=True) if isinstance(args.prepared, (str, Path)) else args.prepared
    train_idx = torch.nonzero(prep["train"]).flatten()
    held_idx = torch.nonzero(~prep["train"]).flatten()
    head = EagleHead(gpt.config)
    head.train()
    opt = torch.optim.AdamW(head.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.0)
    gen = torch.Generator().manual_seed(args.seed)
    step, wall_before, history = 0, 0.0, []
    ck = load_checkpoint(run / "ckpt.pt")
    if ck is not None:
        head.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        gen.set_state(ck["gen"])
        step, wall_before, history = ck["step"], ck.get("wall", 0.0), ck.get("history", [])
        log(f"resumed from step {step}")
    elif getattr(args, "init_from", None):
        # warm start (e.g. the shipped head, when its AR model was trained further): the schedule starts afresh
        sd, _ = load_weights(args.init_from, "eagle")
        load_state_strict(head, sd, args.init_from)
        log(f"initialised from {args.init_from}")
    budget = Budget(args.budget_minutes, every_seconds=args.checkpoint_seconds)

    def save():
        save_checkpoint(run / "ckpt.pt", model=head.state_dict(), opt=opt.state_dict(), gen=gen.get_state(),
                        step=step, wall=wall_before + budget.elapsed, history=history)

    @torch.no_grad()
    def evaluate():
        head.eval()
        g = torch.Generator().manual_seed(0)
        tok, emb, mask = batch_from(prep, held_idx[: args.eval_images], g, augment=False)
        lf, lp, ag = drafter_losses(gpt, head, tok, emb, mask, args.cfg, 0.0)
        head.train()
        return float(lf), float(lp), float(ag)

    log(f"drafter: {sum(p.numel() for p in head.parameters()) / 1e6:.2f} M params; target {args.steps} steps")
    t_last = time.time()
    while step < args.steps and not budget.spent():
        lr = cosine_lr(step, args.steps, args.lr, args.warmup)
        for gp in opt.param_groups:
            gp["lr"] = lr
        b = train_idx[torch.randint(0, len(train_idx), (args.batch,), generator=gen)]
        tok, emb, mask = batch_from(prep, b, gen)
        lf, lp, ag = drafter_losses(gpt, head, tok, emb, mask, args.cfg, args.noise, gen)
        loss = lf + args.p_weight * lp
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(head.parameters(), 1.0)
        opt.step()
        step += 1
        if step % args.log_every == 0:
            dt = (time.time() - t_last) / args.log_every
            t_last = time.time()
            log(f"step {step}/{args.steps} feat {float(lf):.4f} kl {float(lp):.3f} top1 {float(ag):.3f} {dt:.2f}s/step")
        if step % args.eval_every == 0 or step == args.steps:
            lf_e, lp_e, ag_e = evaluate()
            history.append({"step": step, "heldout_feature_loss": lf_e, "heldout_kl": lp_e, "heldout_top1": ag_e})
            log(f"eval step {step}: held-out top-1 agreement {ag_e:.3f}, KL {lp_e:.3f}")
        if budget.checkpoint_due():
            save()
    save()
    lf_e, lp_e, ag_e = evaluate()
    metrics = {"step": step, "heldout_top1_agreement": ag_e, "heldout_kl": lp_e, "heldout_feature_loss": lf_e,
               "wall_seconds": wall_before + budget.elapsed, "cfg_scale": args.cfg, "history": history}
    save_weights(head, run / "eagle.safetensors", gpt.config.to_dict(), "eagle")
    write_json(run / "metrics.json", metrics)
    log(f"exported {run / 'eagle.safetensors'}: held-out top-1 agreement {ag_e:.3f}")
    return metrics


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
    p.add_argument("--steps", type=int, default=1500)
    p.add_argument("--budget-minutes", type=float, default=None)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--cfg", type=float, default=3.0, help="guidance scale the drafter is tuned for")
    p.add_argument("--noise", type=float, default=0.1, help="uniform noise on input features (EAGLE)")
    p.add_argument("--p-weight", type=float, default=0.1, help="weight of the distribution loss")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--init-from", default=None, help="start from these drafter weights (an eagle.safetensors)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--eval-every", type=int, default=100)
    p.add_argument("--eval-images", type=int, default=64)
    p.add_argument("--checkpoint-seconds", type=float, default=180.0)


def run(args) -> int:
    if args.model:
        ns = argparse.Namespace(name=args.model, steps=args.steps, sequences=args.sequences, batch=args.batch,
                                lr=args.lr, prompts=args.prompts_file, out=args.out, device=args.device,
                                seed=args.seed)
        return self_distill.run(ns)
    if not args.gpt:
        print("error: train drafter needs --gpt (the bundled recipe) or --model NAME (self-distillation)",
              file=sys.stderr)
        return 2
    train(args)
    return 0
