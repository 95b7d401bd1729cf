"""The job queue as the user sees it: what runs now, what waits and in which
place, with Cancel (Esc) and Cancel all. Compact (a small window: the canvas
needs the height) it is its title line alone, the rows in the title's tooltip."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QHBoxLayout, QListWidget, QListWidgetItem, QPushButton, QVBoxLayout,
                               QWidget)

from .elided_label import ElidedLabel
from ..studio.queue import QueueState


class QueueView(QWidget):
    cancel_requested = Signal()
    cancel_all_requested = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(4)
        top = QHBoxLayout()
        self.title = ElidedLabel("Queue: idle", whole_text_tooltip=True)
        self.title.setObjectName("sectionTitle")
        # "Queue: 1 waiting for the model (warming up the decoder…)" must not widen the window: it ends in "…"
        top.addWidget(self.title, 1)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Stop the running job between two decoding steps (Esc)")
        self.cancel_button.clicked.connect(self.cancel_requested)
        self.cancel_all_button = QPushButton("Cancel all")
        self.cancel_all_button.setToolTip("Stop the running job and empty the queue")
        self.cancel_all_button.clicked.connect(self.cancel_all_requested)
        top.addWidget(self.cancel_button)
        top.addWidget(self.cancel_all_button)
        lay.addLayout(top)
        self.list = QListWidget()
        self.list.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setFixedHeight(64)
        lay.addWidget(self.list)
        self.compact = False
        self.update_from(None)

    def set_compact(self, on: bool) -> None:
        """The title line alone (the list of rows hidden, its text in the title's tooltip), or the list too."""
        self.compact = bool(on)
        self.list.setVisible(not self.compact)
        self.update_from(getattr(self, "_jobs", None))

    def resizeEvent(self, event):  # noqa: N802 - re-elide the rows to the new width
        super().resizeEvent(event)
        if getattr(self, "_jobs", None) is not None:
            self.update_from(self._jobs)

    def update_from(self, jobs) -> None:
        """Redraw from the queue's state (a QueueState; None: empty)."""
        self._jobs = jobs
        state = jobs if jobs is not None else QueueState()
        summary = state.summary()
        self.list.clear()
        fm = self.list.fontMetrics()
        width = max(80, self.list.viewport().width() - 12)
        for text in summary.rows:
            item = QListWidgetItem(fm.elidedText(text, Qt.TextElideMode.ElideRight, width))
            item.setToolTip(text)
            item.setData(Qt.ItemDataRole.UserRole, text)
            self.list.addItem(item)
        self.title.setText(summary.title)
        if self.compact and summary.rows:
            self.title.setToolTip("\n".join([summary.title, *summary.rows]))
        self.cancel_button.setEnabled(summary.can_cancel)
        self.cancel_all_button.setEnabled(summary.can_cancel_all)
