"""The quality recogniser's inference side: the small CNN that tells an emoji's
subgroup (or, as the identity-level judge, which emoji it is), its input
convention and its weights file.

A recogniser's ``label`` is ``subgroup`` (classes are emojibase subgroups such
as ``animal-mammal``) or ``identity`` (classes are emoji identities such as
``1F436``; ``groups`` maps each to its subgroup, so the same network also
answers at the subgroup level by summing its identities' probabilities).

A model folder ships ``recogniser.safetensors``; :class:`Recogniser` reads it
and scores images (class probabilities, penultimate features). The studio's
per-image quality (models/quality.py) and the bench's metrics (eval/metrics.py)
use it; ``lantern-studio train recogniser`` (training/recogniser.py) trains the
network defined here. See docs/architecture.md for why it lives in models.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from ..engine.checkpoints import CheckpointError, load_state_strict, load_weights, save_weights

KIND = "recogniser"
ARCH = "lantern-recogniser-cnn-v1"
#: what a recogniser's classes are
LABELS = ("subgroup", "identity")
#: the class of a picture that shows no emoji (a meter trained with ``--negatives`` has it)
NONE = "(none)"


# --------------------------------------------------------------------------
# network
# --------------------------------------------------------------------------


@dataclass
class RecogniserConfig:
    """Architecture and labels; stored as JSON in the weights file's metadata."""

    classes: list[str]
    image_size: int = 64
    stem: int = 32
    widths: list[int] = field(default_factory=lambda: [64, 128, 192])
    feature_dim: int = 128
    dropout: float = 0.1
    label: str = "subgroup"
    arch: str = ARCH
    #: identity recognisers: class -> subgroup (every class), for subgroup-level answers
    groups: dict[str, str] | None = None

    @property
    def num_classes(self) -> int:
        return len(self.classes)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["num_classes"] = self.num_classes
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "RecogniserConfig":
        if not isinstance(d, dict):
            raise ValueError("recogniser config must be a JSON object")
        if d.get("arch", ARCH) != ARCH:
            raise ValueError(f"unknown recogniser architecture {d.get('arch')!r} (this version reads {ARCH!r})")
        classes = d.get("classes")
        if not isinstance(classes, list) or not classes or not all(isinstance(c, str) for c in classes):
            raise ValueError("recogniser config: 'classes' must be a non-empty list of names")
        if len(set(classes)) != len(classes):
            raise ValueError("recogniser config: 'classes' has duplicates")
        known = {"classes", "image_size", "stem", "widths", "feature_dim", "dropout", "label", "arch", "groups"}
        kw = {k: v for k, v in d.items() if k in known}
        if kw.get("label", "subgroup") not in LABELS:
            raise ValueError(f"recogniser config: label {kw.get('label')!r} is not one of {', '.join(LABELS)}")
        groups = kw.get("groups")
        if groups is not None:
            if (not isinstance(groups, dict) or set(groups) != set(classes)
                    or not all(isinstance(v, str) and v for v in groups.values())):
                raise ValueError("recogniser config: 'groups' must map every class to a subgroup name")
        cfg = cls(**kw)
        cfg.widths = [int(w) for w in cfg.widths]
        if cfg.image_size < 8 or cfg.stem < 1 or not cfg.widths or min(cfg.widths) < 1 or cfg.feature_dim < 1:
            raise ValueError(f"recogniser config: bad sizes {kw}")
        return cfg


