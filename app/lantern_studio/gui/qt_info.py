"""What Qt this process loads: the PySide6 and Qt versions, the folder of Qt's platform
plugins and the studio's user-data folder as Qt places it.

``lantern-studio doctor`` sits below the gui and never imports Qt: it runs this module in a
child process (``python -m lantern_studio.gui.qt_info`` prints :func:`facts` as one JSON line),
for its report and, before the studio starts, for the plugins folder (doctor.qt_platform_problem)."""

from __future__ import annotations

import json
from pathlib import Path

import PySide6
from PySide6 import QtCore

from .storage import app_data_dir


def qt_versions() -> dict:
    """{"pyside6": the PySide6 version, "qt": the Qt library's version}."""
    return {"pyside6": getattr(PySide6, "__version__", None), "qt": QtCore.qVersion()}


def platform_plugins_dir() -> Path:
    """Where Qt looks for its QPA platform plugins (xcb, wayland, offscreen, ...)."""
    return Path(QtCore.QLibraryInfo.path(QtCore.QLibraryInfo.LibraryPath.PluginsPath)) / "platforms"


def facts() -> dict:
    """What the doctor asks of Qt: ``pyside6`` and ``qt`` (versions), ``platform_plugins_dir`` and
    ``app_data`` (the studio's user-data folder, named without creating it)."""
    return {**qt_versions(), "platform_plugins_dir": str(platform_plugins_dir()),
            "app_data": str(app_data_dir(create=False))}


if __name__ == "__main__":
    print(json.dumps(facts()))
