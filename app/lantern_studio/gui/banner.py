"""A non-blocking message strip at the top of the window (errors, warnings,
notes), with optional action buttons and a dismiss button."""

from __future__ import annotations

from typing import Callable, Sequence, Tuple

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QToolButton

LEVELS = ("error", "warning", "info")


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
        self.close_button = QToolButton(text="✕")
        self.close_button.setObjectName("bannerClose")
        self.close_button.setToolTip("Dismiss")
        self.close_button.clicked.connect(self.dismiss)
        lay.addWidget(self.close_button)
        self.hide()

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

    def text(self) -> str:
        return "" if self.isHidden() else self.label.text()

    def dismiss(self) -> None:
        self.hide()
