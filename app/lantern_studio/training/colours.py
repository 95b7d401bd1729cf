"""How well a tokenizer keeps each colour: ``lantern-studio train colours``.

Every picture a model draws goes through the tokenizer's codes, so a colour the codebook cannot hold is lost
before the AR model is asked anything (the shipped tokenizer draws the teal and green broccoli blue and brown).
The measurement encodes and decodes a sample of dataset pictures and sorts them by the main hue of their drawn
(non-white) pixels: for each hue, how far the colours move (mean absolute RGB error) and how many pictures come
back with their hue shifted by more than 30°. Then, per 4×4 patch (one token's area), whether a hue has codes of
its own: a patch whose code mostly encodes another hue decodes as that hue, and a decoder fine-tune cannot tell
the two apart again (the codes are the same).
"""

from __future__ import annotations

import argparse
import colorsys

import numpy as np
import torch

from ..engine.pipeline import to_uint8
from ..engine.tokenizer import load_vq
from ..paths import data_dir
from .ar_rows import tokenize_images
from .errors import command
from .sample import dataset_sample

#: hue families by 60° sectors centred on the primaries (red 330–30°, …); "grey" below SATURATED saturation
HUES = ("red", "orange/yellow", "green", "cyan/teal", "blue", "purple/pink")
SATURATED = 0.25
WHITE = 700  # r + g + b above this is the background
SHIFTED = 30.0  # degrees of hue a picture may move before it counts as another colour


def hue_of(rgb: np.ndarray) -> tuple[float, float]:
    """(hue in degrees, saturation) of a mean colour (3,) in 0–255."""
    h, s, _v = colorsys.rgb_to_hsv(*(np.asarray(rgb, dtype=np.float64) / 255.0))
    return h * 360.0, s


