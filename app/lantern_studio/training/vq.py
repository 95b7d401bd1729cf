"""Train the bundled VQ tokenizer (64×64 images → 16×16 codes, 1024 × 8-d codes).

``lantern-studio train vq [--data DIR] [--run DIR] [--steps N]
[--budget-minutes M] [--batch B] [--out FILE]``

* data: a dataset folder with ``images.npy`` ((N, H, W, 3) uint8) and
  ``meta.jsonl`` (one JSON object per row, ``split`` in {"train", "heldout"}).
* losses: L1 + L2 reconstruction, a cheap image-gradient (edge) L1 term,
  codebook + commitment (straight-through estimator). No pretrained networks.
* codebook health: spherical k-means initialisation of the codebook from
  encoder outputs after a short warm-up, then dead-code restarts (codes
  unused for a while are moved onto current encoder outputs, sampled in
  proportion to their quantisation error).
* resumable: a checkpoint (model, optimizer, step, RNG, codebook bookkeeping)
  is written atomically to the run folder every few minutes, when the wall
  budget is spent, on Ctrl-C / SIGTERM and at the end; re-running the same
  command continues from it. ``--steps`` is the total target step count.
* at the end (or with ``--export``): fp16 safetensors via
  :func:`lantern_studio.engine.tokenizer.save_vq` and ``metrics.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch
import torch.nn.functional as F

from lantern_studio import paths
from lantern_studio.engine.tokenizer import VQArgs, VQModel, load_vq, read_vq_args, save_vq
from .common import atomic_write_text as _atomic_write_text
from .common import cosine_lr as _lr_at
from .errors import TrainingError, need
from .lifecycle import Outcome, Plan, entry_points, run_log, run_trainer
from .loop import CHECKPOINT_NAME, LoopDefaults, LoopSettings, check_loop_arguments, loop_arguments
from .step import optimizer_step
from ..engine.files import sha256_file as _sha256

__all__ = [
    "DEFAULT_DATASET",
    "default_vq_args",
    "VQData",
    "load_vq_data",
    "evaluate",
    "spherical_kmeans",
    "add_arguments",
    "train",
    "run",
    "main",
]

#: Dataset folder name under ``paths.data_dir()`` used when ``--data`` is not given.
DEFAULT_DATASET = "emoji64"
METRICS_NAME = "metrics.json"
# what --decoder-only trains (everything after the codebook lookup)
DECODER_PREFIXES = ("decoder.", "post_quant_conv.")
_WHITE = 1.0  # background value in [-1, 1]


def default_vq_args() -> VQArgs:
    """The bundled tokenizer: ch 32, widths 32/64/128, one res block per level, 3.0 M params."""
    return VQArgs(
        codebook_size=1024,
        codebook_embed_dim=8,
        codebook_l2_norm=True,
        codebook_show_usage=False,
        commit_loss_beta=0.25,
        entropy_loss_ratio=0.0,
        encoder_ch_mult=[1, 2, 4],
        decoder_ch_mult=[1, 2, 4],
        z_channels=64,
        dropout_p=0.0,
        ch=32,
        num_res_blocks=1,
    )


# --------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------


@dataclass
class VQData:
    train: np.ndarray  # (N, H, W, 3) uint8
    heldout: np.ndarray  # (M, H, W, 3) uint8
    path: Path
    sha256: str  # of images.npy
    note: str = ""


def load_vq_data(data_dir: str | os.PathLike) -> VQData:
    """Read ``images.npy`` + ``meta.jsonl`` and split rows by ``split``.

    If no row is marked ``heldout``, the last 5 % of the rows (at least one)
    are held out and ``note`` says so.
    """
    data_dir = Path(data_dir)
    img_path, meta_path = data_dir / "images.npy", data_dir / "meta.jsonl"
    for p in (img_path, meta_path):
        if not p.is_file():
            raise TrainingError(f"{p}: missing (build the dataset first, or pass --data DIR)")
    try:
        images = np.load(img_path, allow_pickle=False)
    except Exception as e:
        raise TrainingError(f"{img_path}: not a readable .npy array ({e})") from None
    if images.dtype != np.uint8 or images.ndim != 4 or images.shape[-1] != 3:
        raise TrainingError(f"{img_path}: expected (N, H, W, 3) uint8, got {images.shape} {images.dtype}")
    splits = []
    with open(meta_path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise TrainingError(f"{meta_path}:{lineno}: bad JSON ({e})") from None
            splits.append(row.get("split") if isinstance(row, dict) else None)
    if len(splits) != len(images):
        raise TrainingError(f"{meta_path}: {len(splits)} rows but {img_path.name} has {len(images)} images")
    splits_a = np.array([str(s) for s in splits])
    train_idx = np.flatnonzero(splits_a == "train")
    held_idx = np.flatnonzero(splits_a == "heldout")
    note = ""
    if len(held_idx) == 0:
        n_held = max(1, len(train_idx) // 20)
        held_idx, train_idx = train_idx[-n_held:], train_idx[:-n_held]
        note = f"no 'heldout' rows in {meta_path.name}: holding out the last {n_held} training rows"
    if len(train_idx) == 0:
        raise TrainingError(f"{meta_path}: no rows with split 'train'")
    return VQData(train=np.ascontiguousarray(images[train_idx]),
                  heldout=np.ascontiguousarray(images[held_idx]),
                  path=data_dir, sha256=_sha256(img_path), note=note)


def _to_tensor(batch: np.ndarray) -> torch.Tensor:
    """(B, H, W, 3) uint8 → (B, 3, H, W) float in [-1, 1]."""
    return torch.from_numpy(np.ascontiguousarray(batch)).permute(0, 3, 1, 2).float().div_(127.5).sub_(1.0)


def _shift(x: torch.Tensor, max_shift: int, gen: torch.Generator) -> torch.Tensor:
    """Random per-image translation by up to ±max_shift px, filling with white."""
    if max_shift <= 0:
        return x
    b, _, h, w = x.shape
    s = max_shift
    padded = F.pad(x, (s, s, s, s), value=_WHITE)
    off = torch.randint(0, 2 * s + 1, (b, 2), generator=gen)
    return torch.stack([padded[i, :, oy:oy + h, ox:ox + w] for i, (oy, ox) in enumerate(off.tolist())])


# --------------------------------------------------------------------------
# evaluation
# --------------------------------------------------------------------------


@torch.no_grad()
def evaluate(model: VQModel, images: np.ndarray | torch.Tensor, *, batch_size: int = 64) -> dict[str, Any]:
    """Reconstruction quality and codebook usage of ``model`` on ``images``.

    ``images``: (N, H, W, 3) uint8 array or (N, 3, H, W) float tensor in
    [-1, 1]. Returns ``psnr`` (mean per-image PSNR in dB, on the [0, 1]
    scale), ``psnr_global`` (from the mean squared error over all images),
    ``codes_used`` (distinct codes), ``codes_used_fraction`` (of the
    codebook), ``perplexity`` of the code histogram and ``n_images``.
    """
    was_training = model.training
    model.eval()
    param = next(model.parameters())
    n = len(images)
    if n == 0:
        raise TrainingError("images: need at least one image to evaluate")
    counts = torch.zeros(model.args.codebook_size, dtype=torch.long)
    psnrs, sq_sum, px = [], 0.0, 0
    try:
        for i in range(0, n, batch_size):
            chunk = images[i:i + batch_size]
            x = _to_tensor(chunk) if isinstance(chunk, np.ndarray) else chunk.float()
            x = x.to(param.device)
            codes = model.encode(x)
            recon = model.decode_codes(codes).float()
            counts += torch.bincount(codes.flatten().cpu(), minlength=counts.numel())
            mse = ((recon - x) / 2.0).pow(2).flatten(1).mean(1).cpu()  # [0, 1] scale
            psnrs.append(-10.0 * torch.log10(mse.clamp_min(1e-10)))
            sq_sum += float(mse.sum()) * x[0].numel()
            px += x.numel()
    finally:
        model.train(was_training)
    p = counts.double() / counts.sum()
    nz = p[p > 0]
    used = int((counts > 0).sum())
    return {
        "psnr": float(torch.cat(psnrs).mean()),
        "psnr_global": float(-10.0 * math.log10(max(sq_sum / px, 1e-10))),
        "codes_used": used,
        "codes_used_fraction": used / model.args.codebook_size,
        "perplexity": float(torch.exp(-(nz * nz.log()).sum())),
        "n_images": n,
    }


# --------------------------------------------------------------------------
# codebook maintenance
# --------------------------------------------------------------------------


def spherical_kmeans(x: torch.Tensor, k: int, iters: int, gen: torch.Generator) -> torch.Tensor:
    """k unit-norm centroids of unit-norm rows ``x`` (cosine k-means); empty clusters re-seeded."""
    x = F.normalize(x.float(), dim=-1)
    n = x.shape[0]
    pick = torch.randperm(n, generator=gen)[:k] if n >= k else torch.randint(0, n, (k,), generator=gen)
    c = x[pick].clone()
    if n < k:
        c = F.normalize(c + 0.01 * torch.randn(c.shape, generator=gen), dim=-1)
    for _ in range(iters):
        assign = (x @ c.t()).argmax(dim=1)
        sums = torch.zeros_like(c).index_add_(0, assign, x)
        counts = torch.bincount(assign, minlength=k)
        c = F.normalize(sums, dim=-1)
        empty = counts == 0
        if empty.any():
            ne = int(empty.sum())
            seeds = x[torch.randint(0, n, (ne,), generator=gen)]
            c[empty] = F.normalize(seeds + 0.01 * torch.randn(seeds.shape, generator=gen), dim=-1)
    return c


def _reset_opt_rows(opt: torch.optim.Optimizer, param: torch.Tensor, rows: torch.Tensor | None) -> None:
    st = opt.state.get(param)
    if not st:
        return
    for key in ("exp_avg", "exp_avg_sq"):
        if key in st:
            if rows is None:
                st[key].zero_()
            else:
                st[key][rows] = 0


# --------------------------------------------------------------------------
# training
# --------------------------------------------------------------------------


def _amp_enabled(precision: str, device: torch.device) -> bool:
    if precision == "fp32":
        return False
    if precision == "bf16":
        return True
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except Exception:
        return False


class _Trainer:
    """The tokenizer's trainer on the one loop driver (:mod:`.loop`): set up or resume, step, export."""

    kind = "vq"

    def __init__(self, args: argparse.Namespace, log: Callable[[str], None]):
        self.a = args
        self.log = log
        self.device = torch.device(args.device)
        self.init_steps = 0  # steps behind the --init-from weights

    # -- state -------------------------------------------------------------
    def setup(self, data: VQData, resumed: dict | None) -> None:
        a = self.a
        self.data = data
        if resumed is not None:
            extra = resumed.get("extra", {})
            vq_args = VQArgs.from_dict(json.loads(extra["vq_args"]))
            if a.vq_args and vq_args.to_dict() != self._requested_args().to_dict():
                self.log("note: --vq-args differs from the checkpoint's architecture; using the checkpoint's")
            if bool(extra.get("decoder_only", False)) != bool(a.decoder_only):
                raise TrainingError(f"{Path(a.run) / CHECKPOINT_NAME}: this run was started "
                                 f"{'with' if extra.get('decoder_only') else 'without'} --decoder-only; "
                                 f"re-run it the same way, or use another --run folder")
            init = None
        elif a.init_from:
            init = load_vq(a.init_from)  # raises CheckpointError naming the file
            vq_args = init.args
            self.init_steps = int(read_vq_args(a.init_from)[1].get("steps", 0) or 0)
        else:
            if a.decoder_only:
                raise TrainingError("--decoder-only needs --init-from (a trained vq.safetensors whose codes stay fixed)")
            init = None
            vq_args = self._requested_args()
        self.vq_args = vq_args
        f = vq_args.downsample_factor
        h, w = data.train.shape[1:3]
        if h % f or w % f:
            raise TrainingError(f"images: {h}x{w} is not a multiple of the tokenizer's downsampling factor {f}")

        torch.manual_seed(a.seed)
        self.model = VQModel(vq_args).to(self.device)
        if init is not None:
            self.model.load_state_dict(init.state_dict())  # copies, casting to the model's fp32
        if a.decoder_only:
            # encoder, quant_conv and codebook frozen: every image keeps its tokens,
            # so an AR model trained on them stays valid; only the way back improves
            for name, p in self.model.named_parameters():
                p.requires_grad_(name.startswith(DECODER_PREFIXES))
        decay, no_decay = [], []
        for name, p in self.model.named_parameters():
            if not p.requires_grad:
                continue
            (no_decay if p.ndim < 2 or "norm" in name or name.startswith("quantize.") else decay).append(p)
        self.opt = torch.optim.AdamW(
            [{"params": decay, "weight_decay": a.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
            lr=a.lr, betas=(0.9, 0.99), eps=1e-8)
        self.gen = torch.Generator().manual_seed(a.seed)
        self.step = 0
        self.kmeans_done = init is not None
        self.last_used = torch.zeros(vq_args.codebook_size, dtype=torch.long)
        self.perm = torch.randperm(len(data.train), generator=self.gen)
        self.perm_pos = 0
        self.epoch = 0
        self.amp = _amp_enabled(a.precision, self.device)

    def extra_state(self) -> dict[str, Any]:
        return {"kmeans_done": self.kmeans_done, "last_used": self.last_used, "perm": self.perm,
                "perm_pos": self.perm_pos, "epoch": self.epoch, "vq_args": self.vq_args.to_json(),
                "data_sha256": self.data.sha256, "decoder_only": bool(self.a.decoder_only)}

    def load_extra_state(self, extra: dict[str, Any]) -> None:
        self.kmeans_done = bool(extra["kmeans_done"])
        self.last_used = extra["last_used"].long()
        self.perm = extra["perm"].long()
        self.perm_pos = int(extra["perm_pos"])
        self.epoch = int(extra["epoch"])
        if len(self.perm) != len(self.data.train):
            self.log("note: the training set changed size since the checkpoint; reshuffling")
            self.perm = torch.randperm(len(self.data.train), generator=self.gen)
            self.perm_pos = 0
        if extra.get("data_sha256") not in (None, self.data.sha256):
            self.log("note: images.npy differs from the one this run started on")

    def _requested_args(self) -> VQArgs:
        base = default_vq_args().to_dict()
        if self.a.vq_args:
            try:
                extra = json.loads(self.a.vq_args)
            except json.JSONDecodeError as e:
                raise TrainingError(f"--vq-args: not valid JSON ({e})") from None
            if not isinstance(extra, dict):
                raise TrainingError("--vq-args: expected a JSON object of VQArgs fields")
            base.update(extra)
        return VQArgs.from_dict(base)

    # -- batches -----------------------------------------------------------
    def _next_indices(self, b: int) -> torch.Tensor:
        out = []
        while b > 0:
            if self.perm_pos >= len(self.perm):
                self.perm = torch.randperm(len(self.data.train), generator=self.gen)
                self.perm_pos = 0
                self.epoch += 1
            take = self.perm[self.perm_pos:self.perm_pos + b]
            self.perm_pos += len(take)
            b -= len(take)
            out.append(take)
        return torch.cat(out)

    def _batch(self, augment: bool = True) -> torch.Tensor:
        idx = self._next_indices(min(self.a.batch, len(self.data.train))).numpy()
        x = _to_tensor(self.data.train[np.sort(idx)])
        if augment:
            x = _shift(x, self.a.shift, self.gen)
        return x.to(self.device)

    # -- codebook maintenance ---------------------------------------------
    @torch.no_grad()
    def kmeans_init(self) -> None:
        t0 = time.time()
        self.model.eval()
        lat = []
        for _ in range(self.a.kmeans_batches):
            x = self._batch(augment=False)
            with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.amp):
                z = self.model.encode_latents(x)
            lat.append(self.model.quantize._prepare(z).reshape(-1, self.vq_args.codebook_embed_dim).cpu())
        self.model.train()
        x = torch.cat(lat)
        if len(x) > self.a.kmeans_points:
            x = x[torch.randperm(len(x), generator=self.gen)[: self.a.kmeans_points]]
        c = spherical_kmeans(x, self.vq_args.codebook_size, self.a.kmeans_iters, self.gen)
        emb = self.model.quantize.embedding.weight
        emb.data.copy_(c.to(emb.device, emb.dtype))
        _reset_opt_rows(self.opt, emb, None)
        self.last_used.fill_(self.step)
        self.kmeans_done = True
        self.log(f"step {self.step}: codebook initialised by k-means on {len(x)} encoder outputs "
                 f"({time.time() - t0:.1f}s)")

    @torch.no_grad()
    def restart_dead(self, latents: torch.Tensor, indices: torch.Tensor) -> int:
        dead = torch.nonzero(self.step - self.last_used > self.a.dead_after).flatten()
        if len(dead) == 0:
            return 0
        q = self.model.quantize
        emb = q.codebook().float()
        lat = latents.float()
        err = (lat - emb[indices.flatten().to(emb.device)]).pow(2).sum(1).cpu() + 1e-6
        pick = torch.multinomial(err, len(dead), replacement=len(dead) > len(err), generator=self.gen)
        new = lat.cpu()[pick] + 0.01 * torch.randn((len(dead), lat.shape[1]), generator=self.gen)
        if q.l2_norm:
            new = F.normalize(new, dim=-1)
        w = q.embedding.weight
        w.data[dead.to(w.device)] = new.to(w.device, w.dtype)
        _reset_opt_rows(self.opt, w, dead.to(w.device))
        self.last_used[dead] = self.step
        return len(dead)

    # -- loop ----------------------------------------------------------------
    def train_step(self) -> dict[str, float]:
        a, m = self.a, self.model
        if not self.kmeans_done and a.kmeans_step >= 0 and self.step >= a.kmeans_step:
            self.kmeans_init()
        lr = _lr_at(self.step, a.steps, a.lr, a.warmup, a.min_lr_ratio)
        x = self._batch()
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.amp):
            recon, info = m(x)
        recon = recon.float()
        l1 = (recon - x).abs().mean()
        l2 = (recon - x).pow(2).mean()
        loss = l1 + l2 + info["codebook"] + info["commit"] + info["entropy"]
        edge = torch.zeros(())
        if a.edge_weight > 0:
            edge = ((recon.diff(dim=-1) - x.diff(dim=-1)).abs().mean()
                    + (recon.diff(dim=-2) - x.diff(dim=-2)).abs().mean())
            loss = loss + a.edge_weight * edge
        gnorm = optimizer_step(self.opt, loss, m.parameters(), lr=lr, clip=a.grad_clip)
        if gnorm is None:
            gnorm = torch.zeros(())
        with torch.no_grad():
            if m.quantize.l2_norm and not a.decoder_only:  # keep raw codes on the sphere so their effective step size stays put
                w = m.quantize.embedding.weight
                w.copy_(F.normalize(w, dim=-1))
        idx = info["indices"].detach()
        used = torch.unique(idx.flatten().cpu())
        self.last_used[used] = self.step
        self.step += 1
        restarted = 0
        if (self.kmeans_done and not a.decoder_only and a.restart_every > 0 and self.step % a.restart_every == 0
                and self.step < a.restart_until * a.steps):
            restarted = self.restart_dead(info["latents"], idx)
        with torch.no_grad():
            mse = ((recon.detach().clamp(-1, 1) - x) / 2).pow(2).flatten(1).mean(1)
            psnr = float((-10 * torch.log10(mse.clamp_min(1e-10))).mean())
        # the loop driver logs these averaged over its window ("codes": distinct codes in a batch)
        return {"loss": float(loss.detach()), "l1": float(l1.detach()), "psnr": psnr, "codes": float(len(used)),
                "restarts": float(restarted), "grad_norm": float(gnorm), "lr": lr}

    def evaluate(self) -> tuple[dict[str, Any], str]:
        ev = evaluate(self.model, self.data.heldout, batch_size=self.a.eval_batch)
        text = (f"held-out psnr {ev['psnr']:.2f} dB, codes used {ev['codes_used']}/{self.vq_args.codebook_size} "
                f"({100 * ev['codes_used_fraction']:.1f}%), perplexity {ev['perplexity']:.0f}")
        return ev, text

    # -- export --------------------------------------------------------------
    def export(self, out: Path, history: list, wall: float) -> dict[str, Any]:
        ev, _ = self.evaluate()
        metrics = {
            "heldout_psnr": ev["psnr"],
            "heldout_psnr_global": ev["psnr_global"],
            "codes_used": ev["codes_used"],
            "codes_used_fraction": ev["codes_used_fraction"],
            "codebook_size": self.vq_args.codebook_size,
            "perplexity": ev["perplexity"],
            "heldout_images": ev["n_images"],
            "train_images": int(len(self.data.train)),
            "steps": self.step,
            "target_steps": int(self.a.steps),
            "wall_seconds": round(wall, 1),
            "params": self.model.num_params(),
            "batch": int(self.a.batch),
            "precision": "bf16-autocast" if self.amp else "fp32",
            "decoder_only": bool(self.a.decoder_only),
            "init_from": str(self.a.init_from) if self.a.init_from else None,
            "init_steps": self.init_steps,
            "data": str(self.data.path),
            "images_sha256": self.data.sha256,
            "vq_args": self.vq_args.to_dict(),
            "history": history,
        }
        save_vq(self.model, self.vq_args, out, dtype=torch.float16, metadata={
            "steps": str(self.step),
            "heldout_psnr": f"{ev['psnr']:.3f}",
            "codes_used": str(ev["codes_used"]),
            "images_sha256": self.data.sha256,
        })
        _atomic_write_text(Path(self.a.run) / METRICS_NAME, json.dumps(metrics, indent=2) + "\n")
        self.log(f"exported {out} (fp16): held-out psnr {ev['psnr']:.2f} dB, codes used "
                 f"{ev['codes_used']}/{self.vq_args.codebook_size} "
                 f"({100 * ev['codes_used_fraction']:.1f}%), {self.step} steps; "
                 f"metrics in {Path(self.a.run) / METRICS_NAME}")
        return metrics


