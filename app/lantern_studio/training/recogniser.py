"""Train the quality recogniser: a small CNN that tells an emoji's subgroup
(or, with ``--label identity``, which emoji it is: the identity-level judge).

``lantern-studio train recogniser [--data DIR] [--run DIR] [--steps N]
[--label subgroup|identity] [--holdout-style STYLE|none] [--budget-minutes M] [--out FILE]``

What it is for: scoring *generated* images (prompt fidelity, a Fréchet
distance on its features, the GUI's per-run quality point). It is trained
only on the dataset's real images, never on generated ones.

* label: the emoji's **subgroup** (emojibase, e.g. ``animal-mammal``,
  ``food-fruit``; 99 classes on the real dataset). The held-out split is by
  emoji identity, so held-out emoji are never seen in training; the subgroup is
  the label that generalises to them. Top-1 / top-5 on the held-out split is
  the real-image ceiling for prompt fidelity.
* ``--label identity`` (the judge): the class is the emoji identity (skin-tone
  and gender variants share it; 1,911 classes on data v2), and the weights
  carry each identity's subgroup, so the judge also answers subgroup top-5.
  It must know every identity the generator may be asked for, so its split is
  by **art style**: ``--holdout-style fluent-flat`` trains on the other styles
  and reports identity top-1 / top-5 on fluent-flat images of identities it has
  seen in another style (the leave-one-style-out ceiling); ``--holdout-style
  none`` trains on every image (the judge that ships).
* network: stem conv (stride 2) + three residual stages (stride 2 each),
  BatchNorm, global average pool, a ``feature_dim`` (128) linear layer whose
  output is the feature vector for Fréchet distances, ReLU, dropout and the
  class head. ~0.87 M parameters at the default sizes.
* sampling: every emoji *identity* is equally likely (then one of its
  renderings), so skin-tone variants (12-50 renderings per person emoji) do not
  swamp the rest (``--balance image`` samples images uniformly instead).
* augmentation: random shifts of up to ±``--shift`` px (3) filling with white,
  mild colour jitter that keeps white white (the "ink" 1 − x is scaled per image
  and per channel), and, with probability ``--blur-prob`` (0.2), a light 3×3
  blur so that slightly soft decoded images are not out of distribution;
  optionally (``--scale-prob``) a down-scale to 24-48 px and back (the soft,
  low-detail look of decoded tokens) and (``--noise``) Gaussian pixel noise.
  No flips (emoji have handedness, arrows point somewhere).
* resumable: a checkpoint (model, optimizer, step, RNG) is written atomically
  to the run folder every ``--checkpoint-seconds``, when the wall budget is
  spent, on Ctrl-C / SIGTERM and at the end; re-running the same command
  continues from it. ``--steps`` is the total target step count.
* output (at the end of every invocation that trained, or with ``--export``):
  fp16 safetensors ``recogniser.safetensors`` (kind ``recogniser``; config JSON
  in the metadata: class names, feature dim, architecture sizes) and
  ``metrics.json`` (held-out top-1 / top-5, train accuracy, steps, wall
  seconds, params). Load it with :class:`lantern_studio.models.recogniser.Recogniser`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

from lantern_studio import paths
# the network, its input convention and its weights file are the shipped inference side (models/recogniser.py)
from ..models.recogniser import RecogniserConfig, RecogniserNet, save_recogniser, subgroup_pool, to_input
from ..engine.tokenizer import load_vq
from ..engine.checkpoints import CheckpointError, load_weights
from ..models.dataset import DatasetError, default_out_dir, load_dataset
from ..models.local import install_recogniser
from .common import atomic_write_text as _atomic_write_text
from .degradations import NONE, break_pictures, degrade
from .vq_views import balanced_rows, make_views
from .common import cosine_lr as _lr_at
from .errors import TrainingError, need
from .lifecycle import Outcome, Plan, entry_points, run_log, run_trainer
from .loop import CHECKPOINT_NAME, LoopDefaults, LoopSettings, check_loop_arguments, loop_arguments
from .step import optimizer_step

__all__ = [
    "RecogniserData",
    "make_data",
    "load_recogniser_data",
    "augment",
    "evaluate",
    "add_arguments",
    "train",
    "run",
    "main",
]

WEIGHTS_NAME = "recogniser.safetensors"
METRICS_NAME = "metrics.json"


# --------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------


@dataclass
class RecogniserData:
    images: np.ndarray  # (N, H, W, 3) uint8
    labels: np.ndarray  # (N,) int64 class index
    identities: list[str]  # per row
    train_idx: np.ndarray
    heldout_idx: np.ndarray
    classes: list[str]
    path: Path | None = None
    note: str = ""
    groups: dict[str, str] | None = None  # identity label: class -> subgroup
    styles: list[str] | None = None  # per row: its art style


def make_data(images: np.ndarray, meta: Sequence[dict[str, Any]], *, label: str = "subgroup",
              classes: Sequence[str] | None = None, path: Path | None = None,
              holdout_style: str | None = None) -> RecogniserData:
    """Arrays + meta rows (``split``, ``identity``, ``style`` and the label field) → :class:`RecogniserData`.

    Rows without a label are dropped. ``classes`` defaults to the sorted label
    names present in the rows. The held-out rows are the meta's ``heldout``
    split, or with ``holdout_style`` the rows of that art style whose label
    also occurs in another style (training uses every other row); with
    ``holdout_style="none"`` every row trains and nothing is held out.
    """
    images = np.asarray(images)
    if images.dtype != np.uint8 or images.ndim != 4 or images.shape[-1] != 3:
        raise TrainingError(f"images: expected (N, H, W, 3) uint8, got {images.shape} {images.dtype}")
    if len(meta) != len(images):
        raise TrainingError(f"{len(meta)} meta rows but {len(images)} images")
    keep = [i for i, m in enumerate(meta) if m.get(label)]
    if classes is None:
        classes = sorted({meta[i][label] for i in keep})
    classes = list(classes)
    index = {c: j for j, c in enumerate(classes)}
    unknown = sorted({meta[i][label] for i in keep} - set(index))
    if unknown:
        raise TrainingError(f"labels not among the classes: {', '.join(unknown[:5])}")
    labels = np.full(len(meta), -1, dtype=np.int64)
    for i in keep:
        labels[i] = index[meta[i][label]]
    has = labels >= 0
    note = ""
    if holdout_style is None:
        splits = np.array([str(m.get("split")) for m in meta])
        train_idx = np.flatnonzero((splits == "train") & has)
        held_idx = np.flatnonzero((splits == "heldout") & has)
    elif holdout_style == "none":
        train_idx, held_idx = np.flatnonzero(has), np.zeros(0, dtype=np.int64)
    elif holdout_style.startswith("pairs:"):
        held = _held_pairs(meta, labels, holdout_style)
        train_idx, held_idx = np.flatnonzero(~held & has), np.flatnonzero(held & has)
    else:
        styles = np.array([str(m.get("style") or m.get("vendor")) for m in meta])
        if holdout_style not in set(styles.tolist()):
            raise TrainingError(f"--holdout-style {holdout_style!r}: no such style in the data "
                             f"(styles: {', '.join(sorted(set(styles.tolist())))})")
        held = styles == holdout_style
        train_idx = np.flatnonzero(~held & has)
        seen = set(labels[train_idx].tolist())
        held_idx = np.flatnonzero(held & has & np.isin(labels, sorted(seen)))
        dropped = int((held & has).sum()) - len(held_idx)
        if dropped:
            note = f"{dropped} {holdout_style} images of labels no other style has are not scored"
    if len(train_idx) == 0:
        raise TrainingError("no labelled rows to train on")
    if len(held_idx) == 0 and holdout_style != "none":
        note = "no held-out rows: held-out metrics are not available"
    groups = None
    if label == "identity":
        groups = {}
        for i in keep:
            groups.setdefault(meta[i][label], str(meta[i].get("subgroup") or "unknown"))
        groups = {c: groups[c] for c in classes if c in groups}
        if len(groups) != len(classes):
            raise TrainingError("identity classes without rows: pass classes that occur in the data")
    identities = [str(m.get("identity") or m.get("name") or i) for i, m in enumerate(meta)]
    styles = [str(m.get("style") or m.get("vendor")) for m in meta]
    return RecogniserData(images=images, labels=labels, identities=identities, train_idx=train_idx,
                          heldout_idx=held_idx, classes=classes, path=path, note=note, groups=groups,
                          styles=styles)


def _held_pairs(meta: Sequence[dict[str, Any]], labels: np.ndarray, spec: str) -> np.ndarray:
    """``pairs:N[:SEED]``: every rendering of N (label, art style) pairs, drawn at random among the labels
    that have art in at least two styles, so each held-out picture is an emoji the recogniser knows from
    other art but never saw drawn this way: leave-one-set-out per picture, across every set."""
    parts = spec.split(":")
    try:
        n, seed = int(parts[1]), int(parts[2]) if len(parts) > 2 else 0
    except (IndexError, ValueError):
        raise TrainingError(f"--holdout-style {spec!r}: expected pairs:N or pairs:N:SEED") from None
    styles = [str(m.get("style") or m.get("vendor")) for m in meta]
    by_label: dict[int, set[str]] = {}
    for lab, st in zip(labels.tolist(), styles):
        if lab >= 0:
            by_label.setdefault(lab, set()).add(st)
    pairs = sorted((lab, st) for lab, sts in by_label.items() if len(sts) >= 2 for st in sts)
    if n < 1 or n > len(pairs) // 2:
        raise TrainingError(f"--holdout-style {spec!r}: N must be in [1, {len(pairs) // 2}]")
    rng = np.random.default_rng(seed)
    chosen: set[tuple[int, str]] = set()
    per_label: dict[int, int] = {}
    for j in rng.permutation(len(pairs)).tolist():  # never all of one label's styles
        lab, st = pairs[j]
        if per_label.get(lab, 0) + 1 < len(by_label[lab]):
            chosen.add((lab, st))
            per_label[lab] = per_label.get(lab, 0) + 1
            if len(chosen) == n:
                break
    return np.array([(lab, st) in chosen for lab, st in zip(labels.tolist(), styles)])


def load_recogniser_data(data_dir: str | os.PathLike, *, label: str = "subgroup",
                         holdout_style: str | None = None) -> RecogniserData:
    """Load a dataset folder built by ``lantern-studio train data`` (or one in its layout)."""
    try:
        images, meta, _manifest = load_dataset(data_dir)
    except DatasetError as e:
        raise TrainingError(str(e)) from None
    except FileNotFoundError as e:
        raise TrainingError(f"{data_dir}: incomplete dataset ({e})") from None
    return make_data(images, meta, label=label, path=Path(data_dir), holdout_style=holdout_style)


def _kernel_blur() -> torch.Tensor:
    k = torch.tensor([1.0, 2.0, 1.0])
    k = torch.outer(k, k)
    return (k / k.sum()).expand(3, 1, 3, 3).contiguous()


_BLUR = _kernel_blur()


#: side lengths a --scale-prob image is squeezed to (as a fraction of its size) before scaling back
_SCALES = (0.375, 0.5, 0.625, 0.75)


def augment(x: torch.Tensor, gen: torch.Generator, *, shift: int = 3, jitter: float = 0.15,
            blur_prob: float = 0.2, scale_prob: float = 0.0, noise: float = 0.0) -> torch.Tensor:
    """Training augmentation of (B, 3, H, W) in [-1, 1]; white (1.0) stays white
    (except for ``noise``).

    shift: per-image translation by up to ±shift px, filled with white.
    jitter: the ink (1 − x) is scaled by U[1 − j, 1 + j] per image and by
        U[1 − j/2, 1 + j/2] per channel (brightness / tint / saturation-ish).
    blur_prob: chance of a 3×3 [1 2 1]² blur per image.
    scale_prob: chance of a down-scale (antialiased, to 3/8 .. 3/4 of the side)
        and bilinear up-scale back per image: detail lost the way a coarse
        token grid loses it.
    noise: half the images get Gaussian noise of std U[0, noise] (in [-1, 1]
        units), clamped to the range.
    """
    b, _, h, w = x.shape
    if shift > 0:
        s = shift
        padded = F.pad(x, (s, s, s, s), value=1.0)
        off = torch.randint(0, 2 * s + 1, (b, 2), generator=gen).tolist()
        x = torch.stack([padded[i, :, oy:oy + h, ox:ox + w] for i, (oy, ox) in enumerate(off)])
    if jitter > 0:
        g = 1.0 + jitter * (2 * torch.rand(b, 1, 1, 1, generator=gen) - 1)
        c = 1.0 + 0.5 * jitter * (2 * torch.rand(b, 3, 1, 1, generator=gen) - 1)
        ink = (1.0 - x) * 0.5  # in [0, 1]
        x = 1.0 - 2.0 * (ink * g * c).clamp_(0.0, 1.0)
    if blur_prob > 0:
        m = torch.rand(b, generator=gen) < blur_prob
        if bool(m.any()):
            xb = F.conv2d(F.pad(x[m], (1, 1, 1, 1), mode="replicate"), _BLUR, groups=3)
            x = x.clone()
            x[m] = xb
    if scale_prob > 0:
        m = torch.rand(b, generator=gen) < scale_prob
        which = torch.randint(0, len(_SCALES), (b,), generator=gen)
        if bool(m.any()):
            x = x.clone()
            for j, f in enumerate(_SCALES):
                sel = m & (which == j)
                if bool(sel.any()):
                    small = F.interpolate(x[sel], scale_factor=f, mode="bilinear", antialias=True,
                                          align_corners=False)
                    x[sel] = F.interpolate(small, size=(h, w), mode="bilinear", align_corners=False).clamp_(-1, 1)
    if noise > 0:
        on = (torch.rand(b, 1, 1, 1, generator=gen) < 0.5).float()
        std = noise * torch.rand(b, 1, 1, 1, generator=gen) * on
        x = (x + std * torch.randn(x.shape, generator=gen)).clamp_(-1.0, 1.0)
    return x.contiguous()


# --------------------------------------------------------------------------
# evaluation
# --------------------------------------------------------------------------


@torch.no_grad()
def evaluate(model: RecogniserNet, data: RecogniserData, idx: np.ndarray, *, batch_size: int = 128) -> dict[str, Any]:
    """Top-1 / top-5 accuracy on rows ``idx`` (no augmentation), per image and per identity.

    ``*_identity`` metrics average each identity's accuracy first, so emoji with
    many renderings (skin tones) count once. An identity judge (``groups`` in
    its config) also gets ``subgroup_top5``: its probabilities summed per subgroup.
    """
    groups = model.config.groups if model.config.label == "identity" else None
    if len(idx) == 0:
        return {"n_images": 0, "n_identities": 0, "top1": None, "top5": None,
                "top1_identity": None, "top5_identity": None, "loss": None,
                **({"subgroup_top5": None} if groups else {})}
    pool = target_group = None
    if groups:
        _names, pool = subgroup_pool(model.config.classes, groups)
        target_group = pool.argmax(dim=1)  # each identity class's subgroup column
    hit_sg = []
    was_training = model.training
    model.eval()
    k = min(5, model.config.num_classes)
    hit1, hit5, losses = [], [], []
    size = model.config.image_size
    for i in range(0, len(idx), batch_size):
        rows = idx[i:i + batch_size]
        x = to_input(data.images[rows], size)
        y = torch.from_numpy(data.labels[rows])
        logits = model(x)
        losses.append(F.cross_entropy(logits, y, reduction="sum").item())
        top = logits.topk(k, dim=1).indices
        hit1.append((top[:, 0] == y).numpy())
        hit5.append((top == y[:, None]).any(dim=1).numpy())
        if pool is not None:
            pg = torch.softmax(logits.float(), dim=1) @ pool
            want = target_group[y]
            rank = (pg > pg.gather(1, want[:, None])).sum(dim=1)
            hit_sg.append((rank < min(5, pool.shape[1])).numpy())
    model.train(was_training)
    h1, h5 = np.concatenate(hit1), np.concatenate(hit5)
    ids = [data.identities[r] for r in idx]
    per_id: dict[str, list[int]] = {}
    for j, ident in enumerate(ids):
        per_id.setdefault(ident, []).append(j)
    t1_id = float(np.mean([h1[js].mean() for js in per_id.values()]))
    t5_id = float(np.mean([h5[js].mean() for js in per_id.values()]))
    extra = {"subgroup_top5": float(np.concatenate(hit_sg).mean())} if pool is not None else {}
    return {
        **extra,
        "n_images": int(len(idx)),
        "n_identities": len(per_id),
        "top1": float(h1.mean()),
        "top5": float(h5.mean()),
        "top1_identity": t1_id,
        "top5_identity": t5_id,
        "loss": float(sum(losses) / len(idx)),
    }


# --------------------------------------------------------------------------
# training
# --------------------------------------------------------------------------


def _init_from(model: RecogniserNet, path) -> str:
    """Start ``model`` from a recogniser file's weights: every tensor of the same name and shape, and the class
    head's rows by class name (classes new to ``model`` keep their fresh rows) → what was carried."""
    try:
        sd, config = load_weights(path, kind="recogniser")
    except CheckpointError as e:
        raise TrainingError(f"--init-from: {e}") from None
    old = list((config or {}).get("classes") or [])
    own = model.state_dict()
    carried, rows = 0, 0
    with torch.no_grad():
        for name, t in sd.items():
            if name in ("head.weight", "head.bias") and name in own:
                for j, c in enumerate(model.config.classes):
                    if c in old and old.index(c) < t.shape[0]:
                        own[name][j] = t[old.index(c)].to(own[name].dtype)
                        rows += name == "head.bias"
            elif name in own and own[name].shape == t.shape:
                own[name].copy_(t.to(own[name].dtype))
                carried += 1
    model.load_state_dict(own)
    return f"{carried} tensors, head rows of {rows} of {len(model.config.classes)} classes"


