"""The look: the dark stylesheet and the window icon from ``resources/``."""

from __future__ import annotations

from typing import Optional

from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication

from ..paths import resources_dir


def stylesheet() -> str:
    path = resources_dir() / "styles" / "studio.qss"
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return ""


def window_icon() -> Optional[QIcon]:
    icons = resources_dir() / "icons"
    for name in ("lantern.svg", "lantern.png"):
        path = icons / name
        if path.is_file():
            icon = QIcon(str(path))
            if not icon.isNull():
                return icon
    return None


def apply(app: QApplication) -> None:
    if app.property("lanternThemed"):
        return
    app.setStyle("Fusion")  # the stylesheet is written against Fusion's metrics on every platform
    app.setStyleSheet(stylesheet())
    icon = window_icon()
    if icon is not None:
        app.setWindowIcon(icon)
    app.setProperty("lanternThemed", True)
