"""What Qt this process loads: the PySide6 and Qt versions and the folder of Qt's
platform plugins. ``lantern-studio doctor`` reports them, and asks for the plugins
folder before the studio starts (doctor.qt_platform_problem); Qt is imported here
because only the gui package imports it."""

from __future__ import annotations

from pathlib import Path

import PySide6
from PySide6 import QtCore


def qt_versions() -> dict:
    """{"pyside6": the PySide6 version, "qt": the Qt library's version}."""
    return {"pyside6": getattr(PySide6, "__version__", None), "qt": QtCore.qVersion()}


def platform_plugins_dir() -> Path:
    """Where Qt looks for its QPA platform plugins (xcb, wayland, offscreen, ...)."""
    return Path(QtCore.QLibraryInfo.path(QtCore.QLibraryInfo.LibraryPath.PluginsPath)) / "platforms"
