"""A progress bar whose text fits its width: "done · 256 / 256 tokens · 96 target forwards · 1.08 s" was cut
mid-word at 900×600. Where the whole text does not fit, the bar shows it with its words abbreviated
("tok", "fwd"), then ends it in "…"; the tooltip always holds the whole text."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QProgressBar

# the long words of the canvas's and the race lanes' progress texts, and their short forms
ABBREVIATIONS = ((" target forwards", " fwd"), (" tokens", " tok"), ("cancelled at", "cancelled"))
PADDING = 12  # px the style keeps around the text inside the bar


def shorter(text: str) -> str:
    """``text`` with its long words abbreviated (the second try when the whole text does not fit)."""
    for long, short in ABBREVIATIONS:
        text = text.replace(long, short)
    return text


class FittedProgressBar(QProgressBar):
    """``full_text()`` is what the format says (Qt's ``text()``); the bar draws ``text()``, which fits."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.valueChanged.connect(self._tip)

    def full_text(self) -> str:
        return super().text()

    def text(self) -> str:  # what the style draws (QProgressBar::initStyleOption calls it)
        whole = super().text()
        room = self.contentsRect().width() - PADDING
        metrics = self.fontMetrics()
        if metrics.horizontalAdvance(whole) <= room:
            return whole
        short = shorter(whole)
        if metrics.horizontalAdvance(short) <= room:
            return short
        return metrics.elidedText(short, Qt.TextElideMode.ElideRight, max(0, room))

    def setFormat(self, text: str) -> None:  # noqa: N802 - Qt's name
        super().setFormat(text)
        self._tip()

    def setRange(self, lo: int, hi: int) -> None:  # noqa: N802 - Qt's name
        super().setRange(lo, hi)
        self._tip()

    def _tip(self, *_args) -> None:
        self.setToolTip(super().text())
