"""What a decoded picture looks like next to clean art: the recogniser's training degradations.

A meter that judges *generated* pictures must be trained on real art that looks the way a
VQ decoder draws it: soft, a little off-centre, blotched where a token went wrong, with
less detail than the art. :func:`degrade` turns a batch of clean art into such pictures,
each image getting a random subset of:

* geometry: shift (±``shift`` px), scale (``scale`` range) and rotation (±``rotate``°),
  filled with white;
* photometry: brightness and contrast of the ink (1 − x), white stays white;
* blotches: up to ``blotches`` soft discs of a random colour, blended in (the colour
  slips a wrong token leaves);
* blur: a Gaussian of σ up to ``blur_sigma`` px;
* coarse detail: down-scaled to ``down`` px (16–32 of 64) and back, antialiased;
* noise: Gaussian, std up to ``noise`` (in [-1, 1] units);
* JPEG: re-encoded at a quality in ``jpeg`` (20–90).

All randomness comes from the generator passed in, so a seeded run repeats. The real
decoder's look (art passed through the bundled tokenizers, tokens nudged to latent
neighbours) is :mod:`.vq_views`; which of these matter was measured on the labelled set of
the models' own pictures (docs/results.md, "the quality meter").
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

from ..models.recogniser import NONE

__all__ = ["Degradations", "STEPS", "BREAKS", "NONE", "degrade", "break_pictures"]


@dataclass(frozen=True)
class Degradations:
    """How hard :func:`degrade` hits an image (each one applied to half the images it touches)."""

    shift: int = 6
    scale: tuple[float, float] = (0.8, 1.15)
    rotate: float = 8.0
    contrast: float = 0.3
    blotches: int = 3
    blur_sigma: float = 2.0
    down: tuple[int, int] = (16, 32)
    noise: float = 0.12
    jpeg: tuple[int, int] = (20, 90)


def _coin(b: int, gen: torch.Generator, p: float = 0.5) -> torch.Tensor:
    return torch.rand(b, generator=gen) < p


def _uniform(b: int, gen: torch.Generator, lo: float, hi: float) -> torch.Tensor:
    return lo + (hi - lo) * torch.rand(b, generator=gen)


def _geometry(x: torch.Tensor, gen: torch.Generator, d: Degradations) -> torch.Tensor:
    """Shift, scale and rotate with white fill: warp the ink (1 − x), whose fill is 0."""
    b, _, h, w = x.shape
    on = _coin(b, gen, 0.8)
    scale = torch.where(on, _uniform(b, gen, *d.scale), torch.ones(b))
    angle = torch.where(on, _uniform(b, gen, -d.rotate, d.rotate), torch.zeros(b)) * math.pi / 180
    shift = torch.where(on[:, None], _uniform(2 * b, gen, -d.shift, d.shift).view(b, 2), torch.zeros(b, 2))
    cos, sin = torch.cos(angle) / scale, torch.sin(angle) / scale
    theta = torch.stack([torch.stack([cos, -sin, -2 * shift[:, 0] / w], 1),
                         torch.stack([sin, cos, -2 * shift[:, 1] / h], 1)], 1)
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)
    ink = F.grid_sample(1.0 - x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
    return 1.0 - ink


def _photometry(x: torch.Tensor, gen: torch.Generator, d: Degradations) -> torch.Tensor:
    b = x.shape[0]
    gain = 1.0 + d.contrast * (2 * torch.rand(b, 1, 1, 1, generator=gen) - 1)
    tint = 1.0 + 0.5 * d.contrast * (2 * torch.rand(b, 3, 1, 1, generator=gen) - 1)
    ink = (1.0 - x) * 0.5
    return 1.0 - 2.0 * (ink * gain * tint).clamp(0.0, 1.0)


def _blotches(x: torch.Tensor, gen: torch.Generator, d: Degradations) -> torch.Tensor:
    b, _, h, w = x.shape
    yy, xx = torch.meshgrid(torch.arange(h, dtype=torch.float32), torch.arange(w, dtype=torch.float32),
                            indexing="ij")
    count = torch.randint(0, d.blotches + 1, (b,), generator=gen)
    out = x.clone()
    for j in range(d.blotches):
        on = (count > j).float().view(b, 1, 1, 1)
        cy, cx = _uniform(b, gen, 0, h), _uniform(b, gen, 0, w)
        r = _uniform(b, gen, 3, 10)
        alpha = _uniform(b, gen, 0.3, 0.9).view(b, 1, 1, 1) * on
        colour = (2 * torch.rand(b, 3, 1, 1, generator=gen) - 1)
        dist2 = (yy[None] - cy.view(b, 1, 1)) ** 2 + (xx[None] - cx.view(b, 1, 1)) ** 2
        mask = torch.exp(-dist2 / (2 * r.view(b, 1, 1) ** 2))[:, None]
        out = out * (1 - alpha * mask) + colour * alpha * mask
    return out


def _blur(x: torch.Tensor, gen: torch.Generator, d: Degradations) -> torch.Tensor:
    b = x.shape[0]
    out = x.clone()
    sigma = _uniform(b, gen, 0.5, d.blur_sigma)
    for i in range(b):
        s = float(sigma[i])
        r = max(1, int(math.ceil(2 * s)))
        t = torch.arange(-r, r + 1, dtype=torch.float32)
        k = torch.exp(-t ** 2 / (2 * s * s))
        k = k / k.sum()
        img = F.pad(x[i:i + 1], (r, r, r, r), mode="replicate")
        img = F.conv2d(img, k.view(1, 1, 1, -1).expand(3, 1, 1, -1), groups=3)
        out[i:i + 1] = F.conv2d(img, k.view(1, 1, -1, 1).expand(3, 1, -1, 1), groups=3)
    return out


def _coarse(x: torch.Tensor, gen: torch.Generator, d: Degradations) -> torch.Tensor:
    b, _, h, w = x.shape
    out = x.clone()
    sizes = torch.randint(d.down[0], d.down[1] + 1, (b,), generator=gen)
    for i in range(b):
        s = int(sizes[i])
        small = F.interpolate(x[i:i + 1], size=(s, s), mode="bilinear", antialias=True, align_corners=False)
        out[i:i + 1] = F.interpolate(small, size=(h, w), mode="bilinear", align_corners=False)
    return out


def _noise(x: torch.Tensor, gen: torch.Generator, d: Degradations) -> torch.Tensor:
    std = d.noise * torch.rand(x.shape[0], 1, 1, 1, generator=gen)
    return x + std * torch.randn(x.shape, generator=gen)


def _jpeg(x: torch.Tensor, gen: torch.Generator, d: Degradations) -> torch.Tensor:
    quality = torch.randint(d.jpeg[0], d.jpeg[1] + 1, (x.shape[0],), generator=gen).tolist()
    pixels = ((x.clamp(-1, 1) + 1) * 127.5).round().to(torch.uint8).permute(0, 2, 3, 1).numpy()
    out = []
    for img, q in zip(pixels, quality):
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, format="JPEG", quality=int(q))
        out.append(np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("RGB")))
    return torch.from_numpy(np.stack(out)).permute(0, 3, 1, 2).float().div(127.5).sub(1.0)


#: the steps in the order they are applied (geometry first, the encoder's losses last)
STEPS = (("geometry", _geometry), ("photometry", _photometry), ("blotches", _blotches), ("blur", _blur),
         ("coarse", _coarse), ("noise", _noise), ("jpeg", _jpeg))
#: the chance each step is applied to an image it is given
_CHANCE = {"geometry": 1.0, "photometry": 0.7, "blotches": 0.4, "blur": 0.4, "coarse": 0.4, "noise": 0.3,
           "jpeg": 0.3}


def degrade(x: torch.Tensor, gen: torch.Generator, d: Degradations = Degradations(),
            skip: frozenset[str] = frozenset()) -> torch.Tensor:
    """(B, 3, H, W) in [-1, 1] → the same batch degraded (each step on a random subset; ``skip``
    names steps left out, for measuring which matter)."""
    unknown = set(skip) - {name for name, _ in STEPS}
    if unknown:
        raise ValueError(f"unknown degradation {sorted(unknown)[0]!r}; known: {', '.join(n for n, _ in STEPS)}")
    x = x.float()
    for name, step in STEPS:
        if name in skip:
            continue
        m = _coin(x.shape[0], gen, _CHANCE[name])
        if bool(m.any()):
            x = x.clone()
            x[m] = step(x[m], gen, d)
    return x.clamp(-1.0, 1.0).contiguous()


# ----------------------------------------------------------------- pictures a person would not name
# The meter must also say when a picture shows nothing: colours right, shape gone — the way a derailed AR
# decode looks. :func:`break_pictures` makes such pictures from real art (the recogniser's NONE class),
# never from generated ones.

def _shuffle_patches(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Cut into a 4×4 or 8×8 grid and move at least half of the patches to each other's places."""
    b, c, h, w = x.shape
    out = x.clone()
    for i in range(b):
        g = 4 if bool(torch.rand(1, generator=gen) < 0.5) else 8
        ph, pw = h // g, w // g
        patches = out[i].unfold(1, ph, ph).unfold(2, pw, pw).reshape(c, g * g, ph, pw)
        n = g * g
        moved = torch.randperm(n, generator=gen)[: max(2, int(n * (0.5 + 0.5 * float(torch.rand(1, generator=gen)))))]
        order = torch.arange(n)
        order[moved] = moved[torch.randperm(len(moved), generator=gen)]
        patches = patches[:, order]
        out[i] = patches.reshape(c, g, g, ph, pw).permute(0, 1, 3, 2, 4).reshape(c, h, w)
    return out


