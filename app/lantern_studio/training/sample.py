"""The measuring commands' seeded sample of a built dataset (``train jitter``, ``train retoken``)."""

from __future__ import annotations

import numpy as np

from ..models.dataset import DatasetError, load_dataset
from .errors import TrainingError


def dataset_sample(data, images: int, seed: int, command: str, limit: int) -> np.ndarray:
    """``images`` dataset pictures (N, H, W, 3) uint8 drawn with ``seed``, in dataset order, for a measuring
    command (``train jitter``, ``train retoken``): a missing or damaged dataset, or a count outside [1, limit],
    is one ``TrainingError`` line naming ``command``."""
    try:
        pictures, _meta, _manifest = load_dataset(data)
    except (DatasetError, FileNotFoundError) as e:
        raise TrainingError(f"{command}: {e}") from None
    if not 1 <= images <= limit:
        raise TrainingError(f"{command} --images: must be in [1, {limit}], got {images}")
    pick = np.random.default_rng(seed).choice(len(pictures), size=min(images, len(pictures)), replace=False)
    return np.ascontiguousarray(pictures[np.sort(pick)])
