"""Live numbers of the running job, and the side-by-side Compare result."""

from __future__ import annotations

import time
from typing import Optional

import numpy as np
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QPixmap
from PySide6.QtWidgets import (
    QFrame, QGridLayout, QGroupBox, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget,
)

from .. import fidelity
from ..export import target_forwards
from . import theme
from .canvas import to_qimage
from .elided_label import ElidedLabel
from .jobs import Frame, JobResult
from .replay import ReplayError

COMPARE_SLOWMO = 10.0  # the side-by-side replay runs this many times slower than the recorded decodes
VALUE_ROOM = "16384 / 16384"  # each number's room in the grid; a longer one ends in "…" (its tooltip: all of it)

FIELDS = (
    ("tokens", "Tokens"),
    ("tps", "Tokens/s"),
    ("forwards", "Target fwd"),
    ("mal", "Accepted len"),
    ("relaxed", "Relaxed"),
    ("wall", "Wall time"),
    ("fidelity", "Fidelity"),
)
FIELD_TIPS = {
    "forwards": "Target model forward passes, the prefill included: one per decoding step (the PNG's \"Steps\")",
    "mal": "Mean accepted length: tokens fixed per target forward",
    "relaxed": "Share of tokens accepted only thanks to LANTERN's relaxation",
    "fidelity": fidelity.HELP[0].upper() + fidelity.HELP[1:],
}


def _fmt(v, spec: str, unit: str = "") -> str:
    return "—" if v is None else f"{format(v, spec)}{unit}"


