"""Train parallel draft heads (engine/draft_heads.py) for a model folder's target.

``lantern-studio train heads --model FOLDER --pack PACK.pt --run DIR --steps N [--heads K] [--export] [--into FOLDER]``

Teacher-forced on the model's own prepared training data (a class run's training pack, ``train ar
--pack-out``, or a caption run's ``prepared.pt``): the frozen target reads each token sequence once
and gives its final features h_t (row t: the output that predicts token t). Head i reads h_t and the
embedding of token t (the token the verify would have just fixed there) and learns token t + 1 + i:
by default the target's own distribution there (``--loss kl``: KL(p ‖ q) at the model's sampling
temperature and guidance, what the acceptance test min(1, p/q) compares), or the data token
(``--loss ce``). The held-out number that matters is Σ min(p, q) per head: the chance that one draft
sampled from the head passes exact (δ = 0) verification, given a correct context.

The export is ``heads.safetensors`` (fp16, kind "heads", K and the hidden width in its metadata)
and ``metrics.json`` beside it; ``--into FOLDER`` also installs it into a model folder (named and
hashed in its model.json, so the pipeline offers drafter "heads").
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import torch
import torch.nn.functional as F

from ..engine.checkpoints import CheckpointError, load_gpt, save_weights
from ..engine.draft_heads import KIND, DraftHeads, HeadsConfigError, check_config
from ..engine.sampling import guided_logits
from ..models.local import folder_file, install_heads, read_manifest, verify_files
from ..paths import runs_dir
from .common import cosine_lr, write_json
from .errors import TrainingError
from .lifecycle import Outcome, Plan, entry_points, run_log, run_trainer
from .loop import CHECKPOINT_NAME, LoopDefaults, LoopSettings, check_loop_arguments, loop_arguments
from .step import optimizer_step
from .prepared import Prep, as_prep, batch_from, load_prepared


def heads_losses(gpt, heads: DraftHeads, tok, cond, mask, cfg_scale: float, temperature: float, loss: str,
                 positions: torch.Tensor | None = None, bf16: bool = False):
    """→ (loss summed over heads, per-head Σ min(p, q) (K,), per-head top-1 agreement (K,)) for one batch.

    ``tok`` (B, T) image tokens, ``cond`` / ``mask`` their condition; with guidance (``cfg_scale`` ≠ 1)
    the target and the heads run on the conditional and the null rows and both sides are guided.
    ``positions``: the rows t the heads are trained at (default every one): the target's forward is
    the same either way, the heads' output products (K × rows × V) shrink with them. ``bf16``: the
    frozen target's forward under bf16 autocast (CPUs with native bf16).
    """
    guided = cfg_scale != 1.0
    c = torch.cat([cond, gpt.null_condition(cond)]) if guided else cond
    cmask = None if mask is None else (torch.cat([mask, mask]) if guided else mask)
    idx = torch.cat([tok, tok]) if guided else tok
    t_len = tok.shape[1]
    rows = torch.arange(t_len - 1) if positions is None else positions
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        logits_t, feats = gpt.teacher_forced_logits(idx[:, :-1], c, cmask, return_features=True)
        emb = gpt.tok_embeddings(idx[:, rows])  # token t, the one fed after the output of feats row t
    out = heads(feats[:, rows].float(), emb.float())  # (R, rows, K, dim); head i at row t proposes token t + 1 + i
    logits_t = logits_t.float()
    total, accept, agree = 0.0, [], []
    for i in range(heads.n_heads):
        keep = rows + 1 + i < t_len
        if not bool(keep.any()):
            accept.append(torch.tensor(0.0))
            agree.append(torch.tensor(0.0))
            continue
        at = rows[keep] + 1 + i
        logq = (guided_logits(gpt.output(out[:, keep, i]).float(), cfg_scale) / temperature).log_softmax(-1)
        logp = (guided_logits(logits_t[:, at], cfg_scale) / temperature).log_softmax(-1)
        if loss == "kl":
            total = total + (logp.exp() * (logp - logq)).sum(-1).mean()
        else:
            total = total + F.cross_entropy(logq.flatten(0, 1), tok[:, at].flatten())
        with torch.no_grad():
            accept.append(torch.minimum(logp.exp(), logq.exp()).sum(-1).mean())
            agree.append((logq.argmax(-1) == logp.argmax(-1)).float().mean())
    return total, torch.stack(accept), torch.stack(agree)


class HeadsTrainer:
    """K draft heads against a frozen target, one AdamW step of :func:`heads_losses` per ``train_step``."""

    kind = "heads"

    def __init__(self, args, gpt, prep: Prep, log, config: dict):
        self.a, self.gpt, self.data, self.log, self.config = args, gpt, prep, log, config
        self.model = DraftHeads(gpt.config.dim, config["heads"], config["hidden"])
        self.model.train()
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.0)
        self.gen = torch.Generator().manual_seed(args.seed)
        self.step = 0
        rows = usable_rows(prep, gpt)
        order = rows[torch.randperm(len(rows), generator=torch.Generator().manual_seed(0))]
        held = min(args.eval_images, len(order) // 5)
        self.held_idx, self.train_idx = order[:held], order[held:]
        if not len(self.train_idx):
            raise TrainingError("train heads: the data has no rows this model can condition on")

    def batch(self):
        b = self.train_idx[torch.randint(0, len(self.train_idx), (self.a.batch,), generator=self.gen)]
        return batch_from(self.data, b, self.gen)

    def held_out_batch(self):
        return batch_from(self.data, self.held_idx if len(self.held_idx) else self.train_idx[: self.a.eval_images],
                          torch.Generator().manual_seed(0), augment=False)

    def _losses(self, batch, positions: int = 0):
        tok, cond, mask = batch
        t = tok.shape[1] - 1
        rows = None if not 0 < positions < t else torch.randperm(t, generator=self.gen)[:positions].sort().values
        return heads_losses(self.gpt, self.model, tok, cond, mask, self.config["cfg"], self.config["temperature"],
                            self.config["loss"], rows, self.a.bf16)

    def train_step(self) -> dict[str, float]:
        lr = cosine_lr(self.step, self.a.steps, self.a.lr, self.a.warmup)
        loss, accept, _ = self._losses(self.batch(), self.a.positions)
        optimizer_step(self.opt, loss, self.model.parameters(), lr=lr, clip=1.0)
        self.step += 1
        return {"loss": float(loss.detach()), "accept1": float(accept[0]), "lr": lr}

    @torch.no_grad()
    def evaluate(self) -> tuple[dict, str]:
        self.model.eval()
        loss, accept, agree = self._losses(self.held_out_batch())
        self.model.train()
        row = {"heldout_loss": float(loss), "heldout_accept": [round(float(x), 4) for x in accept],
               "heldout_top1": [round(float(x), 4) for x in agree]}
        return row, ("held-out Σmin(p,q) per head " + " ".join(f"{float(x):.3f}" for x in accept)
                     + f", loss {float(loss):.3f}")

    def extra_state(self) -> dict:
        return {"config": dict(self.config)}

    def load_extra_state(self, extra: dict) -> None:
        pass

    def export(self, out: Path, history: list, wall: float) -> dict:
        """``heads.safetensors`` (fp16) and ``metrics.json``; with ``--into``, installed into that model folder."""
        last = history[-1] if history else self.evaluate()[0]
        metrics = {"step": self.step, **self.config, "heldout_accept": last.get("heldout_accept"),
                   "heldout_top1": last.get("heldout_top1"), "heldout_loss": last.get("heldout_loss"),
                   "wall_seconds": wall, "model": str(self.a.model), "history": history}
        save_weights(self.model, out, self.model.config, KIND)
        write_json(out.parent / "metrics.json", metrics)
        self.log(f"exported {out}: held-out Σmin(p,q) per head {last.get('heldout_accept')}")
        if self.a.into:
            try:
                install_heads(self.a.into, out)
            except CheckpointError as e:
                raise TrainingError(f"train heads --into: {e}") from None
            self.log(f"installed into {self.a.into}")
        return metrics


def usable_rows(prep: Prep, gpt) -> torch.Tensor:
    """The rows whose condition the target has an embedding for (a class pack of a grown vocabulary
    may hold identities a smaller model never learned), and whose grid is the target's."""
    if prep.grid * prep.grid != gpt.config.block_size or prep.vocab_size > gpt.vocab_size:
        raise TrainingError(f"train heads: the data is {prep.grid}x{prep.grid} tokens of {prep.vocab_size} codes, "
                            f"the model draws {gpt.config.block_size} tokens of {gpt.vocab_size}")
    n = prep.codes.shape[1]
    if getattr(prep, "kind", "") != "class":
        return torch.arange(n)
    c = prep.cond
    ok = c[:, 0] < gpt.config.num_classes
    if c.shape[1] > 1 and gpt.config.num_styles:
        ok &= c[:, 1] < gpt.config.num_styles
    return torch.nonzero(ok).flatten()


