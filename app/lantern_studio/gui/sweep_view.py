"""A Sweep as a strip of pictures under the canvas: the vanilla run, then one picture per rung of the ladder,
each captioned with its value, tokens per forward, speed-up against the vanilla run and the recogniser's
verdict, and filled in while it decodes (the strip scrolls sideways where the canvas column is too narrow for
every picture with its caption whole). Clicking a finished one asks the window to make it the current
picture (``chosen``); ✕ hides the strip. It owns no decisions: the sweep's state (:mod:`.state.sweep`) says what
each picture holds and which one was chosen, ``gui/sweep_control.py`` says when to redraw."""

from __future__ import annotations

from typing import List, Optional

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QScrollArea, QToolButton, QVBoxLayout, QWidget

from .canvas import to_qimage
from .elided_label import ElidedLabel
from .jobs import Frame
from .state.sweep import SweepSet
from .variations_view import CHOSEN_STYLE, PLAIN_STYLE, CellView

LINES = 3  # a caption's lines: the value; tokens per forward; speed-up and fidelity
SMALL_WINDOW = 800  # a window less tall than this (px) gets pictures at 1×, a taller one at 2×
PICTURE_SMALL, PICTURE_LARGE = 68, 132  # the pictures' height: a 64-px picture at 1× or 2×, with a margin
CELL_LEAST = QSize(48, 40)
# the widest caption lines a rung gets (its value is shorter): a picture is at least this wide, and the strip
# scrolls sideways where the canvas column is narrower than all of them (a small window)
WIDEST_LINES = ("0.00 tok/fwd", "00.00× · fid 100%")


def picture_height(window_height: int) -> int:
    """The strip's picture height in a window ``window_height`` px tall: the canvas keeps most of a small one."""
    return PICTURE_SMALL if window_height < SMALL_WINDOW else PICTURE_LARGE


class SweepCell(QFrame):
    """One rung: its caption lines over its picture."""

    clicked = Signal(int)

    def __init__(self, index: int, parent=None):
        super().__init__(parent)
        self.index = index
        self.setObjectName("variationCell")  # the ×4 grid's frame styles
        self._chosen = False
        self.setStyleSheet(PLAIN_STYLE)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(3, 2, 3, 3)
        lay.setSpacing(0)
        self.lines: List[ElidedLabel] = []
        for i in range(LINES):
            line = ElidedLabel("")
            line.setObjectName("" if i == 0 else "muted")
            lay.addWidget(line)
            self.lines.append(line)
        self.view = CellView()
        self.view.least = CELL_LEAST
        self.view.setMinimumSize(CELL_LEAST)
        self.view.setFixedHeight(PICTURE_SMALL)
        self.view.clicked.connect(lambda: self.clicked.emit(self.index))
        lay.addSpacing(2)
        lay.addWidget(self.view)
        self.image = None  # the picture shown, (H, W, 3) uint8

    def caption(self) -> str:
        """The caption's lines, joined by newlines (what the state said)."""
        return "\n".join(line.text() for line in self.lines if line.text())

    def set_caption(self, text: str, tip: str) -> None:
        parts = text.split("\n")[:LINES]
        for i, line in enumerate(self.lines):
            line.setText(parts[i] if i < len(parts) else "")
        self.setToolTip(tip)

    def show_frame(self, frame: Frame) -> None:
        grid = int(round(len(frame.decisions) ** 0.5))
        self.image = frame.image
        self.view.set_image(to_qimage(frame.image), frame.decisions, grid)

    @property
    def chosen(self) -> bool:
        return self._chosen

    def set_chosen(self, on: bool) -> None:
        if on != self._chosen:
            self._chosen = on
            self.setStyleSheet(CHOSEN_STYLE if on else PLAIN_STYLE)


class SweepStrip(QWidget):
    chosen = Signal(int)  # a picture was clicked: its rung's index (the window asks the state whether it can be shown)

    def __init__(self, parent=None):
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        head = QHBoxLayout()
        head.setContentsMargins(0, 0, 0, 0)
        self.title = ElidedLabel("Sweep", whole_text_tooltip=True)
        self.title.setObjectName("sectionTitle")
        head.addWidget(self.title, 1)
        self.close_button = QToolButton(text="✕")
        self.close_button.setToolTip("Hide the sweep's strip (its pictures stay in the history)")
        self.close_button.setAutoRaise(True)
        self.close_button.clicked.connect(self.hide)
        head.addWidget(self.close_button)
        lay.addLayout(head)
        inner = QWidget()
        self.row = QHBoxLayout(inner)
        self.row.setContentsMargins(0, 0, 0, 0)
        self.row.setSpacing(4)
        self.scroll = QScrollArea()
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        self.scroll.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.scroll.setWidget(inner)
        lay.addWidget(self.scroll)
        self.cells: List[SweepCell] = []
        self.sweep: Optional[SweepSet] = None
        self._fixed: List[Optional[int]] = []
        self._total = 0
        self._overlay = False
        self._height = PICTURE_SMALL

    def start(self, sweep: SweepSet, total: int = 0) -> None:
        """A sweep begins: one empty, captioned picture per rung (the vanilla run first)."""
        for cell in self.cells:
            self.row.removeWidget(cell)
            cell.deleteLater()
        self.cells = []
        for rung in sweep.rungs:
            cell = SweepCell(rung.index)
            cell.clicked.connect(self.chosen)
            cell.view.overlay = self._overlay
            cell.view.setFixedHeight(self._height)
            cell.setMinimumWidth(max(cell.fontMetrics().horizontalAdvance(t) for t in WIDEST_LINES) + 12)
            self.row.addWidget(cell, 1)
            self.cells.append(cell)
        self.sweep, self._total, self._fixed = sweep, total, [None] * len(sweep.rungs)
        self.setToolTip(sweep.help())
        self.refresh()
        self._fit_scroll()

    def _fit_scroll(self) -> None:
        """The strip as tall as its pictures and captions, with room for the sideways scroll bar."""
        # from the cells' own hints: cells just added are not shown yet, so the row's hint would leave them out
        tallest = max([cell.sizeHint().height() for cell in self.cells] + [0])
        bar = self.scroll.horizontalScrollBar().sizeHint().height()
        self.scroll.setFixedHeight(tallest + bar)

    def show_frame(self, index: int, frame: Frame) -> None:
        self._fixed[index], self._total = frame.n_fixed, frame.total
        self.cells[index].show_frame(frame)
        self.refresh()

    def refresh(self) -> None:
        """Every caption, the title and the chosen picture's frame, from the sweep's state."""
        s = self.sweep
        if s is None:
            return
        for cell, rung in zip(self.cells, s.rungs):
            cell.set_caption(s.caption(rung, self._fixed[rung.index], self._total), s.tooltip(rung))
            cell.view.hint = "starting…" if rung.state == "running" else rung.state  # until its first frame
            cell.set_chosen(rung.index == s.chosen)
        self.title.setText(s.summary())

    def fit_height(self, window_height: int) -> None:
        """Pictures at 1× in a small window, 2× in a tall one."""
        h = picture_height(window_height)
        if h != self._height:
            self._height = h
            for cell in self.cells:
                cell.view.setFixedHeight(h)
            self._fit_scroll()

    def set_overlay(self, on: bool) -> None:
        self._overlay = bool(on)
        for cell in self.cells:
            cell.view.overlay = self._overlay
            cell.view.update()