def write_heldout_sheet(data: RecogniserData, png: Path, cols: int = 16) -> int:
    """One picture of every held-out (label, art style) pair — its first rendering — tiled on a lossless
    PNG, with ``png``'s ``.json`` listing each picture's label and style in order: real art the recogniser
    never saw, for a test of the shipped meter. → the number of pictures."""
    seen: dict[tuple[int, str], int] = {}
    styles = data.styles if data.styles is not None else ["?"] * len(data.identities)
    for i in data.heldout_idx.tolist():
        seen.setdefault((int(data.labels[i]), styles[i]), i)
    rows = sorted(seen.values())
    h, w = data.images.shape[1:3]
    grid = np.full((-(-len(rows) // cols) * h, cols * w, 3), 255, np.uint8)
    for j, i in enumerate(rows):
        r, c = divmod(j, cols)
        grid[r * h:(r + 1) * h, c * w:(c + 1) * w] = data.images[i]
    png.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(grid).save(png)
    listing = [{"label": data.classes[int(data.labels[i])], "style": styles[i]} for i in rows]
    _atomic_write_text(png.with_suffix(".json"), json.dumps({"size": h, "cols": cols, "pictures": listing}) + "\n")
    return len(rows)


def _sample_weights(data: RecogniserData, balance: str) -> torch.Tensor:
    """Per-train-row sampling weight: uniform per image, or per identity."""
    n = len(data.train_idx)
    if balance == "image":
        return torch.ones(n, dtype=torch.float64)
    counts: dict[str, int] = {}
    for r in data.train_idx:
        counts[data.identities[r]] = counts.get(data.identities[r], 0) + 1
    return torch.tensor([1.0 / counts[data.identities[r]] for r in data.train_idx], dtype=torch.float64)


class _Trainer:
    """The recogniser's trainer on the one loop driver (:mod:`.loop`): set up or resume, step, export."""

    kind = "recogniser"

    def __init__(self, args: argparse.Namespace, data: RecogniserData, log: Callable[[str], None]):
        self.a = args
        self.data = data
        self.log = log

    def setup(self, resumed: dict | None) -> None:
        a = self.a
        classes = list(self.data.classes) + ([NONE] if a.negatives > 0 else [])
        groups = ({**self.data.groups, NONE: NONE} if a.negatives > 0 else self.data.groups) if self.data.groups else None
        if resumed is not None:
            self.cfg = RecogniserConfig.from_dict(json.loads(resumed["extra"]["config"]))
            if self.cfg.classes != classes:
                raise TrainingError(f"{Path(a.run) / CHECKPOINT_NAME}: trained on other classes than this dataset's "
                                 f"({self.cfg.num_classes} vs {len(classes)}); pass another --run")
        else:
            self.cfg = RecogniserConfig(
                classes=classes,
                image_size=int(self.data.images.shape[1]),
                stem=a.stem, widths=list(a.widths), feature_dim=a.feature_dim, dropout=a.dropout,
                label=a.label, groups=groups,
            )
        torch.manual_seed(a.seed)
        self.model = RecogniserNet(self.cfg)
        if resumed is None and a.init_from:
            self.log(f"init from {a.init_from}: {_init_from(self.model, a.init_from)}")
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=a.lr, weight_decay=a.weight_decay)
        self.gen = torch.Generator().manual_seed(a.seed)
        self.weights = _sample_weights(self.data, a.balance)
        self.views, self.view_labels = self._vq_views()
        self.step = 0
        self.model.train()

    def _vq_views(self) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The art through each ``--vq-views`` tokenizer (made once, kept in the run folder)."""
        a = self.a
        if not a.vq_views:
            return None, None
        cache = Path(a.run) / "vq_views.npz"
        rows = balanced_rows(self.data.identities, self.data.train_idx, a.vq_views_images, a.seed)
        if cache.exists():
            z = np.load(cache)
            if np.array_equal(z["rows"], np.tile(rows, len(a.vq_views))):
                return z["images"], self.data.labels[z["rows"]]
        self.log(f"vq views: {len(rows)} images through {len(a.vq_views)} tokenizer(s)")
        images = make_views(self.data.images[rows], a.vq_views, seed=a.seed, log=self.log)
        all_rows = np.tile(rows, len(a.vq_views))
        tmp = cache.with_suffix(".tmp.npz")
        np.savez(tmp, images=images, rows=all_rows)
        os.replace(tmp, cache)
        return images, self.data.labels[all_rows]

    def extra_state(self) -> dict[str, Any]:
        return {"config": json.dumps(self.cfg.to_dict())}

    def load_extra_state(self, extra: dict[str, Any]) -> None:
        pass  # the config was read before the model was built (setup)

    def train_step(self) -> dict[str, float]:
        a = self.a
        lr = _lr_at(self.step, a.steps, a.lr, a.warmup, a.min_lr_ratio)
        n_views = int(round(a.batch * a.vq_share)) if self.views is not None else 0
        pick = torch.multinomial(self.weights, a.batch - n_views, replacement=True, generator=self.gen).numpy()
        rows = self.data.train_idx[pick]
        images, labels = self.data.images[rows], self.data.labels[rows]
        if n_views:
            v = torch.randint(0, len(self.views), (n_views,), generator=self.gen).numpy()
            images, labels = np.concatenate([images, self.views[v]]), np.concatenate([labels, self.view_labels[v]])
        x = to_input(images, self.cfg.image_size)
        y = torch.from_numpy(labels)
        broken = torch.rand(len(x), generator=self.gen) < a.negatives
        if int(broken.sum()) >= 2:  # pictures no person would name: the NONE class
            x[broken] = break_pictures(x[broken], self.gen)
            y[broken] = self.cfg.classes.index(NONE)
        hard = torch.rand(len(x), generator=self.gen) < a.degrade
        x = augment(x, self.gen, shift=a.shift, jitter=a.jitter, blur_prob=a.blur_prob,
                    scale_prob=a.scale_prob, noise=a.noise)
        if bool(hard.any()):
            x[hard] = degrade(x[hard], self.gen)
        logits = self.model(x)
        loss = F.cross_entropy(logits, y, label_smoothing=a.label_smoothing)
        optimizer_step(self.opt, loss, self.model.parameters(), lr=lr, clip=a.grad_clip)
        self.step += 1
        acc = (logits.argmax(1) == y).float().mean().item()
        return {"loss": loss.item(), "acc": acc, "lr": lr}

    def _train_eval_idx(self) -> np.ndarray:
        """A fixed subset of train rows for the (un-augmented) train accuracy."""
        n = self.a.train_eval_images
        idx = self.data.train_idx
        if len(idx) <= n:
            return idx
        rng = np.random.default_rng(1234)
        return np.sort(rng.choice(idx, size=n, replace=False))

    def evaluate_all(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "heldout": evaluate(self.model, self.data, self.data.heldout_idx, batch_size=self.a.eval_batch),
            "train": evaluate(self.model, self.data, self._train_eval_idx(), batch_size=self.a.eval_batch),
        }

    def evaluate(self) -> tuple[dict[str, Any], str]:
        ev = self.evaluate_all()
        self.model.train()
        row = {"heldout_top1": ev["heldout"]["top1"], "heldout_top5": ev["heldout"]["top5"],
               "train_top1": ev["train"]["top1"]}
        return row, self._fmt(ev)

    def _fmt(self, ev: dict[str, Any]) -> str:
        h, t = ev["heldout"], ev["train"]
        if h["top1"] is None:
            held = "held-out n/a"
        else:
            held = (f"held-out top-1 {100 * h['top1']:.1f}% top-5 {100 * h['top5']:.1f}% "
                    f"(per identity {100 * h['top1_identity']:.1f}% / {100 * h['top5_identity']:.1f}%)")
            if h.get("subgroup_top5") is not None:
                held += f", subgroup top-5 {100 * h['subgroup_top5']:.1f}%"
        return f"{held}; train top-1 {100 * t['top1']:.1f}%"

    def tokenizer_ceiling(self) -> dict[str, Any]:
        """The same held-out metrics on the images after a round trip through the
        tokenizer ``--vq-ceiling`` (encode, decode): what a perfect AR model could
        score through that tokenizer. Up to ``--vq-ceiling-images`` rows, spread evenly."""
        idx = self.data.heldout_idx
        n = min(len(idx), self.a.vq_ceiling_images)
        if n == 0:
            return {}
        pick = idx[np.linspace(0, len(idx) - 1, n).round().astype(int)]
        vq = load_vq(self.a.vq_ceiling)
        recon = []
        with torch.no_grad():
            for s in range(0, n, 64):
                x = to_input(self.data.images[pick[s:s + 64]], self.cfg.image_size)
                y = vq.decode_codes(vq.encode(x)).float().clamp(-1, 1)
                recon.append(((y + 1) * 127.5).round().to(torch.uint8).permute(0, 2, 3, 1).numpy())
        d = self.data
        view = RecogniserData(images=np.concatenate(recon), labels=d.labels[pick], identities=[d.identities[i] for i in pick],
                              train_idx=np.zeros(0, dtype=np.int64), heldout_idx=np.arange(n), classes=d.classes,
                              groups=d.groups)
        ev = evaluate(self.model, view, view.heldout_idx, batch_size=self.a.eval_batch)
        return {"images": n, "tokenizer": str(self.a.vq_ceiling), "top1": ev["top1"], "top5": ev["top5"],
                "subgroup_top5": ev.get("subgroup_top5"),
                "real_same_images": evaluate(self.model, d, pick, batch_size=self.a.eval_batch)}

    def export(self, out: Path, history: list, wall: float) -> dict[str, Any]:
        ev = self.evaluate_all()
        h, t = ev["heldout"], ev["train"]
        metrics = {
            "label": self.cfg.label,
            "num_classes": self.cfg.num_classes,
            "heldout_top1": h["top1"],
            "heldout_top5": h["top5"],
            "heldout_top1_identity": h["top1_identity"],
            "heldout_top5_identity": h["top5_identity"],
            "heldout_loss": h["loss"],
            "heldout_subgroup_top5": h.get("subgroup_top5"),
            "holdout": ("style " + self.a.holdout_style) if self.a.holdout_style else "identity split",
            "heldout_images": h["n_images"],
            "heldout_identities": h["n_identities"],
            "heldout_classes_present": int(len(set(self.data.labels[self.data.heldout_idx].tolist()))),
            "train_top1": t["top1"],
            "train_top5": t["top5"],
            "train_eval_images": t["n_images"],
            "train_images": int(len(self.data.train_idx)),
            "steps": self.step,
            "target_steps": int(self.a.steps),
            "complete": self.step >= self.a.steps,
            "wall_seconds": round(wall, 1),
            "params": self.model.num_params(),
            "batch": int(self.a.batch),
            "balance": self.a.balance,
            "augment": {"shift": self.a.shift, "jitter": self.a.jitter, "blur_prob": self.a.blur_prob,
                        "scale_prob": self.a.scale_prob, "noise": self.a.noise, "degrade": self.a.degrade,
                        "negatives": self.a.negatives, "init_from": str(self.a.init_from) if self.a.init_from else None,
                        "vq_views": [str(p) for p in self.a.vq_views or []],
                        "vq_views_images": self.a.vq_views_images, "vq_share": self.a.vq_share},
            "threads": int(self.a.threads),
            "data": str(self.data.path) if self.data.path else None,
            "config": {k: v for k, v in self.cfg.to_dict().items() if k not in ("classes", "groups")},
            "history": history,
        }
        if getattr(self.a, "vq_ceiling", None):
            metrics["tokenizer_ceiling"] = tc = self.tokenizer_ceiling()
            if tc:
                self.log(f"through the tokenizer ({tc['images']} held-out images): top-1 {100 * tc['top1']:.1f}% "
                         f"top-5 {100 * tc['top5']:.1f}% (the same images unchanged: "
                         f"{100 * tc['real_same_images']['top5']:.1f}% top-5)")
        info = {"steps": self.step, "heldout_top1": h["top1"], "heldout_top5": h["top5"],
                "train_top1": t["top1"], "data": metrics["data"]}
        save_recogniser(self.model, out, dtype=torch.float16, extra=info)
        metrics["weights"] = str(out)
        metrics["weights_bytes"] = out.stat().st_size
        _atomic_write_text(Path(self.a.run) / METRICS_NAME, json.dumps(metrics, indent=2) + "\n")
        self.log(f"exported {out} (fp16, {out.stat().st_size / 1e6:.2f} MB) at step {self.step}: "
                 f"{self._fmt(ev)}; metrics in {Path(self.a.run) / METRICS_NAME}")
        if self.a.heldout_sheet:
            n = write_heldout_sheet(self.data, Path(self.a.heldout_sheet))
            self.log(f"held-out art: {n} pictures in {self.a.heldout_sheet} (+ .json)")
        for folder in self.a.into or []:
            try:
                install_recogniser(folder, out)
            except CheckpointError as e:
                raise TrainingError(f"train recogniser --into: {e}") from None
            self.log(f"installed into {folder} (its meter calibration was dropped: recalibrate before shipping)")
        return metrics


# --------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------


def _widths(text: str) -> list[int]:
    try:
        ws = [int(p) for p in text.split(",") if p.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not ws or min(ws) < 1:
        raise argparse.ArgumentTypeError(f"expected positive widths, got {text!r}")
    return ws


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``lantern-studio train recogniser``."""
    g = parser.add_argument_group("data and run")
    g.add_argument("--data", type=Path, default=None,
                   help="dataset folder with images.npy + meta.jsonl + manifest.json "
                        "(default: the `train data` output folder)")
    g.add_argument("--run", type=Path, default=None,
                   help="run folder for the checkpoint, log and metrics; re-running resumes "
                        "(default: <runs dir>/recogniser)")
    g.add_argument("--out", type=Path, default=None,
                   help=f"where to write the fp16 recogniser (default: <run>/{WEIGHTS_NAME})")
    g.add_argument("--into", action="append", default=None, metavar="FOLDER",
                   help="also install the export into this model folder (repeat for several)")
    g.add_argument("--heldout-sheet", type=Path, default=None, metavar="PNG",
                   help="at export, also write one picture of every held-out pair on a sheet (+ .json) for tests")
    g.add_argument("--export", action="store_true",
                   help="don't train: export the checkpoint's weights and metrics now")
    g.add_argument("--label", choices=["subgroup", "identity"], default="subgroup",
                   help="what the classes are: emoji subgroups (default) or identities (the judge)")
    g.add_argument("--holdout-style", default=None, metavar="STYLE",
                   help="hold out one art style's images instead of the identity split "
                        "(the leave-one-style-out ceiling); 'none': train on every image")

    loop_arguments(parser.add_argument_group("the loop"), LoopDefaults(
        steps=1200, batch=64, lr=2e-3, warmup=50, threads=1, log_every=25, eval_every=500, stop_after=True))

    g = parser.add_argument_group("optimisation")
    g.add_argument("--min-lr-ratio", type=float, default=0.02, help="cosine floor as a fraction of --lr")
    g.add_argument("--weight-decay", type=float, default=0.05)
    g.add_argument("--grad-clip", type=float, default=2.0)
    g.add_argument("--label-smoothing", type=float, default=0.1)
    g.add_argument("--vq-ceiling", type=Path, default=None, metavar="VQ",
                   help="at export, also score held-out images after a round trip through this tokenizer "
                        "(what a perfect AR model could reach through it)")
    g.add_argument("--vq-ceiling-images", type=int, default=512, help="held-out images for --vq-ceiling (512)")
    g.add_argument("--balance", choices=["identity", "image"], default="identity",
                   help="sample each emoji identity equally (default) or each image equally")
    g.add_argument("--shift", type=int, default=3, help="max random shift in px, white fill (default: 3)")
    g.add_argument("--jitter", type=float, default=0.15, help="colour jitter strength (default: 0.15)")
    g.add_argument("--blur-prob", type=float, default=0.2, help="chance of a light blur per image (default: 0.2)")
    g.add_argument("--scale-prob", type=float, default=0.0,
                   help="chance of a down/up-scale per image, to 3/8..3/4 of the side and back (default: 0)")
    g.add_argument("--degrade", type=float, default=0.0, metavar="SHARE",
                   help="share of each batch degraded the way decoded pictures look (training/degradations.py); "
                        "0.85 for the quality meter (default: 0)")
    g.add_argument("--negatives", type=float, default=0.0, metavar="SHARE",
                   help="share of each batch made of broken pictures (training/degradations.break_pictures) taught "
                        "as the class '(none)': the meter then says when a picture shows nothing (default: 0)")
    g.add_argument("--init-from", type=Path, default=None, metavar="RECOGNISER",
                   help="new runs: start from a recogniser file's weights (head rows matched by class name)")
    g.add_argument("--vq-views", type=Path, action="append", default=None, metavar="VQ",
                   help="a tokenizer (vq.safetensors) to pass art through for views the way its decoder draws "
                        "them (training/vq_views.py); repeat for several")
    g.add_argument("--vq-views-images", type=int, default=4000, metavar="N",
                   help="identity-balanced art images per --vq-views tokenizer (default: 4000)")
    g.add_argument("--vq-share", type=float, default=0.3, metavar="SHARE",
                   help="share of each batch drawn from the --vq-views views (default: 0.3)")
    g.add_argument("--noise", type=float, default=0.0,
                   help="max std of Gaussian pixel noise on half the images, [-1, 1] units (default: 0)")

    g = parser.add_argument_group("architecture (new runs only)")
    g.add_argument("--stem", type=int, default=32, help="stem channels (default: 32)")
    g.add_argument("--widths", type=_widths, default=[64, 128, 192],
                   help="channels of the stride-2 stages (default: 64,128,192)")
    g.add_argument("--feature-dim", type=int, default=128, help="feature vector size (default: 128)")
    g.add_argument("--dropout", type=float, default=0.1)

    g = parser.add_argument_group("machine and logging")
    g.add_argument("--eval-batch", type=int, default=128)
    g.add_argument("--train-eval-images", type=int, default=1000,
                   help="train images (fixed subset) for the reported train accuracy")


def _check_args(a: argparse.Namespace) -> None:
    check_loop_arguments(a)
    need(0 <= a.min_lr_ratio <= 1, "--min-lr-ratio", "in [0, 1]", a.min_lr_ratio)
    need(a.weight_decay >= 0, "--weight-decay", ">= 0", a.weight_decay)
    need(0 <= a.label_smoothing < 1, "--label-smoothing", "in [0, 1)", a.label_smoothing)
    need(0 <= a.shift <= 16, "--shift", "in [0, 16]", a.shift)
    need(0 <= a.jitter < 1, "--jitter", "in [0, 1)", a.jitter)
    need(0 <= a.blur_prob <= 1, "--blur-prob", "in [0, 1]", a.blur_prob)
    need(0 <= a.scale_prob <= 1, "--scale-prob", "in [0, 1]", a.scale_prob)
    need(0 <= a.noise <= 1, "--noise", "in [0, 1]", a.noise)
    need(0 <= a.degrade <= 1, "--degrade", "in [0, 1]", a.degrade)
    need(0 <= a.negatives < 1, "--negatives", "in [0, 1)", a.negatives)
    need(0 <= a.vq_share < 1, "--vq-share", "in [0, 1)", a.vq_share)
    need(a.vq_views_images >= 1, "--vq-views-images", ">= 1", a.vq_views_images)
    for vq in a.vq_views or []:
        need(Path(vq).is_file(), "--vq-views", "an existing vq.safetensors file", str(vq))
    need(a.stem >= 1, "--stem", ">= 1", a.stem)
    need(a.feature_dim >= 1, "--feature-dim", ">= 1", a.feature_dim)
    need(0 <= a.dropout < 1, "--dropout", "in [0, 1)", a.dropout)
    need(a.eval_batch >= 1, "--eval-batch", ">= 1", a.eval_batch)
    need(a.train_eval_images >= 1, "--train-eval-images", ">= 1", a.train_eval_images)


def _run(args: argparse.Namespace) -> Outcome:
    """Train (or resume, or ``--export``) the recogniser."""
    a = args
    a.data = Path(a.data) if a.data else default_out_dir()
    a.run = Path(a.run) if a.run else paths.runs_dir() / "recogniser"
    out = Path(a.out) if a.out else a.run / WEIGHTS_NAME

    _check_args(a)
    log = run_log(a.run)

    def build(resumed):
        trainer = _Trainer(a, load_recogniser_data(a.data, label=a.label, holdout_style=a.holdout_style), log)
        trainer.setup(resumed)
        return trainer

    def describe(t: "_Trainer") -> str:
        d = t.data
        return (f"training recogniser ({t.cfg.label}, {t.cfg.num_classes} classes): "
                f"{t.model.num_params() / 1e6:.2f} M params, {len(d.train_idx)} train / "
                f"{len(d.heldout_idx)} held-out images"
                + (f" (style {a.holdout_style})" if a.holdout_style else "")
                + (f" [{d.note}]" if d.note else "")
                + f", batch {a.batch}, {a.balance}-balanced, "
                f"{a.threads} thread(s), step {t.step} -> {a.steps}; run folder {a.run}")

    plan = Plan(kind=_Trainer.kind, settings=LoopSettings.from_args(a), out=out, log=log, folder=a.run,
                threads=a.threads, export_only=a.export)
    return run_trainer(plan, build, describe)


train, run, main = entry_points("train recogniser", __doc__, add_arguments, _run)


if __name__ == "__main__":
    sys.exit(main())
