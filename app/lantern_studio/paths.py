"""Where the app keeps things on disk: caches, training runs, datasets, the bundled
resources. The studio's user data (history, preferences) is Qt's to place:
``gui/storage.app_data_dir``.

Everything is overridable with environment variables so tests and CI can point
it at temporary folders.
"""

from __future__ import annotations

import os
from importlib.resources import files
from pathlib import Path

def cache_dir() -> Path:
    """Root of re-creatable files: datasets, training checkpoints, neighbour tables."""
    root = os.environ.get("LANTERN_STUDIO_CACHE")
    if root:
        return Path(root)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "lantern-studio"


def runs_dir() -> Path:
    """Training runs (resumable checkpoints and logs), outside git."""
    return cache_dir() / "runs"


def data_dir() -> Path:
    """Built datasets."""
    return cache_dir() / "data"


def resources_dir() -> Path:
    """The bundled resources folder, wherever the package is installed."""
    return Path(str(files("lantern_studio.resources")))


def env_flag(value) -> bool:
    """An environment variable's value read as a switch: 1, on, yes, true (any case) are on; anything else off."""
    return (value or "").strip().upper() in {"1", "ON", "YES", "TRUE"}


def existing_parent(path) -> Path:
    """The nearest folder at or above ``path`` that exists (where a file there would land: its disk)."""
    path = Path(path).expanduser().absolute()
    for p in (path, *path.parents):
        if p.exists():
            return p
    return path