class StatsPanel(QWidget):
    replay_failed = Signal(str)  # the side-by-side replay stopped: why (the window shows it)

    def __init__(self, parent=None):
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(8)

        box = QGroupBox("This run")
        grid = QGridLayout(box)
        grid.setHorizontalSpacing(12)
        grid.setVerticalSpacing(5)
        self.values = {}
        for i, (key, label) in enumerate(FIELDS):
            name = QLabel(label)
            name.setObjectName("muted")
            name.setToolTip(FIELD_TIPS.get(key, ""))
            value = ElidedLabel("—", whole_text_tooltip=True)  # a huge number never widens the column
            value.setObjectName("statValue")
            value.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            value.ensurePolished()
            value.setMinimumWidth(value.fontMetrics().horizontalAdvance(VALUE_ROOM) + 4)
            # one field a row: a narrow column (a window too narrow for three columns shows this as a tab)
            grid.addWidget(name, i, 0)
            grid.addWidget(value, i, 1)
            self.values[key] = value
        grid.setColumnStretch(1, 1)
        self.run_label = QLabel("")
        self.run_label.setObjectName("muted")
        self.run_label.setWordWrap(True)  # "Done #12 · seed 2147483647 · prompt fidelity 75%" wraps in its column
        grid.addWidget(self.run_label, len(FIELDS), 0, 1, 2)
        lay.addWidget(box)

        self.compare_box = QGroupBox("Compare: vanilla vs current")
        cl = QVBoxLayout(self.compare_box)
        pics = QHBoxLayout()
        self.compare_images = []
        self.compare_texts = []
        for title in ("vanilla", "current"):
            col = QVBoxLayout()
            pic = QLabel()
            pic.setFixedSize(80, 80)
            pic.setAlignment(Qt.AlignmentFlag.AlignCenter)
            pic.setFrameShape(QFrame.Shape.StyledPanel)
            text = QLabel(title)
            text.setObjectName("muted")
            text.setAlignment(Qt.AlignmentFlag.AlignCenter)
            text.setWordWrap(True)
            col.addWidget(pic, 0, Qt.AlignmentFlag.AlignHCenter)
            col.addWidget(text)
            pics.addLayout(col)
            self.compare_images.append(pic)
            self.compare_texts.append(text)
        cl.addLayout(pics)
        self.speedup_label = QLabel("Compare measures the speed-up\non this prompt and seed.")
        self.speedup_label.setObjectName("speedup")
        self.speedup_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.speedup_label.setWordWrap(True)
        cl.addWidget(self.speedup_label)
        self.replay_button = QPushButton("Replay side by side")
        self.replay_button.setIcon(theme.glyph_icon("play"))
        self.replay_button.setToolTip(f"Both decodes again on one clock, slowed {COMPARE_SLOWMO:g}×: "
                                      "the speed difference as you would see it")
        self.replay_button.setEnabled(False)
        self.replay_button.clicked.connect(self.replay_compare)
        cl.addWidget(self.replay_button)
        lay.addWidget(self.compare_box)
        self.last_speedup: Optional[float] = None
        self._pair: tuple = ()
        self.clock = time.perf_counter  # injectable (tests drive time by hand)
        self._replay_t0 = 0.0
        self.replay_timer = QTimer(self)
        self.replay_timer.setInterval(16)
        self.replay_timer.timeout.connect(self._replay_tick)

    def _set(self, tokens=None, total=None, tps=None, forwards=None, mal=None, relaxed=None, wall=None, score=None):
        v = self.values
        v["tokens"].setText("—" if tokens is None else f"{tokens} / {total}")
        v["tps"].setText(_fmt(tps, ".1f"))
        v["forwards"].setText(_fmt(forwards, "d"))
        v["mal"].setText(_fmt(mal, ".2f"))
        v["relaxed"].setText("—" if relaxed is None else f"{relaxed:.0%}")
        v["wall"].setText(_fmt(wall, ".2f", " s"))
        v["fidelity"].setText(fidelity.format_value(score))

    def _note(self, text: str, tip: str) -> None:
        self.run_label.setText(text)
        self.run_label.setToolTip(tip)

    def start(self, job) -> None:
        self._set()
        self._note(f"Running #{job.id} · seed {job.settings.seed}", job.label())

    def stopped(self, job, how: str, fixed: Optional[int] = None, total: Optional[int] = None) -> None:
        """The running job ended without a picture (``how``: "Cancelled" or "Failed"): the note says so,
        and the numbers stay where it stopped."""
        where = f" at {fixed} / {total} tokens" if fixed is not None and total else ""
        self._note(f"{how} #{job.id}{where} · seed {job.settings.seed} · idle", job.label())

    def update_live(self, f: Frame, score: Optional[float] = None) -> None:
        """A frame's numbers (a live decode or a replayed step); ``score``: the finished image's fidelity,
        shown once the frame is the final one (a replay that reached the end)."""
        fixed = f.decisions[f.decisions != 255]
        relaxed = float((fixed == 2).mean()) if fixed.size else None
        self._set(f.n_fixed, f.total, f.tokens_per_second, target_forwards(f.target_forwards), f.mean_accepted_length, relaxed,
                  f.elapsed, score if f.final else None)

    def show_record(self, record: dict, decisions, title: str) -> None:
        """A history entry's numbers, as they were when it was made (clicking it restores them with it)."""
        s = record.get("stats") if isinstance(record.get("stats"), dict) else {}

        def num(key, kind):
            v = s.get(key)
            return v if isinstance(v, kind) and not isinstance(v, bool) else None

        forwards = num("target_forwards", int)
        size = decisions.size if decisions is not None else None
        relaxed = float((decisions == 2).mean()) if decisions is not None and decisions.size else None
        score = fidelity.of_record(record)
        self._set(num("tokens", int), size or num("tokens", int), num("tokens_per_second", (int, float)),
                  target_forwards(forwards), num("mean_accepted_length", (int, float)), relaxed,
                  num("wall_seconds", (int, float)), score)
        self._note(title + (f" · {fidelity.NAME} {fidelity.format_value(score)}" if score is not None else ""), title)

    def show_result(self, r: JobResult) -> None:
        s = r.stats
        relaxed = float((r.decisions == 2).mean()) if r.decisions.size else None
        self._set(s.get("tokens"), r.decisions.size, s.get("tokens_per_second"), target_forwards(s.get("target_forwards", 0)),
                  s.get("mean_accepted_length"), relaxed, s.get("wall_seconds"), r.score)
        note = f"Done #{r.job.id} · seed {r.job.settings.seed}"
        if r.score is not None:
            note += f" · {fidelity.NAME} {fidelity.format_value(r.score)}"
        self._note(note, r.job.label())

    def _thumb(self, pic: QLabel, image) -> None:
        pic.setPixmap(QPixmap.fromImage(to_qimage(image)).scaled(
            pic.size(), Qt.AspectRatioMode.KeepAspectRatio, Qt.TransformationMode.FastTransformation))

    def _compare_text(self, r: JobResult) -> str:
        s = r.stats
        name = "vanilla" if r.job.settings.drafter == "none" else "current"
        return (f"{name}\n{s['wall_seconds']:.2f} s · {target_forwards(s['target_forwards'])} fwd"
                + ("" if r.score is None else f"\n{fidelity.NAME} {fidelity.format_value(r.score)}"))

    def show_compare(self, vanilla: JobResult, current: JobResult) -> float:
        self.replay_timer.stop()
        self._pair = (vanilla, current)
        for pic, text, r in zip(self.compare_images, self.compare_texts, self._pair):
            self._thumb(pic, r.image)
            text.setText(self._compare_text(r))
        self.replay_button.setEnabled(all(r.recording is not None and r.recording.steps for r in self._pair))
        sv, sc = vanilla.stats, current.stats
        speedup = sv["wall_seconds"] / sc["wall_seconds"] if sc["wall_seconds"] > 0 else float("nan")
        fwd = target_forwards(sv["target_forwards"]) / target_forwards(sc["target_forwards"])
        same = np.array_equal(vanilla.image, current.image)
        self.speedup_label.setText(f"Speed-up {speedup:.2f}× (wall time)\n{fwd:.2f}× fewer target forwards"
                                   + (" · identical images" if same else ""))
        self.last_speedup = speedup
        return speedup

    # ------------------------------------------------------------------ side-by-side replay
    def replay_compare(self) -> None:
        """Replay the Compare pair on one clock: each thumbnail shows its decode as it stood at the same moment."""
        if len(self._pair) != 2:
            return
        self._replay_t0 = self.clock()
        self.replay_timer.start()
        self._replay_tick()

    def _replay_tick(self) -> None:
        try:
            self._replay_frames()
        except ReplayError as e:  # a recording that does not fit its image: stop, keep the finished pair shown
            self.replay_timer.stop()
            self.replay_button.setEnabled(False)
            for pic, text, r in zip(self.compare_images, self.compare_texts, self._pair):
                self._thumb(pic, r.image)
                text.setText(self._compare_text(r))
            self.replay_failed.emit(f"The side-by-side replay cannot be shown: {e}")

    def _replay_frames(self) -> None:
        t = (self.clock() - self._replay_t0) / COMPARE_SLOWMO
        done = True
        for pic, text, r in zip(self.compare_images, self.compare_texts, self._pair):
            rec = r.recording
            step = min(rec.step_at(t), rec.steps - 1)
            frame = rec.frame(step, r.image, r.decisions)
            self._thumb(pic, frame.image)
            name = "vanilla" if r.job.settings.drafter == "none" else "current"
            state = "done" if step >= rec.steps - 1 else f"{frame.n_fixed}/{frame.total} tokens"
            text.setText(f"{name}\n{min(t, rec.duration):.2f} s · {state}")
            done = done and step >= rec.steps - 1
        if done:
            self.replay_timer.stop()
            for text, r in zip(self.compare_texts, self._pair):
                text.setText(self._compare_text(r))