class _Stage(nn.Module):
    """Strided conv (downsample) + one residual 3×3 conv, BatchNorm + ReLU."""

    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.down = nn.Conv2d(cin, cout, 3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = F.relu(self.bn1(self.down(x)))
        return F.relu(a + self.bn2(self.conv(a)))


class RecogniserNet(nn.Module):
    """(B, 3, S, S) float in [-1, 1] → logits (B, C); ``features`` → (B, feature_dim)."""

    def __init__(self, config: RecogniserConfig):
        super().__init__()
        self.config = config
        self.stem = nn.Sequential(
            nn.Conv2d(3, config.stem, 3, stride=2, padding=1, bias=False),
            nn.BatchNorm2d(config.stem),
            nn.ReLU(inplace=True),
        )
        chans = [config.stem, *config.widths]
        self.stages = nn.Sequential(*[_Stage(a, b) for a, b in zip(chans[:-1], chans[1:])])
        self.feature = nn.Linear(chans[-1], config.feature_dim)
        self.dropout = nn.Dropout(config.dropout)
        self.head = nn.Linear(config.feature_dim, config.num_classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """Penultimate features (pre-activation output of the feature layer)."""
        h = self.stages(self.stem(x))
        return self.feature(h.mean(dim=(2, 3)))

    def forward(self, x: torch.Tensor, return_features: bool = False):
        f = self.features(x)
        logits = self.head(self.dropout(F.relu(f)))
        return (logits, f) if return_features else logits

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())


def to_input(images: np.ndarray | torch.Tensor, image_size: int = 64) -> torch.Tensor:
    """(B, H, W, 3) or (H, W, 3) uint8 → (B, 3, image_size, image_size) float in [-1, 1].

    Other sizes are resized with antialiasing (e.g. 256×256 LlamaGen output).
    """
    if isinstance(images, torch.Tensor):
        t = images.detach().cpu()
    else:
        arr = np.asarray(images)
        if arr.dtype != np.uint8:
            raise ValueError(f"images: expected uint8 pixels, got {arr.dtype}")
        t = torch.from_numpy(np.ascontiguousarray(arr))
    if t.dtype != torch.uint8:
        raise ValueError(f"images: expected uint8 pixels, got {t.dtype}")
    if t.ndim == 3:
        t = t.unsqueeze(0)
    if t.ndim != 4 or t.shape[-1] != 3:
        raise ValueError(f"images: expected (B, H, W, 3) or (H, W, 3) uint8, got shape {tuple(t.shape)}")
    x = t.permute(0, 3, 1, 2).float().div_(127.5).sub_(1.0)
    if x.shape[-2:] != (image_size, image_size):
        x = F.interpolate(x, size=(image_size, image_size), mode="bilinear", antialias=True,
                          align_corners=False).clamp_(-1.0, 1.0)
    return x.contiguous()


# --------------------------------------------------------------------------
# weights
# --------------------------------------------------------------------------


def save_recogniser(model: RecogniserNet, path: str | os.PathLike, dtype: torch.dtype | None = torch.float16,
                    extra: dict[str, Any] | None = None) -> None:
    """fp16 safetensors, kind ``recogniser``, config (+ ``extra``) as JSON metadata."""
    config = model.config.to_dict()
    if extra:
        config["info"] = extra
    save_weights(model, path, config, kind=KIND, dtype=dtype)


def load_recogniser_net(path: str | os.PathLike) -> tuple[RecogniserNet, dict[str, Any]]:
    """→ (network in eval mode, fp32; the stored config dict)."""
    sd, config = load_weights(path, kind=KIND)
    try:
        cfg = RecogniserConfig.from_dict(config)
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"{path}: bad recogniser configuration ({e})") from None
    net = RecogniserNet(cfg)
    load_state_strict(net, sd, path)
    return net.eval(), config


# --------------------------------------------------------------------------
# inference
# --------------------------------------------------------------------------


def subgroup_pool(classes: list[str], groups: dict[str, str]) -> tuple[list[str], torch.Tensor]:
    """→ (sorted subgroup names, (C, G) 0/1 matrix): ``probs @ pool`` sums each subgroup's identity probabilities."""
    names = sorted(set(groups.values()))
    at = {g: j for j, g in enumerate(names)}
    pool = torch.zeros(len(classes), len(names))
    pool[torch.arange(len(classes)), torch.tensor([at[groups[c]] for c in classes])] = 1.0
    return names, pool


