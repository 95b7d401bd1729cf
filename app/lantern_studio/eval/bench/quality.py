"""What the bench judges images with: the model folder's recogniser and real
held-out features (``heldout_features.npy``, else the dataset's held-out images)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np

from ...models.dataset import DatasetError, load_dataset, split_indices
from ..metrics import Recogniser


@dataclass
class Quality:
    """What the model folder / dataset offer for judging images."""

    recogniser: Any = None  # eval.metrics.Recogniser
    meter: Any = None  # models.quality.Meter: the model folder's meter (identity judges on snapping models)
    real_features: Optional[np.ndarray] = None  # (N, F) features of real held-out images
    meta: Optional[list] = None  # dataset meta rows (prompt → subgroup lookups)
    real_source: Optional[str] = None
    notes: list = field(default_factory=list)

    def describe(self) -> dict:
        rec = self.recogniser
        return {
            "recogniser": str(rec.path) if rec is not None and getattr(rec, "path", None) else None,
            "recogniser_classes": rec.num_classes if rec is not None else None,
            "real_images": int(len(self.real_features)) if self.real_features is not None else None,
            "real_source": self.real_source,
            "notes": list(self.notes),
        }


def load_dataset_quietly(data_dir):
    """The dataset at ``data_dir``, or the error that kept it from loading (the bench reports it, not raises)."""
    try:
        return load_dataset(data_dir)
    except (DatasetError, OSError, ValueError) as e:
        return e


def load_quality(folder: Optional[Path], dataset=None) -> Quality:
    """``recogniser.safetensors`` from the model folder; real held-out features
    from ``heldout_features.npy`` there, else from the dataset's held-out images.
    ``dataset`` is ``load_dataset(...)``'s tuple, an exception, or None."""
    q = Quality()
    if isinstance(dataset, tuple):
        q.meta = dataset[1]
    rec_path = folder / "recogniser.safetensors" if folder is not None else None
    if rec_path is None or not rec_path.is_file():
        q.notes.append("no recogniser.safetensors in the model folder: quality fields are null")
        return q
    try:
        q.recogniser = Recogniser.load(rec_path)
    except Exception as e:  # noqa: BLE001 - a broken recogniser must not stop the speed bench
        q.notes.append(f"recogniser could not be loaded ({e}): quality fields are null")
        return q
    feats_path = folder / "heldout_features.npy"
    if feats_path.is_file():
        f = np.load(feats_path, allow_pickle=False)
        if f.ndim == 2 and f.shape[1] == q.recogniser.feature_dim and len(f) >= 2:
            q.real_features, q.real_source = f.astype(np.float64), str(feats_path)
        else:
            q.notes.append(f"{feats_path.name}: shape {f.shape} does not fit the recogniser "
                           f"({q.recogniser.feature_dim} features); ignored")
    if q.real_features is None and isinstance(dataset, tuple):
        images, meta, _ = dataset
        idx = split_indices(meta, "heldout")
        if len(idx) >= 2:
            q.real_features = q.recogniser.features(images[idx]).astype(np.float64)
            q.real_source = "dataset held-out split"
    if q.real_features is None:
        q.notes.append("no real held-out images (no heldout_features.npy, no dataset): frechet_distance is null")
    return q