def target_of(folder) -> tuple:
    """A model folder's target (hash-checked, frozen, eval mode) and its model.json."""
    try:
        man = read_manifest(folder)
        verify_files(folder, man)
        gpt = load_gpt(folder_file(folder, man["gpt"], "gpt")).eval()
    except CheckpointError as e:
        raise TrainingError(f"train heads --model: {e}") from None
    for p in gpt.parameters():
        p.requires_grad_(False)
    return gpt, man


def training_data(args) -> Prep:
    """``--pack`` (a class run's training pack) or ``--prepared`` (a caption run's prepared.pt), or the
    prepared data itself from Python (``args.prepared``)."""
    if args.pack:
        return load_prepared(Path(args.pack), "train heads --pack", pack=True)
    if isinstance(args.prepared, (str, Path)):
        return load_prepared(Path(args.prepared), "train heads --prepared")
    if args.prepared is not None:
        return as_prep(args.prepared)
    raise TrainingError("train heads needs --pack (a class run's training pack: train ar --pack-out) or --prepared")


def run_config(args, man: dict, resumed: dict | None, dim: int) -> dict:
    """The heads' shape and objective: a resumed run's own (checked like a heads file's: bounded by the
    target's width ``dim`` before anything is built, :func:`checked_config`), else the options (guidance
    and temperature default to the model's sampling defaults)."""
    if resumed is not None and (resumed.get("extra") or {}).get("config"):
        return checked_config(resumed["extra"]["config"], dim, f"{Path(args.run) / CHECKPOINT_NAME}: its heads")
    defaults = man.get("defaults") or {}
    cfg = float(args.cfg if args.cfg is not None else defaults.get("cfg_scale", 1.0))
    temperature = float(args.temperature if args.temperature is not None else defaults.get("temperature", 1.0))
    return checked_config({"heads": args.heads, "hidden": args.hidden, "loss": args.loss, "cfg": cfg,
                           "temperature": temperature}, dim, "train heads")