def _melt(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """A strong smooth random warp (6–14 px): the shape melts, its colours stay."""
    b, _, h, w = x.shape
    coarse = torch.randn(b, 2, 5, 5, generator=gen)
    amp = (6 + 8 * torch.rand(b, 1, 1, 1, generator=gen)) * 2 / h
    flow = F.interpolate(coarse, size=(h, w), mode="bicubic", align_corners=False) * amp
    base = F.affine_grid(torch.eye(2, 3).expand(b, 2, 3), [b, 3, h, w], align_corners=False)
    grid = base + flow.permute(0, 2, 3, 1)
    return 1.0 - F.grid_sample(1.0 - x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)


def _chimera(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Two different pictures of the batch, joined along a soft random blob mask."""
    b, _, h, w = x.shape
    other = x[torch.roll(torch.arange(b), 1)]
    field = F.interpolate(torch.randn(b, 1, 4, 4, generator=gen), size=(h, w), mode="bicubic", align_corners=False)
    mask = torch.sigmoid(4 * field)
    return x * mask + other * (1 - mask)


BREAKS = (("shuffle", _shuffle_patches), ("melt", _melt), ("chimera", _chimera))


def break_pictures(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """(B, 3, H, W) real art in [-1, 1] → pictures whose subject no person would name (each image one of
    :data:`BREAKS`), for the NONE class. ``B`` ≥ 2 (a chimera needs a second picture)."""
    which = torch.randint(0, len(BREAKS), (x.shape[0],), generator=gen)
    out = x.clone()
    for j, (_name, step) in enumerate(BREAKS):
        m = which == j
        if bool(m.any()):
            out[m] = step(x, gen)[m] if _name == "chimera" else step(x[m], gen)
    return out.clamp(-1.0, 1.0).contiguous()
