"""Where the app keeps things on disk: caches, training runs, user data.

Everything is overridable with environment variables so tests and CI can point
it at temporary folders.
"""

from __future__ import annotations

import os
from importlib.resources import files
from pathlib import Path

# The studio's names for Qt: they pick the user-data folder (app_data_dir) and the window's identity.
ORGANISATION = "Lantern Studio"
APPLICATION = "lantern-studio"


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


def ensure_app_names() -> None:
    """Give Qt the studio's organisation and application names (once per process)."""
    # Qt is imported here, not at the top: the engine, trainers and commands that use this module never load it
    from PySide6.QtCore import QCoreApplication  # noqa: PLC0415 - Qt: only the GUI and doctor need it

    if QCoreApplication.organizationName() != ORGANISATION:
        QCoreApplication.setOrganizationName(ORGANISATION)
    if QCoreApplication.applicationName() != APPLICATION:
        QCoreApplication.setApplicationName(APPLICATION)


def app_data_dir(create: bool = True) -> Path:
    """The studio's user data: the history (``history.sqlite`` + ``images/``) and
    the preferences (``settings.ini``). ``LANTERN_STUDIO_DATA`` overrides it;
    otherwise it is Qt's ``AppDataLocation`` for :data:`ORGANISATION` /
    :data:`APPLICATION`. ``create=False`` only names it (``lantern-studio doctor``).
    """
    root = os.environ.get("LANTERN_STUDIO_DATA")
    if root:
        path = Path(root)
    else:
        from PySide6.QtCore import QStandardPaths  # noqa: PLC0415 - Qt: only the GUI and doctor get here

        ensure_app_names()
        path = Path(QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppDataLocation))
    if create:
        path.mkdir(parents=True, exist_ok=True)
    return path


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