def hue_family(rgb: np.ndarray) -> str:
    h, s = hue_of(rgb)
    return "grey" if s < SATURATED else HUES[int(((h + 30.0) % 360.0) // 60.0)]


def drawn_pixels(picture: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """A picture's pixels (H·W, 3) as floats and the mask of its drawn (non-white) ones; None when fewer than 16
    are drawn (a blank picture has no main hue)."""
    px = picture.reshape(-1, 3).astype(np.float64)
    drawn = px.sum(1) < WHITE
    return (px, drawn) if drawn.sum() >= 16 else None


def picture_families(images: np.ndarray) -> list[str]:
    """The hue family of each picture's drawn pixels (N, H, W, 3) uint8; "blank" when nothing is drawn."""
    out = []
    for picture in images:
        d = drawn_pixels(picture)
        out.append("blank" if d is None else hue_family(d[0][d[1]].mean(0)))
    return out


def hue_balance(families: list[str], alpha: float) -> np.ndarray:
    """Sampling weights (summing to 1) that draw a picture of hue family f in proportion to count(f)^(1-alpha):
    alpha 0 samples the data as it is, 1 each family equally often (a rare green as often as the common red)."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha {alpha}: must be in [0, 1]")
    _names, inverse, counts = np.unique(np.asarray(families), return_inverse=True, return_counts=True)
    w = counts[inverse].astype(np.float64) ** -alpha
    return w / w.sum()


def colour_whitening(images: np.ndarray, every: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """The data's colour axes and a loss's weight along each: principal axes of the drawn pixels' colours
    (in [-1, 1], every ``every``-th picture) → (W (3, 3), spread (3,)) where W's rows are the axes, each scaled by
    sqrt(largest spread / its spread). An error measured through W weighs a colour direction the data hardly
    varies along (emoji: green against magenta, a twentieth of the brightness axis's variance) as much as
    brightness, so a tokenizer cannot buy its PSNR by drawing that direction as its mean (green turns grey)."""
    px = images[::every].reshape(-1, 3).astype(np.float64)
    px = px[px.sum(1) < WHITE] / 127.5 - 1.0
    if len(px) < 3:
        raise ValueError("colour whitening: fewer than 3 drawn pixels in the images")
    spread, axes = np.linalg.eigh(np.cov(px.T))
    spread = np.clip(spread, 1e-6, None)
    return (np.sqrt(spread.max() / spread)[:, None] * axes.T), spread


def hue_fidelity(originals: np.ndarray, decoded: np.ndarray) -> dict[str, dict]:
    """Pictures (N, H, W, 3) uint8 and their round trip: per hue family of the original's drawn pixels, the
    pictures (n), their mean absolute RGB error, median hue shift and share shifted by more than 30°."""
    if originals.shape != decoded.shape:
        raise ValueError(f"originals {originals.shape} and decoded {decoded.shape} differ in shape")
    out: dict[str, list] = {}
    for o, d in zip(originals, decoded):
        seen = drawn_pixels(o)
        if seen is None:
            continue
        px_o, drawn = seen
        px_d = d.reshape(-1, 3).astype(np.float64)
        mean_o, mean_d = px_o[drawn].mean(0), px_d[drawn].mean(0)
        shift = abs((hue_of(mean_d)[0] - hue_of(mean_o)[0] + 180.0) % 360.0 - 180.0)
        out.setdefault(hue_family(mean_o), []).append((np.abs(px_o[drawn] - px_d[drawn]).mean(), shift))
    return {k: {"n": len(v), "rgb_error": float(np.mean([e for e, _ in v])),
                "median_shift": float(np.median([s for _, s in v])),
                "shifted": float(np.mean([s > SHIFTED for _, s in v]))} for k, v in out.items()}


def own_codes(originals: np.ndarray, codes: np.ndarray) -> dict[str, dict]:
    """Per hue family of 4×4 patches (one token's area; white and grey patches left out): its patches, the codes
    they use, and the share of its patches whose code encodes mostly (a plurality of its coloured patches) this
    family. A family with few such patches has no codes of its own: it decodes as its neighbours' colour."""
    n, gh, gw = codes.shape
    f = originals.shape[1] // gh
    patch = originals.astype(np.float64).reshape(n, gh, f, gw, f, 3).mean((2, 4)).reshape(-1, 3)
    flat = codes.reshape(-1).tolist()
    fam = ["white" if p.sum() >= WHITE else hue_family(p) for p in patch]
    counts: dict[int, dict] = {}
    for c, k in zip(flat, fam):
        if k in HUES:
            counts.setdefault(c, {}).setdefault(k, 0)
            counts[c][k] += 1
    major = {c: max(v, key=v.get) for c, v in counts.items()}
    out = {}
    for k in HUES:
        mine = [c for c, kk in zip(flat, fam) if kk == k]
        if mine:
            out[k] = {"patches": len(mine), "codes": len(set(mine)),
                      "own": float(np.mean([major[c] == k for c in mine]))}
    return out


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--vq", required=True, help="the tokenizer (vq.safetensors)")
    p.add_argument("--data", default=str(data_dir() / "emoji64"))
    p.add_argument("--images", type=int, default=512, help="dataset images sampled (default 512)")
    p.add_argument("--seed", type=int, default=0)


@command
def run(args) -> int:
    sample = dataset_sample(args.data, args.images, args.seed, "train colours", 8192)
    vq = load_vq(args.vq).float()
    codes = tokenize_images(vq, sample, log=lambda *a: None).long()
    with torch.no_grad():
        decoded = np.concatenate([to_uint8(vq.decode_codes(codes[i:i + 128])) for i in range(0, len(codes), 128)])
    pictures, patches = hue_fidelity(sample, decoded), own_codes(sample, codes.numpy())
    print(f"{len(sample)} dataset images (seed {args.seed}) encoded and decoded by {args.vq}")
    print(f"| main hue | pictures | mean RGB error | median hue shift | shifted > {SHIFTED:g}° | 4×4 patches | "
          "their codes | patches whose code is mostly this hue |")
    print("|---|---|---|---|---|---|---|---|")
    for k in (*HUES, "grey"):
        if k not in pictures and k not in patches:
            continue
        a, b = pictures.get(k), patches.get(k)
        left = (f"{a['n']} | {a['rgb_error']:.1f} | {a['median_shift']:.0f}° | {100 * a['shifted']:.0f} %" if a
                else "0 | — | — | —")
        right = f"{b['patches']} | {b['codes']} | {100 * b['own']:.0f} %" if b else "— | — | —"
        print(f"| {k} | {left} | {right} |")
    return 0
