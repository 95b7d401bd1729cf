"""The window's status bar, its messages queued instead of overwritten (the rules: :mod:`..studio.status`).

``showMessage`` keeps Qt's name and answers at once: it is what the window calls for what a person just
did. ``queue`` is for what arrives by itself (a job started or finished, the model getting ready): it
waits until the message on screen has had its time.

A message longer than the room left of the model's part ends in "…" (Qt cut it mid-word at 900×600); the
tooltip holds it whole, and ``currentMessage`` is the whole message."""

from __future__ import annotations

import time

from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtWidgets import QSizeGrip, QStatusBar, QWidget

from ..studio.status import StatusQueue

TICK_MS = 250
PERMANENT_SHARE = 0.5  # of the bar's width, at least, for the widgets right of a long message (the model's part)


class QueuedStatusBar(QStatusBar):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.messages = StatusQueue()
        self.clock = time.monotonic  # injectable (tests move time by hand)
        self._timer = QTimer(self)
        self._timer.setInterval(TICK_MS)
        self._timer.timeout.connect(self.tick)
        self._whole = ""  # the message shown, whole (what is drawn may end in "…")
        self._permanent = []  # the widgets right of the message (Qt draws the message left of the first)

    def addPermanentWidget(self, widget: QWidget, stretch: int = 0) -> None:  # noqa: N802 - Qt's name
        super().addPermanentWidget(widget, stretch)
        self._permanent.append(widget)
        widget.setMaximumWidth(max(1, int(self.width() * PERMANENT_SHARE)))
        widget.installEventFilter(self)  # it moves when its text changes: the message's room changes

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 - Qt's name
        if watched in self._permanent and event.type() in (QEvent.Type.Move, QEvent.Type.Resize,
                                                           QEvent.Type.Show, QEvent.Type.Hide):
            self._draw(self._whole, force=True)
        return False

    def currentMessage(self) -> str:  # noqa: N802 - Qt's name: the whole message, not the elided one drawn
        return self._whole

    def message_room(self) -> int:
        """The width Qt draws the message in (QStatusBarPrivate::messageRect): from 6 px to left of the first
        visible permanent widget (or the size grip, or 12 px from the right edge)."""
        right = self.width() - 12
        grip = self.findChild(QSizeGrip)
        if grip is not None and grip.isVisible():
            right = min(right, grip.x())
        shown = [w for w in self._permanent if w.isVisible()]
        if shown:
            right = min(right, shown[0].x() - 2)
        return max(0, right - 6)

    def shown_message(self) -> str:
        """What is drawn: the whole message, or its start and "…" where it does not fit."""
        return super().currentMessage()

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self._draw(self._whole, force=True)

    def _fit_permanent(self, text: str) -> None:
        """The widgets right of the message (the model's part, which elides: main_window) take what the message
        leaves them, and never less than half the line: a short message leaves them the rest of it."""
        need = self.fontMetrics().horizontalAdvance(text) + 24 if text else 0
        room = max(int(self.width() * PERMANENT_SHARE), self.width() - need - 24)
        for widget in self._permanent:
            widget.setMaximumWidth(max(1, room))

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

    def _draw(self, text: str, force: bool = False) -> None:
        if text != self._whole or force:
            self._whole = text
            self._fit_permanent(text)
            fitted = self.fontMetrics().elidedText(text, Qt.TextElideMode.ElideRight, self.message_room())
            if fitted != super().currentMessage():
                super().showMessage(fitted)  # no Qt timeout: the queue says when a message goes
            self.setToolTip(text if fitted != text else "")
        if self.messages.idle:
            self._timer.stop()
        elif not self._timer.isActive():
            self._timer.start()
