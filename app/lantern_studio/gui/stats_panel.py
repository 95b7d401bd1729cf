"""Live numbers of the running job, and the side-by-side Compare result."""

from __future__ import annotations

from typing import Optional

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QPixmap
from PySide6.QtWidgets import QFrame, QGridLayout, QGroupBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from .. import fidelity
from .canvas import to_qimage
from .jobs import Frame, JobResult

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
    "forwards": "Target model forward passes, the prefill included",
    "mal": "Mean accepted length: tokens fixed per target forward",
    "relaxed": "Share of tokens accepted only thanks to LANTERN's relaxation",
    "fidelity": fidelity.HELP[0].upper() + fidelity.HELP[1:],
}


def _fmt(v, spec: str, unit: str = "") -> str:
    return "—" if v is None else f"{format(v, spec)}{unit}"


class StatsPanel(QWidget):
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
            value = QLabel("—")
            value.setObjectName("statValue")
            value.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            row, col = divmod(i, 2)
            grid.addWidget(name, row, 2 * col)
            grid.addWidget(value, row, 2 * col + 1)
            self.values[key] = value
        grid.setColumnMinimumWidth(2, 12)
        self.run_label = QLabel("")
        self.run_label.setObjectName("muted")
        grid.addWidget(self.run_label, (len(FIELDS) + 1) // 2, 0, 1, 4)
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
            col.addWidget(pic, 0, Qt.AlignmentFlag.AlignHCenter)
            col.addWidget(text)
            pics.addLayout(col)
            self.compare_images.append(pic)
            self.compare_texts.append(text)
        cl.addLayout(pics)
        self.speedup_label = QLabel("Compare measures the speed-up\non this prompt and seed.")
        self.speedup_label.setObjectName("speedup")
        self.speedup_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        cl.addWidget(self.speedup_label)
        lay.addWidget(self.compare_box)
        self.last_speedup: Optional[float] = None

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

    def update_live(self, f: Frame) -> None:
        fixed = f.decisions[f.decisions != 255]
        relaxed = float((fixed == 2).mean()) if fixed.size else None
        self._set(f.n_fixed, f.total, f.tokens_per_second, f.target_forwards + 1, f.mean_accepted_length, relaxed,
                  f.elapsed)

    def show_result(self, r: JobResult) -> None:
        s = r.stats
        relaxed = float((r.decisions == 2).mean()) if r.decisions.size else None
        self._set(s.get("tokens"), r.decisions.size, s.get("tokens_per_second"), s.get("target_forwards", 0) + 1,
                  s.get("mean_accepted_length"), relaxed, s.get("wall_seconds"), r.score)
        note = f"Done #{r.job.id} · seed {r.job.settings.seed}"
        if r.score is not None:
            note += f" · {fidelity.NAME} {fidelity.format_value(r.score)}"
        self._note(note, r.job.label())

    def show_compare(self, vanilla: JobResult, current: JobResult) -> float:
        for pic, text, r in zip(self.compare_images, self.compare_texts, (vanilla, current)):
            pm = QPixmap.fromImage(to_qimage(r.image)).scaled(
                pic.size(), Qt.AspectRatioMode.KeepAspectRatio, Qt.TransformationMode.FastTransformation)
            pic.setPixmap(pm)
            s = r.stats
            name = "vanilla" if r.job.settings.drafter == "none" else "current"
            text.setText(f"{name}\n{s['wall_seconds']:.2f} s · {s['target_forwards'] + 1} fwd"
                         + ("" if r.score is None else f"\n{fidelity.NAME} {fidelity.format_value(r.score)}"))
        sv, sc = vanilla.stats, current.stats
        speedup = sv["wall_seconds"] / sc["wall_seconds"] if sc["wall_seconds"] > 0 else float("nan")
        fwd = (sv["target_forwards"] + 1) / (sc["target_forwards"] + 1)
        same = np.array_equal(vanilla.image, current.image)
        self.speedup_label.setText(f"Speed-up {speedup:.2f}× (wall time)\n{fwd:.2f}× fewer target forwards"
                                   + (" · identical images" if same else ""))
        self.last_speedup = speedup
        return speedup
