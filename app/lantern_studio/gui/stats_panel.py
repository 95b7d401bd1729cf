"""Live numbers of the running job, and the Compare result in words (the race itself is in the canvas
column: gui/race_view.py)."""

from __future__ import annotations

from typing import Optional

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGridLayout, QGroupBox, QLabel, QVBoxLayout, QWidget

from .. import fidelity
from ..export import target_forwards
from .elided_label import ElidedLabel
from ..studio.jobs import LOAD_KEY, RECOGNISED_KEY, Frame, JobResult
from ..studio.compare import ComparePair, Half
from ..studio.verdict import busy_words, fidelity_field, fidelity_words, load_of, verdict_tip, verdict_words

VALUE_ROOM = "16384 / 16384"  # each number's room in the grid; a longer one ends in "…" (its tooltip: all of it)

FIELDS = (
    ("tokens", "Tokens"),
    ("tps", "Tokens/s"),
    ("forwards", "Target fwd"),
    ("mal", "Accepted len"),
    ("relaxed", "Relaxed"),
    ("wall", "Wall time"),
    ("fidelity", "Fidelity"),  # the note under the numbers says what the meter saw, in words
)
FIELD_TIPS = {
    "forwards": "Target model forward passes, the prefill included: one per decoding step (the PNG's \"Steps\")",
    "mal": "Mean accepted length: tokens fixed per target forward",
    "relaxed": "Share of tokens accepted only thanks to LANTERN's relaxation",
    "fidelity": fidelity.HELP[0].upper() + fidelity.HELP[1:] + " (where the meter was not calibrated on labelled "
                "pictures: the asked emoji's rank among those the model draws, no percentage)",
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

        self.compare_box = QGroupBox("Compare: vanilla vs LANTERN")
        cl = QVBoxLayout(self.compare_box)
        self.compare_texts = []
        for title in ("vanilla", "LANTERN"):
            text = QLabel(title)
            text.setObjectName("muted")
            text.setWordWrap(True)
            cl.addWidget(text)
            self.compare_texts.append(text)
        self.speedup_label = QLabel("Compare races vanilla against the current settings\non this prompt and seed.")
        self.speedup_label.setObjectName("speedup")
        self.speedup_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.speedup_label.setWordWrap(True)
        cl.addWidget(self.speedup_label)
        lay.addWidget(self.compare_box)
        self.last_speedup: Optional[float] = None

    def _set(self, tokens=None, total=None, tps=None, forwards=None, mal=None, relaxed=None, wall=None,
             quality: str = "—"):
        """The grid's numbers; ``quality``: the Fidelity field's text (studio/verdict.fidelity_field)."""
        v = self.values
        v["tokens"].setText("—" if tokens is None else f"{tokens} / {total}")
        v["tps"].setText(_fmt(tps, ".1f"))
        v["forwards"].setText(_fmt(forwards, "d"))
        v["mal"].setText(_fmt(mal, ".2f"))
        v["relaxed"].setText("—" if relaxed is None else f"{relaxed:.0%}")
        v["wall"].setText(_fmt(wall, ".2f", " s"))
        v["fidelity"].setText(quality)

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

    def update_live(self, f: Frame, record: Optional[dict] = None) -> None:
        """A frame's numbers (a live decode or a replayed step); ``record``: the finished image's record, whose
        fidelity (or rank) is shown once the frame is the final one (a replay that reached the end)."""
        fixed = f.decisions[f.decisions != 255]
        relaxed = float((fixed == 2).mean()) if fixed.size else None
        self._set(f.n_fixed, f.total, f.tokens_per_second, target_forwards(f.target_forwards), f.mean_accepted_length, relaxed,
                  f.elapsed, fidelity_field(record) if f.final and record else "—")

    def show_record(self, record: dict, decisions, title: str) -> None:
        """A history entry's numbers, as they were when it was made (clicking it restores them with it)."""
        s = record.get("stats") if isinstance(record.get("stats"), dict) else {}

        def num(key, kind):
            v = s.get(key)
            return v if isinstance(v, kind) and not isinstance(v, bool) else None

        forwards = num("target_forwards", int)
        size = decisions.size if decisions is not None else None
        relaxed = float((decisions == 2).mean()) if decisions is not None and decisions.size else None
        self._set(num("tokens", int), size or num("tokens", int), num("tokens_per_second", (int, float)),
                  target_forwards(forwards), num("mean_accepted_length", (int, float)), relaxed,
                  num("wall_seconds", (int, float)), fidelity_field(record))
        self._note(title + self._words(record), title + self._tip(record))

    def show_result(self, r: JobResult) -> None:
        s = r.stats
        relaxed = float((r.decisions == 2).mean()) if r.decisions.size else None
        record = {RECOGNISED_KEY: r.verdict, fidelity.KEY: r.score, LOAD_KEY: None if r.load is None else list(r.load)}
        self._set(s.get("tokens"), r.decisions.size, s.get("tokens_per_second"), target_forwards(s.get("target_forwards", 0)),
                  s.get("mean_accepted_length"), relaxed, s.get("wall_seconds"), fidelity_field(record))
        note = f"Done #{r.job.id} · seed {r.job.settings.seed}"
        self._note(note + self._words(record), r.job.label() + self._tip(record))

    @staticmethod
    def _words(record: dict) -> str:
        """Where the asked emoji ranks, the prompt fidelity where the meter is calibrated (or the record has no
        verdict) and whether the machine was busy, for the note under the numbers."""
        parts = [verdict_words(record), fidelity_words(record), busy_words(load_of(record))]
        return "".join(f" · {p}" for p in parts if p)

    @staticmethod
    def _tip(record: dict) -> str:
        tip = verdict_tip(record)
        load = load_of(record)
        if busy_words(load):
            tip += ("\n" if tip else "") + (f"When this decode ended the machine's 1-minute load average was "
                                              f"{load[0]:.1f} on {load[1]} CPUs: other work competed for the cores, so "
                                              "its wall time is longer than on a quiet machine.")
        return "\n\n" + tip if tip else ""

    @staticmethod
    def _compare_text(half: Half) -> str:
        s = half.result.stats
        quality = half.fidelity_words()  # one seed a side: "prompt fidelity 62% (1 seed)"
        return (f"{half.name}: {s['wall_seconds']:.2f} s · {target_forwards(s['target_forwards'])} fwd"
                + (f" · {quality}" if quality else ""))

    def show_compare(self, pair: ComparePair) -> float:
        """A finished Compare's numbers: each half's time, forwards and fidelity (one seed), the ratio."""
        for text, half in zip(self.compare_texts, pair.halves):
            text.setText(self._compare_text(half))
            text.setToolTip(pair.quality_words())
        self.speedup_label.setText(pair.summary())
        self.speedup_label.setToolTip(pair.explain())
        self.last_speedup = pair.speedup
        return pair.speedup
