"""Compare as a race: two full-size canvases side by side, vanilla | LANTERN, each with its label, its
clock and its tokens per forward. Each lane decodes live while its half runs (the halves run one after
the other in the one worker thread, so each wall time is its own); once both are done the race replays
on ONE clock from the recorded per-step times (:mod:`..studio.race`), so the faster lane visibly finishes
first, and the speed ratio is shown. Each lane's finished line gives its prompt fidelity where the model
has a meter, marked "1 seed" (a Compare races one seed: :mod:`..studio.compare`). It owns no decisions: the
window says what to show."""

from __future__ import annotations

import time
from typing import Dict, Optional

from PySide6.QtCore import QSize, Qt, QTimer, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from .. import fidelity
from ..export import target_forwards
from . import theme
from .canvas import ImageView, to_qimage
from .elided_label import ElidedLabel
from .progress_bar import FittedProgressBar
from ..studio.jobs import Frame
from ..studio.replay import ReplayError
from ..studio.compare import LANTERN, VANILLA, ComparePair
from ..studio.race import Race

TICK_MS = 16


def _ended(half) -> str:
    """A finished lane's numbers: its wall time, and its fidelity over the one seed it ran ("fid 62% (1 seed)")."""
    iv = half.fidelity
    return f"{half.wall:.2f} s" + ("" if iv is None else f" · fid {fidelity.format_interval(iv)}")


class RaceLane(QWidget):
    """One half of the race: its label, clock and tokens per forward over its canvas and progress."""

    def __init__(self, side: str, parent=None):
        super().__init__(parent)
        self.side = side
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(4)
        top = QHBoxLayout()
        top.setSpacing(6)
        self.title = QLabel(side)  # whole: "vanilla" or "LANTERN" elided to "va…" in a narrow window's lane
        self.title.setObjectName("sectionTitle")
        top.addWidget(self.title)
        self.rate = ElidedLabel("— tokens/forward", whole_text_tooltip=True)
        self.rate.setObjectName("muted")
        self.rate.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        top.addWidget(self.rate, 1)  # the tokens per forward take what is left (its tooltip: all of it)
        self.clock = QLabel("0.00 s")
        self.clock.setObjectName("statValue")
        self.clock.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        self.clock.setToolTip("This half's clock: seconds into its own decode")
        top.addWidget(self.clock)
        lay.addLayout(top)  # one row: the race takes no more height than the single canvas and its replay bar
        self.view = ImageView()
        self.view.least = QSize(96, 40)
        self.view.hint = "waiting"  # a lane with no picture yet: its half has not started (a small lane cut the
        # canvas's long hint at both ends)
        self.view.setMinimumSize(self.view.least)
        lay.addWidget(self.view, 1)
        self.progress = FittedProgressBar()  # its text fits (abbreviated, elided), whole in its tooltip
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setFormat("waiting")
        lay.addWidget(self.progress)
        self.image = None  # the picture shown, (H, W, 3) uint8

    def reset(self, title: str, total: int, state: str = "waiting") -> None:
        self.title.setText(title)
        self.clock.setText("0.00 s")
        self.rate.setText("— tokens/forward")
        self.view.set_image(None, None, 0)
        self.image = None
        self.progress.setRange(0, max(1, total))
        self.progress.setValue(0)
        self.progress.setFormat(state)

    def show_frame(self, frame: Frame, seconds: Optional[float] = None, state: str = "") -> None:
        grid = int(round(len(frame.decisions) ** 0.5))
        self.image = frame.image
        self.view.set_image(to_qimage(frame.image), frame.decisions, grid)
        self.clock.setText(f"{frame.elapsed if seconds is None else seconds:.2f} s")
        self.rate.setText(f"{frame.mean_accepted_length:.2f} tokens/forward · "
                          f"{target_forwards(frame.target_forwards)} fwd")
        self.progress.setRange(0, frame.total)
        self.progress.setValue(frame.n_fixed)
        self.progress.setFormat(state or "%v / %m tokens")

    def set_state(self, text: str) -> None:
        self.progress.setFormat(text)


