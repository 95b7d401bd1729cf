"""Where the studio keeps user data and its preferences.

* The app data folder (:func:`app_data_dir`) holds the history
  (``history.sqlite`` + ``images/``) and the preferences (``settings.ini``).
  ``LANTERN_STUDIO_DATA`` overrides it (tests point it at a temporary folder);
  otherwise it is Qt's ``AppDataLocation`` for organisation "Lantern Studio",
  app "lantern-studio". ``lantern-studio doctor`` reports it from here too.
* Preferences use an explicit INI file in that folder rather than Qt's native
  location: QSettings caches ``XDG_CONFIG_HOME`` the first time it is used in a
  process, so a native QSettings would not follow a test's temporary folder.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Optional

from PySide6.QtCore import QCoreApplication, QSettings, QStandardPaths

# The studio's names for Qt: they pick the user-data folder (app_data_dir) and the window's identity.
ORGANISATION = "Lantern Studio"
APPLICATION = "lantern-studio"


def ensure_app_names() -> None:
    """Give Qt the studio's organisation and application names (once per process)."""
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
        ensure_app_names()
        path = Path(QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppDataLocation))
    if create:
        path.mkdir(parents=True, exist_ok=True)
    return path


class Preferences:
    """Typed access to the INI preferences (JSON for structured values)."""

    def __init__(self, folder: Optional[Path] = None):
        folder = folder or app_data_dir()
        self.qsettings = QSettings(str(folder / "settings.ini"), QSettings.Format.IniFormat)

    def get_json(self, key: str, default: Any = None) -> Any:
        raw = self.qsettings.value(key)
        if raw is None:
            return default
        try:
            return json.loads(str(raw))
        except (TypeError, ValueError):
            return default

    def set_json(self, key: str, value: Any) -> None:
        self.qsettings.setValue(key, json.dumps(value))

    def get_bytes(self, key: str):
        return self.qsettings.value(key)

    def set_bytes(self, key: str, value) -> None:
        self.qsettings.setValue(key, value)

    def sync(self) -> None:
        self.qsettings.sync()
