"""Assemble the bundled model folder from trained runs, with its model card.

``lantern-studio train ship [--out resources/models/emoji-64] [--vq …] [--gpt …] [--eagle …] [--recogniser …]``

Writes fp16 safetensors for the tokenizer, AR model, drafter and recogniser,
the caption list (with each caption's subgroup) and its pooled sentence
vectors for the prompt → nearest-caption aid, the held-out prompts for the
benchmark, ``model.json`` with file hashes, a sample grid, and
``MODEL_CARD.md`` filled from the runs' ``metrics.json`` files.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np
import torch

from ..engine.checkpoints import load_gpt, load_weights, save_weights
from ..engine.settings import GenerationSettings
from ..engine.tokenizer import load_vq
from ..models import BUNDLED_NAME, bundled_dir
from ..models.local import load_eagle, save_model_dir, sha256_file
from ..paths import data_dir, runs_dir
from .ar import short_caption
from .common import write_json

GRID_PROMPTS = [
    "red heart", "grinning face", "red apple", "rocket", "snowman", "dog face", "smiling face with heart-eyes",
    "pile of poo", "thumbs up", "pizza", "sun with face", "frog", "birthday cake", "fire", "blue heart", "ghost",
]

DEFAULTS = GenerationSettings(temperature=1.0, top_k=0, top_p=1.0, cfg_scale=3.0, drafter="eagle", draft_length=6,
                              k=64, delta=0.1)


def _load_json(path: Path) -> dict:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError):
        return {}


def snap_files(folder: Path, meta: list, encoder) -> dict:
    """captions.json ([{caption, subgroup}] of training captions, short form) and
    their pooled vectors → the conditioning's ``snap`` entry."""
    from safetensors.torch import save_file

    seen, rows = set(), []
    for m in meta:
        if m["split"] != "train":
            continue
        c = short_caption(m["caption"])
        if c not in seen:
            seen.add(c)
            rows.append({"caption": c, "subgroup": m["subgroup"]})
    vecs = []
    for s in range(0, len(rows), 256):
        vecs.append(encoder.pooled([r["caption"] for r in rows[s : s + 256]]))
    (folder / "captions.json").write_text(json.dumps(rows, ensure_ascii=False, indent=0))
    save_file({"vectors": torch.cat(vecs).half().contiguous()}, str(folder / "caption_vectors.safetensors"))
    return {"captions": "captions.json", "vectors": "caption_vectors.safetensors"}


def heldout_prompts(meta: list) -> list:
    seen, out = set(), []
    for m in meta:
        if m["split"] == "heldout" and m["vendor"] == "google" and not m.get("skin_tone"):
            c = short_caption(m["caption"])
            if c not in seen:
                seen.add(c)
                out.append({"prompt": c, "subgroup": m["subgroup"], "identity": m["identity"]})
    return out


def sample_grid(pipe, prompts, seeds, settings, path: Path) -> float:
    from PIL import Image

    tiles, t0 = [], time.time()
    for seed in seeds:
        for p in prompts:
            tiles.append(pipe.generate(p, settings.with_(seed=seed)).image)
    n = len(prompts)
    rows = len(seeds)
    grid = np.full((rows * 66, n * 66, 3), 255, np.uint8)
    for i, t in enumerate(tiles):
        r, c = divmod(i, n)
        grid[r * 66 + 1 : r * 66 + 65, c * 66 + 1 : c * 66 + 65] = t
    Image.fromarray(grid).resize((grid.shape[1] * 2, grid.shape[0] * 2), Image.NEAREST).save(path)
    return time.time() - t0


def ship(args) -> dict:
    from ..engine.text import encoder_spec, make_text_encoder
    from .data import load_dataset

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    gpt = load_gpt(args.gpt)
    vq = load_vq(args.vq)
    eagle = load_eagle(args.eagle, gpt.config) if args.eagle and Path(args.eagle).exists() else None
    images, meta, manifest = load_dataset(args.data)
    encoder = make_text_encoder(args.encoder)
    snap = snap_files(out, meta, encoder)
    held = heldout_prompts(meta)
    (out / "heldout_prompts.json").write_text(json.dumps(held, ensure_ascii=False, indent=1))
    extra_files = ["captions.json", "caption_vectors.safetensors", "heldout_prompts.json"]
    if args.recogniser and Path(args.recogniser).exists():
        sd, cfg = load_weights(args.recogniser, "recogniser")
        save_weights(sd, out / "recogniser.safetensors", cfg, "recogniser")
        extra_files.append("recogniser.safetensors")
    conditioning = {"kind": "caption", "length": gpt.cls_token_num, "snap": snap, **encoder_spec(args.encoder)}
    defaults = DEFAULTS if eagle is not None else DEFAULTS.with_(drafter="jacobi")
    man = save_model_dir(out, gpt, vq, vq.args, conditioning, defaults, BUNDLED_NAME, eagle=eagle,
                         extra={"extra_files": extra_files, "recogniser": "recogniser.safetensors" if "recogniser.safetensors" in extra_files else None})
    return man


def add_arguments(p: argparse.ArgumentParser) -> None:
    r = runs_dir()
    p.add_argument("--out", default=str(bundled_dir()))
    p.add_argument("--data", default=str(data_dir() / "emoji64"))
    p.add_argument("--vq", default=str(r / "vq" / "vq.safetensors"))
    p.add_argument("--gpt", default=str(r / "ar" / "gpt.safetensors"))
    p.add_argument("--eagle", default=str(r / "drafter" / "eagle.safetensors"))
    p.add_argument("--recogniser", default=str(r / "recogniser" / "recogniser.safetensors"))
    p.add_argument("--encoder", default="minilm", help="text encoder the AR model was trained with")


def run(args) -> int:
    man = ship(args)
    print(json.dumps({k: v for k, v in man.items() if k != "conditioning"}, indent=1))
    return 0
