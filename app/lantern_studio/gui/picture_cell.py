"""A picture cell: one job's picture in a set of them (Generate ×4's grid, a Sweep's strip), filled in frame
by frame while it decodes, framed when it is the chosen one, and saying ``clicked(index)`` when a person
clicks its picture. The grid's and the strip's cells build their captions around it."""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtWidgets import QFrame

from .canvas import ImageView, to_qimage
from ..studio.jobs import Frame

CELL_LEAST = QSize(64, 24)  # a cell's picture at its smallest: the grid asks no more height than the single
# canvas with its replay bar (the window's least size, so its first size on a small screen, stays as it was)
CHOSEN_STYLE = "QFrame#variationCell { border: 2px solid #f0a030; border-radius: 3px; }"
PLAIN_STYLE = "QFrame#variationCell { border: 2px solid transparent; border-radius: 3px; }"


class CellView(ImageView):
    """A cell's picture: a click (a press and release without dragging) says ``clicked``."""

    clicked = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.least = CELL_LEAST
        self.setMinimumSize(self.least)
        self.setCursor(Qt.CursorShape.PointingHandCursor)

    def mouseReleaseEvent(self, event):  # noqa: N802 - Qt's name
        clicked = self._press is not None and event.button() == Qt.MouseButton.LeftButton  # a drag clears it
        super().mouseReleaseEvent(event)
        if clicked:
            self.clicked.emit()


class PictureCell(QFrame):
    """Cell ``index`` of a set: its picture (``view``, not yet laid out: a subclass places it beside its
    caption) and the last frame's image (``image``, (H, W, 3) uint8, None before the first)."""

    clicked = Signal(int)

    def __init__(self, index: int, parent=None):
        super().__init__(parent)
        self.index = index
        self.setObjectName("variationCell")  # CHOSEN_STYLE's and PLAIN_STYLE's frame
        self._chosen = False
        self.setStyleSheet(PLAIN_STYLE)
        self.view = CellView()
        self.view.clicked.connect(lambda: self.clicked.emit(self.index))
        self.image = None

    def show_frame(self, frame: Frame) -> None:
        grid = int(round(len(frame.decisions) ** 0.5))
        self.image = frame.image
        self.view.set_image(to_qimage(frame.image), frame.decisions, grid)

    @property
    def chosen(self) -> bool:
        return self._chosen

    def set_chosen(self, on: bool) -> None:
        """The chosen cell (the current picture) is framed; restyled only when that changes (every frame
        refreshes the captions)."""
        if on != self._chosen:
            self._chosen = on
            self.setStyleSheet(CHOSEN_STYLE if on else PLAIN_STYLE)
