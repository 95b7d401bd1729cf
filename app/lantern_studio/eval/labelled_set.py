"""Ground truth from looking: the bundled models' own pictures, each marked right or wrong by a person.

The quality meter is checked against this set, never trained on it. It is made in two steps:

1. ``python -m lantern_studio.eval.labelled_set render --out DIR`` draws :data:`PROMPTS` (written the
   way people type) on both bundled models with each of :data:`SAMPLINGS` (vanilla, LANTERN at the
   default and up to δ 1, a looser temperature), one seed each, and writes ``pictures.png`` (every
   picture on one lossless sheet, in row order), ``pictures.json`` (per picture: its sha256 over the
   raw pixels, prompt, model, sampling, seed, the emoji the prompt was matched to: ``asked``) and ``contact-N.png``
   sheets with each picture's number and prompt under it, for a person to judge.
2. A person looks at the contact sheets and writes ``labels.json``: ``{picture sha256: true | false}``,
   true when the picture shows what the prompt asked (a person would name it so), false otherwise.

:func:`load` reads the set back (checking every picture's hash; a picture drawn twice — a confident model
draws some seeds alike — counts once); :func:`auc` and :func:`rank_one_share` are what the meter is held to.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
from PIL import Image, ImageDraw

from ..models import load_pipeline

#: prompts as people type them (not the models' common prompts)
PROMPTS = (
    "a happy dog", "cat", "an octopus", "pizza slice", "red heart", "a cup of hot coffee",
    "the sun", "a rainbow", "birthday cake", "rocket", "a frog", "four leaf clover",
    "a ghost", "sunflower", "thumbs up", "an apple", "a car", "a penguin", "snowman",
    "an owl", "a guitar", "fire", "a banana", "a crown",
)

#: (name, setting changes) — vanilla at the model's defaults, LANTERN at the default and larger δ,
#: vanilla at a looser temperature
SAMPLINGS = (
    ("vanilla", {"drafter": "none"}),
    ("lantern d0.2", {"drafter": "jacobi", "k": 64, "delta": 0.2}),
    ("lantern d0.5", {"drafter": "jacobi", "k": 64, "delta": 0.5}),
    ("lantern d1", {"drafter": "jacobi", "k": 64, "delta": 1.0}),
    ("vanilla T1", {"drafter": "none", "temperature": 1.0, "top_k": 0}),
)
MODELS = ("emoji-64", "emoji-64-v5")
SEED_BASE = 100


def picture_hash(image: np.ndarray) -> str:
    """sha256 of a picture's raw uint8 pixels, shape prefixed (the set's key)."""
    a = np.ascontiguousarray(image, dtype=np.uint8)
    return hashlib.sha256(f"{a.shape}".encode() + a.tobytes()).hexdigest()


def sheet(images: Sequence[np.ndarray], cols: int = 16) -> np.ndarray:
    """Pictures tiled row-major on one (rows·H, cols·W, 3) array, white where none."""
    h, w = images[0].shape[:2]
    rows = -(-len(images) // cols)
    out = np.full((rows * h, cols * w, 3), 255, np.uint8)
    for i, im in enumerate(images):
        r, c = divmod(i, cols)
        out[r * h:(r + 1) * h, c * w:(c + 1) * w] = im
    return out


def unsheet(array: np.ndarray, n: int, size: int = 64, cols: int = 16) -> list[np.ndarray]:
    """The inverse of :func:`sheet` for ``n`` pictures of ``size``."""
    return [np.ascontiguousarray(array[(i // cols) * size:(i // cols + 1) * size,
                                       (i % cols) * size:(i % cols + 1) * size]) for i in range(n)]


def contact_sheets(images: Sequence[np.ndarray], captions: Sequence[str], per_sheet: int = 48, cols: int = 8,
                   scale: int = 2) -> list[Image.Image]:
    """Sheets for a person to judge: each picture enlarged ``scale``× with its caption under it."""
    cell_w, cell_h = 64 * scale + 8, 64 * scale + 30
    out = []
    for s in range(0, len(images), per_sheet):
        chunk = list(range(s, min(s + per_sheet, len(images))))
        rows = -(-len(chunk) // cols)
        page = Image.new("RGB", (cols * cell_w, rows * cell_h), "white")
        draw = ImageDraw.Draw(page)
        for j, i in enumerate(chunk):
            r, c = divmod(j, cols)
            x, y = c * cell_w + 4, r * cell_h + 2
            page.paste(Image.fromarray(images[i]).resize((64 * scale, 64 * scale), Image.NEAREST), (x, y))
            text = captions[i]
            draw.text((x, y + 64 * scale + 1), text[:22], fill="black")
            if len(text) > 22:
                draw.text((x, y + 64 * scale + 13), text[22:44], fill="black")
        out.append(page)
    return out


def render(out: Path, models: Sequence[str] = MODELS, prompts: Sequence[str] = PROMPTS,
           samplings=SAMPLINGS) -> list[dict]:
    """Draw the set (see the module docstring) into ``out``; → the picture rows."""
    out.mkdir(parents=True, exist_ok=True)
    rows, images = [], []
    for model in models:
        pipe = load_pipeline(model)
        for si, (name, change) in enumerate(samplings):
            for pi, prompt in enumerate(prompts):
                seed = SEED_BASE + 1000 * si + pi
                s = pipe.defaults.with_(seed=seed, **change)
                result = pipe.generate(prompt, s)
                image = np.asarray(result.image, dtype=np.uint8)
                m = pipe.conditioner.match(prompt, s.style, seed)
                rows.append({"index": len(rows), "sha256": picture_hash(image), "prompt": prompt, "model": model,
                             "sampling": name, "seed": seed, "settings": change, "matched": result.note,
                             "asked": pipe.conditioner.identities[m.identity]["identity"]})
                images.append(image)
                print(f"[{len(rows)}] {model} {name} {prompt!r}", file=sys.stderr)
    Image.fromarray(sheet(images)).save(out / "pictures.png")
    (out / "pictures.json").write_text(json.dumps(rows, indent=1) + "\n")
    captions = [f"{r['index']} {r['prompt']}" for r in rows]
    for n, page in enumerate(contact_sheets(images, captions)):
        page.save(out / f"contact-{n}.png")
    return rows


@dataclass
class LabelledSet:
    rows: list[dict]  # pictures.json's rows, each with "right": bool
    images: list[np.ndarray]

    @property
    def right(self) -> np.ndarray:
        return np.array([bool(r["right"]) for r in self.rows])

    def set_hash(self) -> str:
        """One hash over every picture's hash and its label, in order (what the tests pin)."""
        h = hashlib.sha256()
        for r in self.rows:
            h.update(f"{r['sha256']}:{int(bool(r['right']))}\n".encode())
        return h.hexdigest()


