"""A non-blocking message strip (errors, warnings, notes) with optional action
buttons and a dismiss button.

It takes a row of the canvas column's layout, over the canvas, while it shows:
it covers nothing (floating over the lower right, it hid the Export and Queue
row at 900×600); the canvas gives up the row's height meanwhile. A message goes
after :data:`SECONDS` of its level (a pointer resting on it holds it), except
one that offers a way out (its action buttons) — that one stays until a choice
or ✕. The status line keeps the message's first line meanwhile.
"""

from __future__ import annotations

from typing import Callable, Sequence, Tuple

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QToolButton

from . import theme

LEVELS = ("error", "warning", "info")
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

    def enterEvent(self, event):  # noqa: N802 - Qt's name: a person reading it keeps it
        self._hold = self.timer.isActive()
        self.timer.stop()
        super().enterEvent(event)

    def leaveEvent(self, event):  # noqa: N802
        if getattr(self, "_hold", False) and self.isVisible():
            self.timer.start()
        super().leaveEvent(event)

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
        self.timer.stop()
        if not actions:  # a message with a way out stays until it is taken or dismissed
            self.timer.start(int(1000 * SECONDS[self.level]))

    def text(self) -> str:
        return "" if self.isHidden() else self.label.text()

    def dismiss(self) -> None:
        self.timer.stop()
        self.hide()