class RaceView(QWidget):
    replay_failed = Signal(str)  # the race replay stopped: why (the window shows it)

    def __init__(self, parent=None):
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(6)
        lanes = QHBoxLayout()
        lanes.setSpacing(10)
        self.lanes: Dict[str, RaceLane] = {VANILLA: RaceLane("vanilla"), LANTERN: RaceLane("LANTERN")}
        for side in (VANILLA, LANTERN):
            lanes.addWidget(self.lanes[side], 1)
        lay.addLayout(lanes, 1)
        # the ratio and the note wrap (their tooltips say more): cut to "LANTERN 0.90× …" and "Race replay,…"
        # in a 900×600 window they said nothing
        bottom = QHBoxLayout()
        bottom.setSpacing(8)
        self.ratio = QLabel("Compare: vanilla, then LANTERN, on the same prompt and seed")
        self.ratio.setObjectName("speedup")
        self.ratio.setWordWrap(True)
        bottom.addWidget(self.ratio, 3)
        self.note = QLabel("")
        self.note.setObjectName("muted")
        self.note.setWordWrap(True)
        bottom.addWidget(self.note, 2)
        self.race_button = QPushButton("Race again")
        self.race_button.setIcon(theme.glyph_icon("play"))
        self.race_button.setToolTip("Both decodes again on one clock, each at its own recorded pace: "
                                    "the faster one finishes first")
        self.race_button.setEnabled(False)
        self.race_button.clicked.connect(self.play)
        bottom.addWidget(self.race_button)
        lay.addLayout(bottom)
        self.pair: Optional[ComparePair] = None
        self.race: Optional[Race] = None
        self.clock = time.perf_counter  # injectable (tests drive time by hand)
        self._t0 = 0.0
        self.timer = QTimer(self)
        self.timer.setInterval(TICK_MS)
        self.timer.timeout.connect(self._tick)

    # ------------------------------------------------------------------ live
    def start(self, pair: ComparePair, total: int) -> None:
        """A Compare begins: both lanes empty, titled by how each half decodes."""
        self.stop()
        self.pair, self.race = pair, None
        for half in pair.halves:
            self.lanes[half.side].reset(half.name, total)
        self.race_button.setEnabled(False)
        self.ratio.setText("Compare: vanilla first, then " + pair.lantern.name + f", same prompt and seed, both {pair.path}")
        self.ratio.setToolTip("")
        self.note.setText("Each half warms its path untimed, then decodes on its own clock")
        self.note.setToolTip("The halves run one after the other in one worker thread; before its clock starts each "
                             "runs a few untimed steps on its own decode path, so a first-use warm-up is not timed")

    def lane_started(self, side: str, total: int) -> None:
        lane = self.lanes[side]
        lane.progress.setRange(0, max(1, total))
        lane.set_state("warming up (not timed)…")

    def show_frame(self, side: str, frame: Frame) -> None:
        self.lanes[side].show_frame(frame)

    def lane_stopped(self, side: str, how: str) -> None:
        self.lanes[side].set_state(f"{how} at %v / %m tokens")

    def pair_stopped(self, pair: ComparePair) -> None:
        for half in pair.halves:
            if half.state in ("cancelled", "failed"):
                self.lane_stopped(half.side, half.state)
        self.ratio.setText("Compare stopped: no ratio")
        self.note.setText("")

    def pair_done(self, pair: ComparePair) -> None:
        """Both halves are done: the ratio, and the race replay starts."""
        self.pair = pair
        for half in pair.halves:
            lane = self.lanes[half.side]
            lane.set_state(f"done · {_ended(half)} · %v / %m tokens")
        self.ratio.setText(pair.headline())
        quality = pair.quality_words()
        self.ratio.setToolTip(pair.explain() + (f"\n\n{quality}" if quality else ""))
        self.race = Race.of(pair.vanilla.result.recording, pair.lantern.result.recording) if pair.can_race else None
        self.race_button.setEnabled(self.race is not None)
        if self.race is not None:
            self.note.setText(self.race.describe())
            self.note.setToolTip(self.race.describe())
            self.play()

    # ------------------------------------------------------------------ the race replay
    @property
    def playing(self) -> bool:
        return self.timer.isActive()

    def play(self) -> None:
        if self.race is None or self.pair is None:
            return
        self._t0 = self.clock()
        self.timer.start()
        self._tick()

    def stop(self) -> None:
        self.timer.stop()

    def _tick(self) -> None:
        race, pair = self.race, self.pair
        if race is None or pair is None:
            self.stop()
            return
        now = self.clock() - self._t0
        lanes = race.at(now)
        try:
            frames = [half.result.recording.frame(lane.step, half.result.image, half.result.decisions)
                      for half, lane in zip(pair.halves, lanes)]
        except ReplayError as e:  # a recording that does not fit its image: stop, keep the finished pair shown
            self.stop()
            pair.replayable = False
            self.race = None
            self.race_button.setEnabled(False)
            for half in pair.halves:
                r = half.result
                self.lanes[half.side].show_frame(Frame(half.job.id, r.image, r.decisions, int(r.decisions.size),
                                                       int(r.decisions.size), int(r.stats["target_forwards"]), 0,
                                                       float(r.stats["wall_seconds"]), True), state="done")
            self.note.setText("")
            self.replay_failed.emit(f"The race replay cannot be shown: {e}")
            return
        winner = race.winner
        for half, lane, frame in zip(pair.halves, lanes, frames):
            if not lane.done:
                state = "%v / %m tokens"
            else:
                state = ("finished first · " if half.side == winner else "done · ") + _ended(half)
            self.lanes[half.side].show_frame(frame, lane.seconds, state)
        if all(lane.done for lane in lanes):
            self.stop()

    def set_overlay(self, on: bool) -> None:
        for lane in self.lanes.values():
            lane.view.overlay = on
            lane.view.update()
