"""The look: the dark stylesheet and the window icon from ``resources/``."""

from __future__ import annotations

import functools
from typing import Optional

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QIcon, QPainter, QPixmap, QPolygonF
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


ICON_COLOUR = "#e6e6ea"  # the stylesheet's text colour: icons read as text does on the dark theme
GLYPHS = ("play", "pause", "close")


@functools.lru_cache(maxsize=None)  # drawn once each: Play/Pause swap icons at every toggle
def glyph_icon(name: str, size: int = 16, colour: str = ICON_COLOUR) -> QIcon:
    """A small light icon drawn here (play, pause, close) rather than a text glyph such as U+23F8, which many
    fonts lack (it showed as a missing-glyph box), or a style's standard icon, which is dark on this theme."""
    if name not in GLYPHS:
        raise ValueError(f"no glyph named {name!r}; known: {', '.join(GLYPHS)}")
    icon = QIcon()
    for scale in (1, 2):  # crisp on high-DPI screens
        px = QPixmap(size * scale, size * scale)
        px.setDevicePixelRatio(scale)
        px.fill(Qt.GlobalColor.transparent)
        p = QPainter(px)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        c = QColor(colour)
        s = float(size)
        if name == "play":
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(c)
            p.drawPolygon(QPolygonF([QPointF(s * 0.28, s * 0.18), QPointF(s * 0.82, s * 0.5),
                                     QPointF(s * 0.28, s * 0.82)]))
        elif name == "pause":
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(c)
            p.drawRect(QRectF(s * 0.25, s * 0.18, s * 0.18, s * 0.64))
            p.drawRect(QRectF(s * 0.57, s * 0.18, s * 0.18, s * 0.64))
        else:  # close
            pen = p.pen()
            pen.setColor(c)
            pen.setWidthF(max(1.5, s / 9))
            pen.setCapStyle(Qt.PenCapStyle.RoundCap)
            p.setPen(pen)
            p.drawLine(QPointF(s * 0.27, s * 0.27), QPointF(s * 0.73, s * 0.73))
            p.drawLine(QPointF(s * 0.73, s * 0.27), QPointF(s * 0.27, s * 0.73))
        p.end()
        icon.addPixmap(px)
    return icon


def apply(app: QApplication) -> None:
    if app.property("lanternThemed"):
        return
    app.setStyle("Fusion")  # the stylesheet is written against Fusion's metrics on every platform
    app.setStyleSheet(stylesheet())
    icon = window_icon()
    if icon is not None:
        app.setWindowIcon(icon)
    app.setProperty("lanternThemed", True)