class Recogniser:
    """A trained recogniser (subgroup-level, or the identity-level judge).
    Inference only, CPU by default, fp32.

    Images are uint8 ``(B, H, W, 3)`` (or one ``(H, W, 3)``) on white; sizes
    other than the trained one (64) are resized with antialiasing.

    ``level`` arguments pick what the answers are about: ``None`` (the
    network's own classes), ``"identity"`` (identity judges only) or
    ``"subgroup"`` (every recogniser: an identity judge sums the probabilities
    of each subgroup's identities).
    """

    def __init__(self, net: "torch.nn.Module", config: dict[str, Any], path: Path | None = None,
                 device: str | torch.device = "cpu"):
        self.net = net.eval().to(device)
        self.config = config
        self.path = path
        self.device = torch.device(device)
        self.label: str = str(net.config.label)
        self.classes: list[str] = list(net.config.classes)
        self.index: dict[str, int] = {c: i for i, c in enumerate(self.classes)}
        self.feature_dim: int = int(net.config.feature_dim)
        self.image_size: int = int(net.config.image_size)
        groups = net.config.groups if self.label == "identity" else None
        self._levels: dict[str, tuple[list[str], dict[str, int]]] = {self.label: (self.classes, self.index)}
        self._pool: torch.Tensor | None = None  # (C, G) 0/1: identity class -> its subgroup
        if groups:
            names, self._pool = subgroup_pool(self.classes, groups)
            self._levels["subgroup"] = (names, {g: j for j, g in enumerate(names)})

    @classmethod
    def load(cls, path: str | os.PathLike, device: str | torch.device = "cpu") -> "Recogniser":
        """Read a ``recogniser.safetensors`` file (raises CheckpointError naming the file)."""
        net, config = load_recogniser_net(path)
        return cls(net, config, Path(path), device)

    @property
    def num_classes(self) -> int:
        return len(self.classes)

    @property
    def levels(self) -> tuple[str, ...]:
        """The levels this recogniser answers at (its label first)."""
        return tuple(self._levels)

    def _level(self, level: str | None) -> tuple[list[str], dict[str, int]]:
        try:
            return self._levels[level or self.label]
        except KeyError:
            raise ValueError(f"this recogniser answers at the {' and '.join(self.levels)} level, "
                             f"not {level!r}") from None

    def classes_at(self, level: str | None = None) -> list[str]:
        return list(self._level(level)[0])

    def class_index(self, name: str, level: str | None = None) -> int:
        names, index = self._level(level)
        try:
            return index[name]
        except KeyError:
            raise ValueError(f"{level or self.label} {name!r} is not one of the recogniser's "
                             f"{len(names)} classes") from None

    def _at(self, probs: torch.Tensor, level: str | None) -> torch.Tensor:
        self._level(level)
        if (level or self.label) == self.label:
            return probs
        return probs @ self._pool

    @torch.no_grad()
    def _run(self, images, batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        arr = images if isinstance(images, torch.Tensor) else np.asarray(images)
        if arr.ndim == 3:
            arr = arr[None]
        if len(arr) == 0:
            return torch.zeros(0, self.num_classes), torch.zeros(0, self.feature_dim)
        probs, feats = [], []
        for i in range(0, len(arr), batch_size):
            x = to_input(arr[i:i + batch_size], self.image_size).to(self.device)
            logits, f = self.net(x, return_features=True)
            probs.append(torch.softmax(logits.float(), dim=1).cpu())
            feats.append(f.float().cpu())
        return torch.cat(probs), torch.cat(feats)

    def predict(self, images, batch_size: int = 128, level: str | None = None) -> np.ndarray:
        """→ class probabilities, (B, C) float32, columns in :meth:`classes_at` order."""
        return self._at(self._run(images, batch_size)[0], level).numpy()

    def features(self, images, batch_size: int = 128) -> np.ndarray:
        """→ penultimate features, (B, feature_dim) float32 (for Fréchet distances)."""
        return self._run(images, batch_size)[1].numpy()

    def top_k(self, images, k: int = 5, level: str | None = None) -> list[list[tuple[str, float]]]:
        """Per image, the ``k`` most likely classes (at ``level``) with their probabilities."""
        probs = self.predict(images, level=level)
        names = self.classes_at(level)
        k = max(1, min(k, len(names)))
        order = np.argsort(-probs, axis=1)[:, :k]
        return [[(names[j], float(p[j])) for j in row] for p, row in zip(probs, order)]


# ----------------------------------------------------------------- ranking images by what they were asked for
# (the judge's scores: the bench's fidelity columns and the training run's validation samples)


def _wanted(labels: Sequence, n: int) -> list[list[str] | None]:
    if len(labels) != n:
        raise ValueError(f"labels: {len(labels)} labels for {n} images")
    return [[s] if isinstance(s, str) else (list(s) if s else None) for s in labels]


def wanted_ranks(recogniser: Recogniser, images, labels: Sequence, level: str = "subgroup") -> list[int | None]:
    """Per image, the best rank (0 = the recogniser's first choice) among its wanted
    classes at ``level``; None where ``labels[i]`` is None. See :func:`top_k_hits`."""
    arr = images if isinstance(images, torch.Tensor) else np.asarray(images)
    if arr.ndim == 3:
        arr = arr[None]
    wanted = _wanted(labels, len(arr))
    keep = [i for i, s in enumerate(wanted) if s]
    out: list[int | None] = [None] * len(arr)
    if not keep:
        return out
    probs = recogniser.predict(arr[keep] if isinstance(arr, np.ndarray) else arr[torch.as_tensor(keep)],
                               level=level)
    for row, i in enumerate(keep):
        # Rank of a wanted class = number of classes with a strictly higher probability.
        out[i] = min(int((probs[row] > probs[row, recogniser.class_index(w, level)]).sum()) for w in wanted[i])
    return out


def top_k_hits(recogniser: Recogniser, images, labels: Sequence, ks: Sequence[int] = (5,),
               level: str = "subgroup") -> dict[int, float]:
    """For each k in ``ks``: the fraction of images with one of their wanted
    classes (at ``level``) among the recogniser's top k.

    ``labels[i]`` is the class image ``i`` was asked for, or a list any of
    which counts as right, or None (left out). ``k`` is capped at the number
    of classes. Raises ValueError if no image has a label or a name is not a
    class at that level.
    """
    if not ks or min(ks) < 1:
        raise ValueError(f"k={list(ks)}: must be >= 1")
    ranks = [r for r in wanted_ranks(recogniser, images, labels, level) if r is not None]
    if not ranks:
        raise ValueError(f"no image has a known {level}")
    best, n_classes = np.array(ranks), len(recogniser.classes_at(level))
    return {k: float(np.mean(best < min(k, n_classes))) for k in ks}
