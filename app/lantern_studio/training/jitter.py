"""Jittered copies: the same picture, a quarter of its tokens moved to latent neighbours.

A model taught one clean token sequence per picture is nearly one-hot: LANTERN's relaxation has
no neighbour mass within δ to move, and seeds draw the same picture. Real image models are
ambiguous among neighbouring codes because imperceptibly different pictures tokenize to
neighbouring codes. Copies of each training image with such changes teach that ambiguity:

* ``global``: one change per picture — brightness and contrast of the drawing (white stays white),
  saturation, a light sharpen or soften. Correlated changes across the picture.
* ``pixel``: light independent noise on the drawing's pixels (σ 2–5 of 255). Local changes, so a
  sample that mixes copies stays inside what was taught.

Neither moves a pixel: structure is kept (no shift, scale or rotation — those garbled model v3).
Pure-white background stays pure white in both, so backgrounds stay clean.
``lantern-studio train jitter`` measures what a kind does to the tokens (the share that change and
how many land within the k nearest codes) on a sample of dataset images.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np
import torch

from ..engine.tokenizer import load_vq
from ..paths import data_dir
from .errors import TrainingError, command
from .sample import dataset_sample

KINDS = ("global", "pixel")
#: the strengths each kind draws from, uniformly; recorded with the prepared data and the model card
STRENGTHS = {
    "global": {"brightness": 0.05, "contrast": 0.05, "saturation": 0.10, "sharpen": 0.30},
    "pixel": {"sigma_min": 2.0, "sigma_max": 5.0},
}
WHITE = 250  # a pixel with every channel at or above this is background


@dataclass(frozen=True)
class Jitter:
    """``copies`` jittered copies of every image, of one ``kind``, drawn from ``seed``."""

    kind: str
    copies: int
    seed: int = 0

    def __post_init__(self):
        if self.kind not in KINDS:
            raise TrainingError(f"jitter: kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if not 1 <= self.copies <= 16:
            raise TrainingError(f"jitter: copies must be in [1, 16], got {self.copies}")

    def key(self) -> dict:
        """What the prepared data's cache key records (kind, copies, seed, strengths)."""
        return {"kind": self.kind, "copies": self.copies, "seed": self.seed, "strengths": STRENGTHS[self.kind]}

    def copy(self, images: np.ndarray, index: int) -> np.ndarray:
        """Copy ``index`` (0-based) of (N, H, W, 3) uint8 ``images``: the same pixels' places, new values."""
        rng = np.random.default_rng([self.seed, index])
        return jitter_images(images, self.kind, rng)


def _foreground(img: np.ndarray) -> np.ndarray:
    """(N, H, W, 1) bool: pixels that are not white background."""
    return (img < WHITE).any(axis=-1, keepdims=True)


def _box_blur(x: np.ndarray) -> np.ndarray:
    """A 3×3 mean of (N, H, W, C) float images (edges repeated)."""
    p = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)), mode="edge")
    h, w = x.shape[1:3]
    return sum(p[:, dy:dy + h, dx:dx + w] for dy in range(3) for dx in range(3)) / 9.0


def jitter_images(images: np.ndarray, kind: str, rng: np.random.Generator) -> np.ndarray:
    """(N, H, W, 3) uint8 → the same shape, each image changed by one draw of ``kind``."""
    x = images.astype(np.float32)
    n = len(x)
    fg = _foreground(images)
    if kind == "pixel":
        s = STRENGTHS["pixel"]
        sigma = rng.uniform(s["sigma_min"], s["sigma_max"], (n, 1, 1, 1))
        out = x + rng.standard_normal(x.shape).astype(np.float32) * sigma
    elif kind == "global":
        s = STRENGTHS["global"]

        def u(span):
            return rng.uniform(-span, span, (n, 1, 1, 1)).astype(np.float32)

        grey = x.mean(axis=-1, keepdims=True)
        out = grey + (x - grey) * (1 + u(s["saturation"]))  # saturation
        out = 255 - (255 - out) * (1 + u(s["brightness"]))  # darker or lighter ink, white stays white
        mean = (out * fg).sum(axis=(1, 2, 3), keepdims=True) / np.maximum(fg.sum(axis=(1, 2, 3), keepdims=True) * 3, 1)
        out = mean + (out - mean) * (1 + u(s["contrast"]))  # contrast about the drawing's mean
        out = out + (out - _box_blur(out)) * u(s["sharpen"])  # sharpen (> 0) or soften (< 0)
    else:
        raise TrainingError(f"jitter: kind must be one of {', '.join(KINDS)}, got {kind!r}")
    out = np.where(fg, out, x)  # background untouched
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


@torch.no_grad()
def token_moves(vq, images: np.ndarray, jittered: np.ndarray, ks=(8, 64, 256), batch: int = 128) -> dict:
    """How the tokens of ``jittered`` differ from those of ``images``: the share that change and, of
    those, the share whose new code is within the original code's k nearest codes, for each k."""
    def encode(a):
        return torch.cat([vq.encode(torch.from_numpy(a[s:s + batch]).permute(0, 3, 1, 2).float() / 127.5 - 1)
                          for s in range(0, len(a), batch)]).flatten()

    a, b = encode(images), encode(jittered)
    book = vq.codebook().float()
    d = torch.cdist(book, book)
    d.fill_diagonal_(float("inf"))
    order = d.argsort(dim=1)  # nearest other codes first
    moved = a != b
    out = {"tokens": int(a.numel()), "changed": float(moved.float().mean())}
    if moved.any():
        rank = (order[a[moved]] == b[moved][:, None]).float().argmax(dim=1)
        for k in ks:
            out[f"within_{k}"] = float((rank < k).float().mean())
    return out


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--vq", required=True, help="the tokenizer (vq.safetensors)")
    p.add_argument("--data", default=str(data_dir() / "emoji64"))
    p.add_argument("--images", type=int, default=64, help="dataset images sampled (default 64)")
    p.add_argument("--kinds", default="global,pixel", help="comma-separated kinds (default global,pixel)")
    p.add_argument("--seed", type=int, default=0)


@command
def run(args) -> int:
    sample = dataset_sample(args.data, args.images, args.seed, "train jitter", 4096)
    vq = load_vq(args.vq)
    print(f"{len(sample)} dataset images (seed {args.seed}), one copy of each kind")
    print("| kind | strengths | tokens that change | within 8 / 64 / 256 nearest codes |")
    print("|---|---|---|---|")
    for kind in [k.strip() for k in args.kinds.split(",") if k.strip()]:
        moves = token_moves(vq, sample, Jitter(kind, 1, args.seed).copy(sample, 0))
        within = " / ".join(f"{100 * moves.get(f'within_{k}', 0.0):.1f}" for k in (8, 64, 256))
        strengths = ", ".join(f"{n} {v:g}" for n, v in STRENGTHS[kind].items())
        print(f"| {kind} | {strengths} | {100 * moves['changed']:.1f} % | {within} % |")
    return 0
