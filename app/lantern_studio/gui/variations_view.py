"""Generate ×4 as a 2×2 grid of variations in the canvas column: each cell its seed and token count over its
picture, which fills in while that variation decodes. Clicking a finished cell asks the window to make it
the current picture (``chosen``). It owns no decisions: the studio model (:mod:`..studio.variations`) says
what each cell holds and which one was chosen, the window says when to redraw."""

from __future__ import annotations

from typing import List, Optional

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QGridLayout, QVBoxLayout, QWidget

from .elided_label import ElidedLabel
from ..studio.jobs import Frame
from .picture_cell import PictureCell
from ..studio.variations import COLUMNS, COUNT, VariationSet

class VariationCell(PictureCell):
    """One variation: a caption line (its place, its seed, how far it got) over its picture."""

    def __init__(self, index: int, parent=None):
        super().__init__(index, parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(3, 2, 3, 3)
        lay.setSpacing(2)
        self.caption = ElidedLabel(f"{index + 1}", whole_text_tooltip=True)  # one line: the height never changes
        self.caption.setObjectName("muted")
        lay.addWidget(self.caption)
        lay.addWidget(self.view, 1)

    def reset(self, caption: str) -> None:
        self.caption.setText(caption)
        self.view.set_image(None, None, 0)
        self.image = None


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
