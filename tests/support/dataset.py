"""A dataset folder in the `train data` layout (images.npy, meta.jsonl, manifest.json) from arrays a test made,
the small class dataset the class-run tests train on, and a tiny tokenizer for it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from lantern_studio.engine.tokenizer import VQArgs, VQModel, save_vq


def write_dataset(folder: Path, images: np.ndarray, meta: list[dict], manifest: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    np.save(folder / "images.npy", images, allow_pickle=False)
    (folder / "meta.jsonl").write_text("".join(json.dumps(m) + "\n" for m in meta), encoding="utf-8")
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


def class_dataset(folder: Path, names=("dog face", "red heart", "fire", "rocket"), styles=("google", "fluent-flat"),
                  versions=None, subgroup: str = "thing") -> tuple[np.ndarray, list[dict]]:
    """A class run's dataset in ``folder``: every identity (``I0``, ``I1``, … named by ``names``, of emoji
    ``versions``, 0.6 by default) in every style, each a coloured block on white at its own place with a
    black bar (so a 2 px shift changes its tokens); every row trains. → (images, meta)."""
    rng = np.random.default_rng(0)
    versions = versions or [0.6] * len(names)
    meta, images = [], []
    for i, (name, version) in enumerate(zip(names, versions)):
        for style in styles:
            img = np.full((64, 64, 3), 255, np.uint8)
            img[6 + 10 * i: 26 + 10 * i, 8:44] = rng.integers(0, 200, 3)
            img[30:34, 6 + 12 * i: 14 + 12 * i] = 0
            images.append(img)
            meta.append({"caption": f"{name}, {style} style", "identity": f"I{i}", "name": name, "style": style,
                         "vendor": style, "skin_tone": None, "subgroup": subgroup, "tags": [], "split": "train",
                         "emoji_version": version})
    write_dataset(folder, np.stack(images), meta, {"files": {"images.npy": {"sha256": "x"}}})
    return np.stack(images), meta


def tiny_vq_file(path: Path, codebook_size: int = 32) -> Path:
    """A small random tokenizer (seed 0) for 64×64 images, saved at ``path``."""
    torch.manual_seed(0)
    args = VQArgs(codebook_size=codebook_size, codebook_embed_dim=4, z_channels=8, ch=8, encoder_ch_mult=[1, 1, 1, 1],
                  decoder_ch_mult=[1, 1, 1, 1], norm_groups=4)
    save_vq(VQModel(args), args, path)
    return path
