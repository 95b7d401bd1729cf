"""Reading a built emoji dataset folder: the format every user of the data shares.

``lantern-studio train data`` (training/data.py) writes the folder; the
trainers, the recogniser and the bench's quality references (eval/bench/)
read it through here, so eval never imports the training code::

    images.npy     (N, 64, 64, 3) uint8, on white
    meta.jsonl     one JSON object per image row, same order ("caption",
                   "subgroup", "split", …)
    manifest.json  packages, hashes, counts; written last, so its presence
                   marks a complete dataset
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from .. import paths
from ..engine.files import sha256_file

DATASET_NAME = "emoji64"
IMAGE_SIZE = 64
SPLITS = ("train", "heldout")
IMAGES_FILE = "images.npy"
META_FILE = "meta.jsonl"
MANIFEST_FILE = "manifest.json"


class DatasetError(RuntimeError):
    """A dataset build or load failed for a reason the user can act on."""


def default_out_dir() -> Path:
    """Where ``train data`` writes the dataset and everyone reads it by default."""
    return paths.data_dir() / DATASET_NAME


def load_dataset(
    path: str | os.PathLike | None = None, *, verify: bool = False
) -> tuple[np.ndarray, list[dict[str, Any]], dict[str, Any]]:
    """Load (images (N, 64, 64, 3) uint8, meta rows, manifest) from a built dataset.

    ``verify=True`` also checks the files' sha256 against the manifest.
    """
    path = Path(path) if path is not None else default_out_dir()
    manifest_path = path / MANIFEST_FILE
    if not manifest_path.is_file():
        raise DatasetError(
            f"no complete dataset at {path} (no {MANIFEST_FILE}); build it with "
            "`lantern-studio train data`"
        )
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    if verify:
        for name in (IMAGES_FILE, META_FILE):
            want = ((manifest.get("files") or {}).get(name) or {}).get("sha256")
            got = sha256_file(path / name)
            if got != want:
                raise DatasetError(f"{path / name} does not match the manifest (sha256 {got} != {want})")
    images = np.load(path / IMAGES_FILE, allow_pickle=False)
    with open(path / META_FILE, encoding="utf-8") as fh:
        meta = [json.loads(line) for line in fh if line.strip()]
    if images.ndim != 4 or images.shape[1:] != (IMAGE_SIZE, IMAGE_SIZE, 3) or images.dtype != np.uint8:
        raise DatasetError(f"{path / IMAGES_FILE}: unexpected array {images.dtype} {images.shape}")
    if len(meta) != images.shape[0]:
        raise DatasetError(
            f"{path}: {len(meta)} meta rows but {images.shape[0]} images; rebuild with --force"
        )
    return images, meta, manifest


def split_indices(meta: list[dict[str, Any]], split: str) -> np.ndarray:
    """Row indices (int64, ascending) of ``split`` ('train' or 'heldout')."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    return np.array([i for i, m in enumerate(meta) if m.get("split") == split], dtype=np.int64)
