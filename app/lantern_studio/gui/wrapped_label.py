"""A word-wrapped label that keeps the height its text needs at the width it is given.

Qt lays a word-wrapped label out by height-for-width, but a layout inside a scroll area does not always ask
again when the width changes after the first layout (the settings column's scroll bar appearing narrows it):
the label then keeps the height of fewer lines and its first and last lines are cut. This label sets its
minimum height to what its text needs at its current width whenever either changes, so every line shows.
"""

from __future__ import annotations

from PySide6.QtCore import QRect, Qt
from PySide6.QtWidgets import QLabel


class WrappedLabel(QLabel):
    def __init__(self, text: str = "", parent=None):
        super().__init__(parent)
        self.setWordWrap(True)
        self.setText(text)

    def setText(self, text: str) -> None:  # noqa: N802 - Qt's name
        super().setText(text)
        self._fit()

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self._fit()

    def needed_height(self, width: int) -> int:
        """The height the (plain) text takes wrapped at ``width``, as Qt lays it out. Qt's own
        ``heightForWidth`` is no use here: it never answers less than the minimum height this label sets."""
        m, pad = self.contentsMargins(), 2 * self.margin()
        inner = max(1, width - m.left() - m.right() - pad)
        text = self.fontMetrics().boundingRect(QRect(0, 0, inner, 1 << 20), int(Qt.TextFlag.TextWordWrap),
                                               self.text())
        return text.height() + m.top() + m.bottom() + pad

    def _fit(self) -> None:
        if self.width() <= 0:
            return
        need = self.needed_height(self.width())
        if need != self.minimumHeight():
            self.setMinimumHeight(need)