def checked_config(config, dim: int, who: str) -> dict:
    """A heads run's configuration, every field checked: K and the hidden width within the bounds a heads
    file must keep (engine/draft_heads.py ``check_config``), the loss one of ours, guidance and temperature
    finite (temperature > 0); else one TrainingError from ``who`` naming the field."""
    if not isinstance(config, dict):
        raise TrainingError(f"{who} configuration must be a dict, got {type(config).__name__}")
    try:
        sizes = check_config({**config, "dim": dim}, dim)
    except HeadsConfigError as e:
        raise TrainingError(f"{who}: {str(e).replace('draft heads ', '')}") from None
    if config.get("loss") not in ("kl", "ce"):
        raise TrainingError(f'{who}: "loss" must be "kl" or "ce", got {config.get("loss")!r}')
    for key, low in (("cfg", 0.0), ("temperature", 0.0)):
        v = config.get(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < low or (
                key == "temperature" and v == 0):
            raise TrainingError(f'{who}: "{key}" must be a finite number {"> 0" if key == "temperature" else "≥ 0"}'
                                f", got {v!r}")
    return {"heads": sizes["heads"], "hidden": sizes["hidden"], "loss": config["loss"], "cfg": float(config["cfg"]),
            "temperature": float(config["temperature"])}


def _run(args) -> Outcome:
    """Train (or resume) the heads and export them (their metrics; ``{"step", "stopped_by"}`` when a
    signal stopped it, checkpointed)."""
    if not args.model:
        raise TrainingError("train heads needs --model FOLDER (the model folder whose target the heads draft for)")
    check_loop_arguments(args, min_steps=0)
    folder = Path(args.run)
    log = run_log(folder)

    def build(resumed: dict | None) -> HeadsTrainer:
        gpt, man = target_of(Path(args.model))
        config = run_config(args, man, resumed, gpt.config.dim)  # before the data: sizes are checked first
        prep = training_data(args)
        return HeadsTrainer(args, gpt, prep, log, config)

    def describe(t: HeadsTrainer) -> str:
        n = sum(p.numel() for p in t.model.parameters())
        return (f"draft heads: K={t.model.n_heads}, hidden {t.model.hidden}, {n / 1e6:.2f} M params, "
                f"loss {t.config['loss']} at T={t.config['temperature']:g}, cfg {t.config['cfg']:g}; "
                f"{len(t.train_idx)} train / {len(t.held_idx)} held-out rows; target {args.steps} steps")

    plan = Plan(kind=HeadsTrainer.kind, settings=LoopSettings.from_args(args), out=folder / "heads.safetensors",
                log=log, folder=folder, threads=args.threads, export_only=bool(args.export))
    return run_trainer(plan, build, describe)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None, help="the model folder whose target the heads draft for")
    p.add_argument("--pack", default=None, help="a class run's training pack (train ar --pack-out)")
    p.add_argument("--prepared", default=None, help="instead: a caption run's prepared.pt")
    p.add_argument("--run", default=str(runs_dir() / "heads"))
    p.add_argument("--heads", type=int, default=4, help="K: the tokens drafted a round")
    p.add_argument("--hidden", type=int, default=256, help="each head's hidden width")
    p.add_argument("--loss", choices=["kl", "ce"], default="kl",
                   help="kl: the target's own distribution at each position; ce: the data tokens")
    p.add_argument("--cfg", type=float, default=None, help="guidance scale (default: the model's)")
    p.add_argument("--temperature", type=float, default=None, help="sampling temperature (default: the model's)")
    loop_arguments(p, LoopDefaults(steps=1000, batch=8, lr=2e-3, warmup=50, threads=1, log_every=20, eval_every=200))
    p.add_argument("--positions", type=int, default=0,
                   help="train the heads at this many random positions of each batch (0: all; cheaper steps)")
    p.add_argument("--bf16", action="store_true", help="the frozen target's forward under bf16 autocast")
    p.add_argument("--eval-images", type=int, default=32)
    p.add_argument("--export", action="store_true", help="write the export from the run's checkpoint and stop")
    p.add_argument("--into", default=None, help="also install the export into this model folder")


train, run, main = entry_points("train heads", __doc__, add_arguments, _run)
