"""A dataset folder in the `train data` layout (images.npy, meta.jsonl, manifest.json) from arrays a test made."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def write_dataset(folder: Path, images: np.ndarray, meta: list[dict], manifest: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    np.save(folder / "images.npy", images, allow_pickle=False)
    (folder / "meta.jsonl").write_text("".join(json.dumps(m) + "\n" for m in meta), encoding="utf-8")
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
