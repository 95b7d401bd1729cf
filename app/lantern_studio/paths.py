"""Where the app keeps things on disk: caches, training runs, user data.

Everything is overridable with environment variables so tests and CI can point
it at temporary folders.
"""

from __future__ import annotations

import os
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
    from importlib.resources import files

    return Path(str(files("lantern_studio.resources")))
