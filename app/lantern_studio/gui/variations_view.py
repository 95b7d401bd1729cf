"""Generate ×4 as a 2×2 grid of variations in the canvas column: each cell its seed and token count over its
picture, which fills in while that variation decodes. Clicking a finished cell asks the window to make it
the current picture (``chosen``). It owns no decisions: the studio model (:mod:`.state.variations`) says
what each cell holds and which one was chosen, the window says when to redraw."""

from __future__ import annotations

from typing import List, Optional

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtWidgets import QFrame, QGridLayout, QVBoxLayout, QWidget

from .canvas import ImageView, to_qimage
from .elided_label import ElidedLabel
from .jobs import Frame
from .state.variations import COLUMNS, COUNT, VariationSet

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


class VariationCell(QFrame):
    """One variation: a caption line (its place, its seed, how far it got) over its picture."""

    clicked = Signal(int)

    def __init__(self, index: int, parent=None):
        super().__init__(parent)
        self.index = index
        self.setObjectName("variationCell")
        self._chosen = False
        self.setStyleSheet(PLAIN_STYLE)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(3, 2, 3, 3)
        lay.setSpacing(2)
        self.caption = ElidedLabel(f"{index + 1}", whole_text_tooltip=True)  # one line: the height never changes
        self.caption.setObjectName("muted")
        lay.addWidget(self.caption)
        self.view = CellView()
        self.view.clicked.connect(lambda: self.clicked.emit(self.index))
        lay.addWidget(self.view, 1)
        self.image = None  # the picture shown, (H, W, 3) uint8

    def reset(self, caption: str) -> None:
        self.caption.setText(caption)
        self.view.set_image(None, None, 0)
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


class VariationsView(QWidget):
    chosen = Signal(int)  # a cell was clicked: its index (the window asks the studio model whether it can be shown)

    def __init__(self, parent=None):
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(4)
        self.title = ElidedLabel("Generate ×4")
        self.title.setObjectName("sectionTitle")
        self.setToolTip(VariationSet.help())
        lay.addWidget(self.title)
        grid = QGridLayout()
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setSpacing(6)
        self.cells: List[VariationCell] = []
        for i in range(COUNT):
            cell = VariationCell(i)
            cell.clicked.connect(self.chosen)
            grid.addWidget(cell, i // COLUMNS, i % COLUMNS)
            self.cells.append(cell)
        for r in range(COUNT // COLUMNS):
            grid.setRowStretch(r, 1)
        for c in range(COLUMNS):
            grid.setColumnStretch(c, 1)
        lay.addLayout(grid, 1)
        self.vset: Optional[VariationSet] = None
        self._fixed = [None] * COUNT  # each cell's tokens fixed so far (its caption's count)
        self._total = 0

    def start(self, vset: VariationSet, total: int) -> None:
        """A Generate ×4 begins: four empty cells, each captioned with its seed."""
        self.vset, self._total, self._fixed = vset, total, [None] * COUNT
        for cell, state in zip(self.cells, vset.cells):
            cell.reset(state.caption())
            cell.set_chosen(False)
        self.refresh()

    def show_frame(self, index: int, frame: Frame) -> None:
        self._fixed[index], self._total = frame.n_fixed, frame.total
        self.cells[index].show_frame(frame)
        self.refresh()

    def tokens(self, index: int) -> tuple:
        """Cell ``index``'s tokens fixed so far (None before its first frame) and the image's total."""
        return self._fixed[index], self._total

    def refresh(self) -> None:
        """Every caption, the title and the chosen cell's frame, from the set's state."""
        if self.vset is None:
            return
        for cell, state in zip(self.cells, self.vset.cells):
            cell.caption.setText(state.caption(self._fixed[state.index], self._total))
            cell.view.hint = "starting…" if state.state == "running" else state.state  # until its first frame
            cell.set_chosen(state.index == self.vset.chosen)
        self.title.setText(self.vset.summary())

    def set_overlay(self, on: bool) -> None:
        for cell in self.cells:
            cell.view.overlay = on
            cell.view.update()
