"""A non-blocking message strip (errors, warnings, notes) with optional action
buttons and a dismiss button.

It floats over the lower right of the window's central area instead of taking
a row of the layout: a message that comes and goes moves nothing (the canvas
and the history strip keep their size), and the prompt box stays uncovered.
What it covers (at 900×600: the Export and Queue row) comes back by itself: a
message goes after :data:`SECONDS` of its level (a pointer resting on it holds
it), except one that offers a way out (its action buttons) — that one stays
until a choice or ✕. The status line keeps the message's first line meanwhile.
"""

from __future__ import annotations

from typing import Callable, Sequence, Tuple

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QToolButton

from . import theme

LEVELS = ("error", "warning", "info")
MAX_WIDTH = 720  # px: a wide window keeps the strip readable instead of one long line
MARGIN = 8
SECONDS = {"info": 8.0, "warning": 12.0, "error": 20.0}  # on screen, unless it offers actions


class Banner(QFrame):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("banner")
        self.level = "info"
        lay = QHBoxLayout(self)
        lay.setContentsMargins(12, 8, 8, 8)
        lay.setSpacing(8)
        self.icon = QLabel()
        lay.addWidget(self.icon)
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(self.label, 1)
        self._actions = QHBoxLayout()
        lay.addLayout(self._actions)
        self.close_button = QToolButton()
        self.close_button.setIcon(theme.glyph_icon("close"))
        self.close_button.setObjectName("bannerClose")
        self.close_button.setToolTip("Dismiss")
        self.close_button.clicked.connect(self.dismiss)
        lay.addWidget(self.close_button)
        self._hold = False  # the pointer rests on it: its time stopped
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.timeout.connect(self.dismiss)
        self.hide()
        if parent is not None:
            parent.installEventFilter(self)

    def enterEvent(self, event):  # noqa: N802 - Qt's name: a person reading it keeps it
        self._hold = self.timer.isActive()
        self.timer.stop()
        super().enterEvent(event)

    def leaveEvent(self, event):  # noqa: N802
        if getattr(self, "_hold", False) and self.isVisible():
            self.timer.start()
        super().leaveEvent(event)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if watched is self.parentWidget() and event.type() == QEvent.Type.Resize and self.isVisible():
            self.place()
        return False

    def place(self) -> None:
        """Anchor to the parent's lower right corner, as tall as the wrapped text needs."""
        parent = self.parentWidget()
        if parent is None:
            return
        width = max(120, min(MAX_WIDTH, parent.width() - 2 * MARGIN))
        height = self.heightForWidth(width) if self.hasHeightForWidth() else self.sizeHint().height()
        height = min(max(height, self.minimumSizeHint().height()), max(40, parent.height() - 2 * MARGIN))
        self.setGeometry(parent.width() - width - MARGIN, parent.height() - height - MARGIN, width, height)
        self.raise_()

    def show_message(self, text: str, level: str = "error",
                     actions: Sequence[Tuple[str, Callable[[], None]]] = ()) -> None:
        self.level = level if level in LEVELS else "error"
        self.setProperty("level", self.level)
        self.icon.setText({"error": "⚠", "warning": "⚠", "info": "ℹ"}[self.level])
        self.label.setText(text)
        while self._actions.count():
            item = self._actions.takeAt(0)
            if item.widget():
                item.widget().deleteLater()
        for label, fn in actions:
            b = QPushButton(label)
            b.clicked.connect(fn)
            self._actions.addWidget(b)
        self.style().unpolish(self)
        self.style().polish(self)
        self.show()
        self.place()
        self.timer.stop()
        if not actions:  # a message with a way out stays until it is taken or dismissed
            self.timer.start(int(1000 * SECONDS[self.level]))

    def text(self) -> str:
        return "" if self.isHidden() else self.label.text()

    def dismiss(self) -> None:
        self.timer.stop()
        self.hide()