# --------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``lantern-studio train vq``."""
    g = parser.add_argument_group("data and run")
    g.add_argument("--data", type=Path, default=None,
                   help=f"dataset folder with images.npy + meta.jsonl (default: <data dir>/{DEFAULT_DATASET})")
    g.add_argument("--run", type=Path, default=None,
                   help="run folder for the checkpoint and log; re-running resumes (default: <runs dir>/vq)")
    g.add_argument("--out", type=Path, default=None,
                   help="where to write the fp16 tokenizer (default: <run>/vq.safetensors)")
    g.add_argument("--export", action="store_true",
                   help="don't train: export the checkpoint's weights and metrics now")
    g.add_argument("--init-from", type=Path, default=None,
                   help="start from these weights (a vq.safetensors) instead of scratch; no k-means")
    g.add_argument("--decoder-only", action="store_true",
                   help="with --init-from: train only the decoder; encoder and codebook stay fixed, so every "
                        "image keeps its tokens and an AR model trained on them stays valid")

    loop_arguments(parser.add_argument_group("the loop"), LoopDefaults(
        steps=5000, batch=32, lr=6e-4, warmup=100, threads=2, log_every=10, eval_every=250, stop_after=True))

    g = parser.add_argument_group("optimisation")
    g.add_argument("--min-lr-ratio", type=float, default=0.05, help="cosine floor as a fraction of --lr")
    g.add_argument("--weight-decay", type=float, default=0.01)
    g.add_argument("--grad-clip", type=float, default=1.0)
    g.add_argument("--edge-weight", type=float, default=0.2, help="weight of the image-gradient L1 loss")
    g.add_argument("--shift", type=int, default=2, help="max random shift in px (white fill; default 2)")

    g = parser.add_argument_group("codebook")
    g.add_argument("--kmeans-step", type=int, default=100,
                   help="initialise the codebook by k-means at this step (-1: never; default 100)")
    g.add_argument("--kmeans-batches", type=int, default=8)
    g.add_argument("--kmeans-points", type=int, default=32768)
    g.add_argument("--kmeans-iters", type=int, default=20)
    g.add_argument("--restart-every", type=int, default=20, help="check for dead codes every N steps (0: off)")
    g.add_argument("--dead-after", type=int, default=100, help="a code unused this many steps is restarted")
    g.add_argument("--restart-until", type=float, default=0.9,
                   help="stop restarts after this fraction of --steps (default 0.9)")

    g = parser.add_argument_group("machine and logging")
    g.add_argument("--device", default="cpu", help="torch device (default: cpu)")
    g.add_argument("--precision", choices=["auto", "bf16", "fp32"], default="auto",
                   help="bf16 autocast where the CPU/GPU supports it (auto), or force one")
    g.add_argument("--eval-batch", type=int, default=64)
    g.add_argument("--vq-args", default=None,
                   help="JSON object of VQArgs fields overriding the default architecture (new runs only)")


