"""The model catalogue: the bundled model, local model folders, Hub entries, and
the one function that reads a model spec (:func:`resolve_spec`)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from ..engine.checkpoints import CheckpointError
from ..engine.precision import resolve
from ..engine.settings import GenerationSettings
from ..paths import cache_dir, resources_dir
from . import catalogue
from .janus import JANUS_DEFAULTS, is_janus_folder, load_janus_dir
from .local import load_model_dir, read_manifest
from .tiny import build_tiny_model_dir

BUNDLED_NAME = "emoji-64"
PREVIEW_NAME = "emoji-64-v5"  # a second bundled model, never the default: model v5, where LANTERN's sliders matter
BUNDLED = {
    BUNDLED_NAME: "bundled emoji model (64 px)",
    PREVIEW_NAME: "preview: model v5, varied pictures where k and δ trade speed for fidelity; draws less faithfully",
}
TINY_DEMO = "tiny-demo"  # model spec: a random tiny model built on demand (a demo without weights)


def bundled_dir(name: str = BUNDLED_NAME) -> Path:
    """A bundled model's folder (the default model's unless ``name`` is another of ``BUNDLED``)."""
    return resources_dir() / "models" / name


def installed_previews() -> list:
    """The bundled models beside the default one that this install holds (their folders have model.json)."""
    return [name for name in BUNDLED if name != BUNDLED_NAME and (bundled_dir(name) / "model.json").is_file()]


def is_bundled(spec: Optional[str]) -> bool:
    """Whether a model spec names a bundled model (``None`` is the default one)."""
    return spec is None or spec in BUNDLED


def tiny_demo_dir() -> Path:
    return cache_dir() / "models" / TINY_DEMO


def resolve_spec(spec: Optional[str]) -> "Path | str":
    """A model spec → where the model is: a model folder (Path) or a catalogue name (str).

    ``None`` is the bundled model; TINY_DEMO is a random tiny model folder in the
    cache, built on first use; an existing folder is itself; a bundled model's
    name (``BUNDLED``), then a catalogue name, come next. Anything else, or a bundled model
    missing from the install, is a CheckpointError. The one place a spec is read:
    the CLI, the bench, the trainers and the studio all come through here.
    """
    if spec is None:
        return _bundled_or_error()
    if spec == TINY_DEMO:
        folder = tiny_demo_dir()
        if not (folder / "model.json").is_file():
            build_tiny_model_dir(folder, grid=16, layers=4, dim=128)
        return folder
    path = Path(spec).expanduser()
    if path.is_dir():
        return path
    if spec in BUNDLED:
        return _bundled_or_error(spec)
    if spec in catalogue.CATALOGUE:
        return spec
    raise CheckpointError(f"model {spec!r}: not a model folder, a bundled model ({', '.join(BUNDLED)}), "
                          f"{TINY_DEMO!r} or a catalogue name")


def model_defaults(spec: Optional[str]):
    """A model folder's default GenerationSettings read from its model.json alone (no weights, no
    torch work: fast enough for the GUI thread), or None where that cannot be said yet (a catalogue
    model, the tiny demo not built yet, a damaged folder — its load reports that)."""
    if spec == TINY_DEMO:
        return None
    try:
        folder = resolve_spec(spec)
        if not isinstance(folder, Path):
            return None
        if is_janus_folder(folder):
            return JANUS_DEFAULTS
        return GenerationSettings.from_dict(read_manifest(folder).get("defaults") or {}).validate()
    except (CheckpointError, OSError, TypeError, ValueError):
        return None


def _bundled_or_error(name: str = BUNDLED_NAME) -> Path:
    folder = bundled_dir(name)
    if not (folder / "model.json").is_file():
        what = "the bundled model" if name == BUNDLED_NAME else f"the bundled model {name}"
        raise CheckpointError(
            f"{what} is missing from {folder}; reinstall lantern-studio, "
            "or pass --model with a model folder"
        )
    return folder


def load_pipeline(spec: Optional[str] = None, device: Optional[str] = None, verify: bool = True,
                  precision: Optional[str] = "auto"):
    """The model a spec names (see :func:`resolve_spec`) as an ImagePipeline: a
    model folder with model.json, a transformers ``save_pretrained`` Janus-Pro folder
    (model + processor, models/janus.py), or a catalogue model from the local HF cache.

    ``verify`` checks a folder's files against model.json's sha256 before first use
    (the verdict is remembered per file by size and mtime, so start-up stays fast).
    ``precision`` ('auto', 'fp32', 'bf16', 'fp16') sets the dtype of the target's
    and drafter's weights and KV caches (engine/precision.py); 'auto' is bf16 on
    hardware with native bf16, fp32 elsewhere.
    """
    resolve(precision, device or "cpu")  # a bad value fails before anything loads
    where = resolve_spec(spec)
    if isinstance(where, str):
        # cast once, to the asked precision (not to auto first: a bf16 round trip would round the weights)
        return catalogue.load_entry(where, device=device, dtype=precision)
    if is_janus_folder(where):  # a transformers save_pretrained folder (Janus-Pro): cast as it loads
        return load_janus_dir(where, device=device, precision=precision)
    return load_model_dir(where, verify=verify, device=device).set_precision(precision)
