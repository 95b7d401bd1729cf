"""The model catalogue: the bundled model, local model folders, Hub entries."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from ..engine.checkpoints import CheckpointError
from ..engine.precision import resolve
from ..paths import resources_dir
from . import catalogue
from .local import load_model_dir

BUNDLED_NAME = "emoji-64"


def bundled_dir() -> Path:
    return resources_dir() / "models" / BUNDLED_NAME


def load_pipeline(spec: Optional[str] = None, device: Optional[str] = None, verify: bool = True,
                  precision: Optional[str] = "auto"):
    """``None`` or the bundled name → the bundled model; a folder with model.json →
    that folder; a catalogue name → the Hub model from the local HF cache.

    ``verify`` checks a folder's files against model.json's sha256 before first use
    (the verdict is remembered per file by size and mtime, so start-up stays fast).
    ``precision`` ('auto', 'fp32', 'bf16', 'fp16') sets the dtype of the target's
    and drafter's weights and KV caches (engine/precision.py); 'auto' is bf16 on
    hardware with native bf16, fp32 elsewhere.
    """
    resolve(precision, device or "cpu")  # a bad value fails before anything loads
    pipe = _load(spec, device, verify, precision)
    return pipe.set_precision(precision)


def _load(spec: Optional[str], device: Optional[str], verify: bool, precision: Optional[str] = "auto"):
    spec = spec or BUNDLED_NAME
    path = Path(spec).expanduser()
    if path.is_dir():
        return load_model_dir(path, verify=verify, device=device)
    if spec == BUNDLED_NAME:
        folder = bundled_dir()
        if not (folder / "model.json").is_file():
            raise CheckpointError(
                f"the bundled model is missing from {folder}; reinstall lantern-studio, "
                "or pass --model with a model folder"
            )
        return load_model_dir(folder, verify=verify, device=device)
    if spec in catalogue.CATALOGUE:
        # cast once, to the asked precision (not to auto first: a bf16 round trip would round the weights)
        return catalogue.load_pipeline(spec, device=device, dtype=precision)
    raise CheckpointError(f"model {spec!r}: not a model folder, the bundled model ({BUNDLED_NAME}) or a catalogue name")
