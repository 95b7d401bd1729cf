"""The window's status bar, its messages queued instead of overwritten (the rules: :mod:`.state.status`).

``showMessage`` keeps Qt's name and answers at once: it is what the window calls for what a person just
did. ``queue`` is for what arrives by itself (a job started or finished, the model getting ready): it
waits until the message on screen has had its time."""

from __future__ import annotations

import time

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QStatusBar

from .state.status import StatusQueue

TICK_MS = 250


class QueuedStatusBar(QStatusBar):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.messages = StatusQueue()
        self.clock = time.monotonic  # injectable (tests move time by hand)
        self._timer = QTimer(self)
        self._timer.setInterval(TICK_MS)
        self._timer.timeout.connect(self.tick)

    def showMessage(self, text: str, timeout: int = 0) -> None:  # noqa: N802 - Qt's name
        """Shown now (what a person just did); the message it displaces before its time is shown after it."""
        self._draw(self.messages.post(text, timeout / 1000.0, self.clock(), now=True))

    def queue(self, text: str, timeout: int = 0) -> None:
        """Shown once the message on screen has had its time (:data:`.state.status.MIN_SHOW`)."""
        self._draw(self.messages.post(text, timeout / 1000.0, self.clock()))

    def clearMessage(self) -> None:  # noqa: N802 - Qt's name
        self.messages.clear()
        self._draw("")

    def tick(self) -> None:
        self._draw(self.messages.tick(self.clock()))

    def _draw(self, text: str) -> None:
        if text != super().currentMessage():
            super().showMessage(text)  # no Qt timeout: the queue says when a message goes
        if self.messages.idle:
            self._timer.stop()
        elif not self._timer.isActive():
            self._timer.start()
