"""A one-line label that ends in "…" where its text does not fit, instead of
being cut mid-letter or widening its column (and so the window)."""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QLabel, QSizePolicy

MIN_CHARS = 8  # the narrowest it asks to be: a few characters and the ellipsis


class ElidedLabel(QLabel):
    """``text()`` stays the whole text; what is drawn is :meth:`shown_text`. Put the whole text in the
    tooltip where a person needs all of it (``whole_text_tooltip``)."""

    def __init__(self, text: str = "", parent=None, whole_text_tooltip: bool = False):
        super().__init__(parent)
        self.whole_text_tooltip = whole_text_tooltip
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setWordWrap(False)
        self.setText(text)

    def setText(self, text: str) -> None:  # noqa: N802 - Qt's name
        super().setText(text)
        if self.whole_text_tooltip:
            self.setToolTip(text)
        self.update()

    def shown_text(self) -> str:
        line = self.text().replace("\n", " ")
        return self.fontMetrics().elidedText(line, Qt.TextElideMode.ElideRight, self.contentsRect().width())

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        return QSize(self.fontMetrics().averageCharWidth() * MIN_CHARS, super().minimumSizeHint().height())

    def paintEvent(self, _event) -> None:  # noqa: N802 - Qt's name
        p = QPainter(self)
        self.style().drawItemText(p, self.contentsRect(), int(self.alignment()), self.palette(), self.isEnabled(),
                                  self.shown_text(), self.foregroundRole())
        p.end()