class LabelledSetError(ValueError):
    pass


def load(folder: Path) -> LabelledSet:
    """Read ``pictures.png``, ``pictures.json`` and ``labels.json``; every picture's hash is checked and
    every picture must carry a label."""
    folder = Path(folder)
    rows = json.loads((folder / "pictures.json").read_text())
    labels = json.loads((folder / "labels.json").read_text())
    images = unsheet(np.asarray(Image.open(folder / "pictures.png").convert("RGB")), len(rows))
    keep, seen = [], set()
    for i, (r, im) in enumerate(zip(rows, images)):
        if picture_hash(im) != r["sha256"]:
            raise LabelledSetError(f"picture {r['index']} ({r['prompt']!r}) does not match its hash")
        if r["sha256"] not in labels:
            raise LabelledSetError(f"picture {r['index']} ({r['prompt']!r}) has no label")
        r["right"] = bool(labels[r["sha256"]])
        if (r["sha256"], r["model"], r["asked"]) not in seen:  # a confident model draws some seeds alike
            seen.add((r["sha256"], r["model"], r["asked"]))
            keep.append(i)
    return LabelledSet([rows[i] for i in keep], [images[i] for i in keep])


def auc(scores: Sequence[float], right: Sequence[bool]) -> float:
    """Area under the ROC curve of ``scores`` separating right (positive) from wrong pictures: the
    chance a random right picture scores above a random wrong one (ties count half)."""
    s, y = np.asarray(scores, dtype=np.float64), np.asarray(right, dtype=bool)
    pos, neg = s[y], s[~y]
    if len(pos) == 0 or len(neg) == 0:
        raise ValueError("auc: needs both right and wrong pictures")
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(greater / (len(pos) * len(neg)))


def rank_one_share(ranks: Sequence[int], right: Sequence[bool]) -> float:
    """On the pictures marked right, the share whose asked emoji the meter ranks first (rank 1)."""
    r, y = np.asarray(ranks), np.asarray(right, dtype=bool)
    return float((r[y] == 1).mean())


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lantern_studio.eval.labelled_set", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("render", help="draw the pictures and the contact sheets")
    r.add_argument("--out", type=Path, required=True)
    a = p.parse_args(argv)
    if a.cmd == "render":
        rows = render(a.out)
        print(f"{len(rows)} pictures in {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
