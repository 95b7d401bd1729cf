"""The replay bar under the canvas: a step scrubber, Play / Pause and a speed.

It owns no pixels: it says which step to show (``step_shown``) and the window
redraws the canvas and the running numbers from the :class:`Recording`. Play
runs on a clock (a QTimer) at the chosen speed, in slow motion by default, since
a whole image of the bundled model decodes in well under a second.
"""

from __future__ import annotations

import time
from typing import Optional

import numpy as np
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QPushButton, QSlider, QVBoxLayout, QWidget

from ..export import target_forwards
from . import theme
from .elided_label import ElidedLabel
from ..studio.replay import Recording, ReplayError

# (label, slow-motion factor: replay seconds per recorded second; None = fixed pace of one step per 0.25 s)
SPEEDS = (("1 step / 0.25 s", None), ("real time ÷ 20", 20.0), ("real time ÷ 5", 5.0), ("real time", 1.0))
STEP_PACE_S = 0.25
TICK_MS = 16


class ReplayBar(QWidget):
    step_shown = Signal(int)  # -1 … steps-1

    def __init__(self, parent=None):
        super().__init__(parent)
        self.recording: Optional[Recording] = None
        self.decisions: Optional[np.ndarray] = None
        self.clock = time.perf_counter  # injectable (tests drive time by hand)
        # two rows: the scrubber alone across the full width (a track to drag at any window size), then the
        # button, the speed and the step text (which wraps rather than pushing the track to its handle)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(2)
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setToolTip("Scrub through the decoding steps")
        self.slider.setMinimumWidth(160)
        self.slider.valueChanged.connect(self._scrubbed)
        outer.addWidget(self.slider)
        lay = QHBoxLayout()
        lay.setSpacing(6)
        outer.addLayout(lay)
        self.play_button = QPushButton("Replay")
        self.play_button.setIcon(theme.glyph_icon("play"))
        self.play_button.setToolTip("Replay the decode step by step, with the decision overlay and running numbers")
        self.play_button.clicked.connect(self.toggle)
        self.play_button.setText("Pause")  # as wide as its wider label, so Play/Pause never moves its neighbours
        widest = self.play_button.sizeHint().width()
        self.play_button.setText("Replay")
        self.play_button.setMinimumWidth(max(widest, self.play_button.sizeHint().width()))
        lay.addWidget(self.play_button)
        self.speed = QComboBox()
        for label, factor in SPEEDS:
            self.speed.addItem(label, factor)
        self.speed.setToolTip("Replay speed: a fixed pace per step, or the recorded timing slowed down")
        lay.addWidget(self.speed)
        self.label = ElidedLabel("", whole_text_tooltip=True)  # one line: the bar's height never changes
        self.label.setObjectName("muted")
        lay.addWidget(self.label, 1)
        self.timer = QTimer(self)
        self.timer.setInterval(TICK_MS)
        self.timer.timeout.connect(self._tick)
        self._t0 = 0.0
        self._from = 0.0  # recorded time (or step) the play started from
        self.load(None, None)

    # ------------------------------------------------------------------ state
    def load(self, recording: Optional[Recording], decisions: Optional[np.ndarray]) -> None:
        """A finished generation to replay (None: nothing, the bar is disabled)."""
        self.stop()
        self.recording, self.decisions = recording, decisions
        ok = recording is not None and recording.steps > 0 and decisions is not None
        for w in (self.play_button, self.slider, self.speed):
            w.setEnabled(ok)
        self.slider.blockSignals(True)
        self.slider.setRange(-1, recording.steps - 1 if ok else -1)
        self.slider.setValue(self.slider.maximum())
        self.slider.blockSignals(False)
        self._describe(self.slider.value())

    @property
    def playing(self) -> bool:
        return self.timer.isActive()

    def toggle(self) -> None:
        if self.playing:
            self.stop()
        else:
            self.play()

    def play(self) -> None:
        if self.recording is None or not self.recording.steps:
            return
        if self.slider.value() >= self.slider.maximum():
            self.slider.setValue(-1)  # from the start
        step = self.slider.value()
        factor = self.speed.currentData()
        self._from = float(step + 1) if factor is None else (self.recording.elapsed[step] if step >= 0 else 0.0)
        self._t0 = self.clock()
        self.play_button.setText("Pause")
        self.play_button.setIcon(theme.glyph_icon("pause"))
        self.timer.start()

    def stop(self) -> None:
        self.timer.stop()
        self.play_button.setText("Replay")
        self.play_button.setIcon(theme.glyph_icon("play"))

    def show_step(self, step: int) -> None:
        self.slider.setValue(step)

    # ------------------------------------------------------------------ clock
    def _tick(self) -> None:
        rec = self.recording
        if rec is None:
            self.stop()
            return
        now = self.clock() - self._t0
        factor = self.speed.currentData()
        if factor is None:
            step = int(self._from + now / STEP_PACE_S) - 1
        else:
            step = rec.step_at(self._from + now / factor)
        step = min(step, rec.steps - 1)
        if step != self.slider.value():
            self.slider.setValue(step)
        if step >= rec.steps - 1:
            self.stop()

    def _scrubbed(self, step: int) -> None:
        self._describe(step)
        self.step_shown.emit(step)

    def _describe(self, step: int) -> None:
        rec = self.recording
        if rec is None or self.decisions is None or not rec.steps:
            self.label.setText("no replay for this image")
            return
        try:
            counts = Recording.counts(rec.decisions_at(step, self.decisions))
        except ReplayError:  # decisions that do not fit: the window says why when it draws the step
            self.label.setText("no replay for this image")
            return
        fwd = target_forwards(rec.target[step] if step >= 0 else 0)
        drafted = counts["exact"] + counts["relaxed"]
        self.label.setText(f"step {step + 1}/{rec.steps} · {sum(counts.values())} tokens · {fwd} fwd · "
                           f"{drafted} accepted ({counts['relaxed']} relaxed)")
