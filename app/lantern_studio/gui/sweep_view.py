"""A Sweep as a strip of pictures under the canvas: the vanilla run, then one picture per rung of the ladder (its
first seed's), each captioned with its value, tokens per forward, speed-up against the vanilla run and the prompt
fidelity over its seeds (the mean, then its 95 % interval and seed count), and filled in while it decodes. A small window gets the compact strip (each picture at 1× with its
caption beside it), a tall one the pictures at 2× under their captions; the strip scrolls sideways where the
canvas column is too narrow for every picture with its caption whole. Clicking a finished one asks the window to make it the current
picture (``chosen``); ✕ hides the strip. It owns no decisions: the sweep's state (:mod:`..studio.sweep`) says what
each picture holds and which one was chosen, ``gui/sweep_control.py`` says when to redraw."""

from __future__ import annotations

from typing import List, Optional

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtWidgets import QBoxLayout, QHBoxLayout, QScrollArea, QToolButton, QVBoxLayout, QWidget

from .elided_label import ElidedLabel
from ..studio.jobs import Frame
from .picture_cell import PictureCell
from ..studio.sweep import SweepSet

LINES = 5  # a caption's lines: the value; tokens per forward; speed-up (of decoding); fidelity; its interval
COMPACT_LINES = 4  # beside a 1× picture: the fidelity and its interval share the last line (a fifth made the
# compact strip taller than a small window can spare)
# A window less tall than this (px) gets the compact strip: each picture at 1× with its caption beside it, so
# that the canvas keeps most of the column (captions over the pictures took 40 % of it at 900×600); a taller
# window gets the pictures at 2× with their captions over them, all six side by side at 1920×1080
SMALL_WINDOW = 800
PICTURE_SMALL, PICTURE_LARGE = 68, 132  # the pictures' height: a 64-px picture at 1× or 2×, with a margin
CELL_LEAST = QSize(48, 40)
# the widest caption lines a rung gets (its value is shorter): its caption is at least this wide, and the strip
# scrolls sideways where the canvas column is narrower than all of them
WIDEST_LINES = ("0.00 tok/fwd", "decoding 00.00×", "fid 100%", "00–100%, 3 seeds")
COMPACT_WIDEST = "fid 100% · 00–100%, 3 seeds"  # the compact strip's fidelity line (it scrolls sideways)


def compact(window_height: int) -> bool:
    """Whether a window ``window_height`` px tall gets the compact strip (captions beside the pictures)."""
    return window_height < SMALL_WINDOW


class SweepCell(PictureCell):
    """One rung: its caption lines over its picture, or beside it (``compact``); ``quality``: the model has a
    meter, so the caption has the fidelity's lines to make room for."""

    def __init__(self, index: int, compact: bool = False, parent=None, quality: bool = True):
        super().__init__(index, parent)
        lay = QBoxLayout(QBoxLayout.Direction.LeftToRight if compact else QBoxLayout.Direction.TopToBottom, self)
        lay.setContentsMargins(3, 2, 3, 3)
        lay.setSpacing(4 if compact else 2)
        text = QVBoxLayout()
        text.setContentsMargins(0, 0, 0, 0)
        text.setSpacing(0)
        self.lines: List[ElidedLabel] = []
        self.compact = compact
        for i in range(COMPACT_LINES if compact else LINES):
            line = ElidedLabel("")
            line.setObjectName("" if i == 0 else "muted")
            text.addWidget(line)
            self.lines.append(line)
        for line in self.lines:
            line.ensurePolished()  # the theme's font, not the default one, measures the captions
        # the fidelity's lines only where the model has a meter: a strip without them keeps its narrower cells
        lines = WIDEST_LINES + ((COMPACT_WIDEST,) if compact else ()) if quality else WIDEST_LINES[:2]
        widest = max(line.fontMetrics().horizontalAdvance(t) for t in lines for line in self.lines) + 8
        # its least size is what every new picture keeps it at (ImageView sets its minimum to ``least``)
        self.view.least = QSize(PICTURE_SMALL, PICTURE_SMALL) if compact else QSize(CELL_LEAST.width(), PICTURE_LARGE)
        self.view.setMinimumSize(self.view.least)
        if compact:
            self.view.setFixedSize(PICTURE_SMALL, PICTURE_SMALL)
            text.addStretch(1)
            lay.addWidget(self.view)
            lay.addLayout(text, 1)
            for line in self.lines:
                line.setMinimumWidth(widest)
        else:
            self.view.setFixedHeight(PICTURE_LARGE)
            lay.addLayout(text)
            lay.addWidget(self.view)
            self.setMinimumWidth(widest + 6)

    def caption(self) -> str:
        """The caption's lines, joined by newlines (what the state said)."""
        return "\n".join(line.text() for line in self.lines if line.text())

    def set_caption(self, text: str, tip: str) -> None:
        """The state's caption lines; beside a picture (compact), those past the fourth join it with " · "."""
        parts = text.split("\n")
        room = len(self.lines)
        parts = parts[:room - 1] + [" · ".join(parts[room - 1:])] if len(parts) > room else parts
        for i, line in enumerate(self.lines):
            line.setText(parts[i] if i < len(parts) else "")
        self.setToolTip(tip)


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
        self.compact = True  # captions beside the pictures (a small window): see fit

    def start(self, sweep: SweepSet, total: int = 0) -> None:
        """A sweep begins: one empty, captioned picture per rung (the vanilla run first)."""
        while self.row.count():  # the last sweep's cells (and the stretch after them)
            old = self.row.takeAt(0).widget()
            if old is not None:
                old.deleteLater()
        self.cells = []
        for rung in sweep.rungs:
            cell = SweepCell(rung.index, self.compact, quality=sweep.quality)
            cell.clicked.connect(self.chosen)
            cell.view.overlay = self._overlay
            self.row.addWidget(cell, 0 if self.compact else 1)
            self.cells.append(cell)
        if self.compact:
            self.row.addStretch(1)  # the cells keep their width, packed to the left
        self.sweep, self._total, self._fixed = sweep, total, [None] * len(sweep.rungs)
        self.setToolTip(sweep.help())
        self.refresh()
        self._fit_scroll()

    def follow(self, index: int) -> None:
        """Scroll the strip to rung ``index`` (the one that starts decoding)."""
        if 0 <= index < len(self.cells):
            self.scroll.ensureWidgetVisible(self.cells[index])

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

    def fit(self, window_height: int) -> None:
        """The layout of the next strip: compact in a small window (captions beside pictures at 1×), else
        captions over pictures at 2×."""
        self.compact = compact(window_height)

    def set_overlay(self, on: bool) -> None:
        self._overlay = bool(on)
        for cell in self.cells:
            cell.view.overlay = self._overlay
            cell.view.update()