def _check_args(a: argparse.Namespace) -> None:
    check_loop_arguments(a)
    need(0 <= a.min_lr_ratio <= 1, "--min-lr-ratio", "in [0, 1]", a.min_lr_ratio)
    need(a.shift >= 0, "--shift", ">= 0", a.shift)
    need(a.eval_batch >= 1, "--eval-batch", ">= 1", a.eval_batch)
    need(a.kmeans_batches >= 1, "--kmeans-batches", ">= 1", a.kmeans_batches)
    need(a.kmeans_points >= 1, "--kmeans-points", ">= 1", a.kmeans_points)
    need(a.kmeans_iters >= 1, "--kmeans-iters", ">= 1", a.kmeans_iters)
    need(a.restart_every >= 0, "--restart-every", ">= 0", a.restart_every)
    need(a.dead_after >= 1, "--dead-after", ">= 1", a.dead_after)


def _run(args: argparse.Namespace) -> Outcome:
    """Train (or resume, or ``--export``) the tokenizer."""
    a = args
    a.data = Path(a.data) if a.data else paths.data_dir() / DEFAULT_DATASET
    a.run = Path(a.run) if a.run else paths.runs_dir() / "vq"
    out = Path(a.out) if a.out else a.run / "vq.safetensors"

    _check_args(a)
    log = run_log(a.run)

    def build(resumed):
        trainer = _Trainer(a, log)
        trainer.setup(load_vq_data(a.data), resumed)
        return trainer

    def describe(t: "_Trainer") -> str:
        d = t.data
        return (f"training VQ tokenizer{' decoder (codes fixed)' if a.decoder_only else ''}: "
                f"{t.model.num_params() / 1e6:.2f} M params, {len(d.train)} train / {len(d.heldout)} held-out images "
                f"{d.train.shape[1]}x{d.train.shape[2]}, batch {a.batch}, {'bf16 autocast' if t.amp else 'fp32'}, "
                f"{a.threads} threads, step {t.step} -> {a.steps}; run folder {a.run}")

    plan = Plan(kind=_Trainer.kind, settings=LoopSettings.from_args(a), out=out, log=log, folder=a.run,
                threads=a.threads, export_only=a.export)
    return run_trainer(plan, build, describe)


train, run, main = entry_points("train vq", __doc__, add_arguments, _run)


if __name__ == "__main__":
    sys.exit(main())
