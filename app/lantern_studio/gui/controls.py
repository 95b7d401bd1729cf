"""The left panel: prompt, model, speculative-decoding and sampling controls.

``settings()`` reads a :class:`GenerationSettings` from the widgets and
``set_settings()`` puts one back. Combinations that make no sense are
prevented by enabling only what applies (temperature off when greedy, λ only
for the LANTERN++ bound, δ and adaptive δ only for the others, the relaxation
only with a drafter); anything the engine still rejects surfaces as a
SettingsError in the window's banner.
"""

from __future__ import annotations

import random
from typing import Optional

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontDatabase, QGuiApplication, QStandardItemModel
from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QDoubleSpinBox, QFormLayout, QGroupBox, QHBoxLayout, QLabel, QPlainTextEdit,
    QPushButton, QScrollArea, QSpinBox, QToolButton, QVBoxLayout, QWidget,
)

from .. import fidelity
from ..engine.decode_method import EXACT, KNOBS, LANTERN_PP, STEP, VANILLA, DecodeMethod, knobs_of
from ..engine.settings import GenerationSettings
from . import tooltips as tt
from .class_picker import ClassPicker
from .elided_label import ElidedLabel
from ..studio.jobs import ModelInfo
from ..studio.preferences import MAX_PROMPT_HISTORY as MAX_HISTORY
from .prompt_match import MatchLine
from .sliders import LogIntSlider, QuadraticSlider
from .wheel_guard import guard_wheel
from .wrapped_label import WrappedLabel

SEED_MAX = 2**31 - 1
DRAFTER_LABELS = (("eagle", "EAGLE (learned)"), ("jacobi", "Jacobi (training-free)"),
                  ("heads", "Draft heads (learned, parallel)"), ("none", "none (vanilla AR)"))
BOUND_LABELS = (("lantern", "LANTERN (δ per token)"), ("lantern++", "LANTERN++ (λ)"), ("step", "Step-bounded (δ per step)"))
OPEN_FOLDER = "__open__"
SETTINGS_LEAST_HEIGHT = 64  # px: the scrolling settings show at least the drafter (a 900×600 window: and k)


def _has_emoji_font() -> bool:
    return any("emoji" in f.lower() for f in QFontDatabase.families())


def model_facts_help(info: ModelInfo) -> str:
    """What the facts line under the model name means, for its tooltip."""
    lines = [f"{info.grid * info.grid} tokens: the image is drawn as a {info.grid}×{info.grid} grid of codebook entries, "
             f"one target forward per accepted run of tokens; codebook {info.vocab_size}: how many entries each "
             "token chooses from (k counts neighbours among them)."]
    if "eagle" not in info.drafters:
        lines.append("no EAGLE head: this model folder ships no trained EAGLE drafter, so that drafter is off.")
    lines.append(fidelity.HELP[0].upper() + fidelity.HELP[1:] + "." if info.has_score else
                 f"No {fidelity.NAME}: this model folder has no recogniser, so images are not scored.")
    return "\n".join(lines)


def _double(lo, hi, step, decimals, tip) -> QDoubleSpinBox:
    s = QDoubleSpinBox()
    s.setRange(lo, hi)
    s.setSingleStep(step)
    s.setDecimals(decimals)
    s.setToolTip(tip)
    return s


class _LamModeSwitch:
    """``lam_mode`` as the LANTERN++ checkbox it was before the Bound choice: checked
    means bound "lantern++"; unchecking returns to "lantern". Kept for scripts and
    tests written against the checkbox."""

    def __init__(self, panel: "ControlsPanel"):
        self._panel = panel

    def isChecked(self) -> bool:
        return self._panel.bound.currentData() == "lantern++"

    def setChecked(self, on: bool) -> None:
        b = self._panel.bound
        if on != self.isChecked():
            b.setCurrentIndex(b.findData("lantern++" if on else "lantern"))

    def isEnabled(self) -> bool:
        return self._panel.bound.isEnabled()


def _narrow_combo(box: QComboBox, chars: int = 14) -> None:
    """A choice as wide as ``chars`` characters however long its labels: the column stays narrow, the
    list that opens shows each label whole."""
    box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
    box.setMinimumContentsLength(chars)


def _int(lo, hi, tip) -> QSpinBox:
    s = QSpinBox()
    s.setRange(lo, hi)
    s.setToolTip(tip)
    return s


class PromptEdit(QPlainTextEdit):
    """The prompt box: Enter generates (as in every prompt box people know), Shift+Enter starts a new line."""

    submitted = Signal()

    def keyPressEvent(self, event):  # noqa: N802 - Qt's name
        enter = event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
        if enter and not (event.modifiers() & Qt.KeyboardModifier.ShiftModifier):
            if not (event.modifiers() & Qt.KeyboardModifier.ControlModifier):  # Ctrl+Enter: the window's shortcut
                self.submitted.emit()
            event.accept()
            return
        super().keyPressEvent(event)


class ControlsPanel(QWidget):
    generate_requested = Signal()
    variations_requested = Signal()  # Generate ×4
    compare_requested = Signal()
    model_chosen = Signal(object)  # spec (None = bundled), or OPEN_FOLDER
    settings_changed = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("controls")
        self._vocab: Optional[int] = None
        self._defaults = GenerationSettings()
        self._tokens: Optional[int] = None  # image tokens of the loaded model (grid²)
        self._profile = None  # the loaded model's measured LANTERN profile (set_model_info)
        # said under the sliders where the profile shows they do nothing on this model (set by the window)
        self.flat_hint = ""
        lay = QVBoxLayout(self)
        lay.setContentsMargins(10, 10, 0, 10)  # no right margin: the settings' own scroll bar sits there
        lay.setSpacing(10)
        self.model_bar = self._model_bar()  # placed in the window's toolbar
        top = QVBoxLayout()
        top.setContentsMargins(0, 0, 10, 0)  # in line with the groups beside the settings' scroll bar
        top.addWidget(self._prompt_group())
        lay.addLayout(top)
        # the prompt and Generate stay put; the settings under them scroll on their own, k and δ first, so
        # that Generate, k and δ are on screen together in a 900×600 window whatever the match line says
        # (they never were) and scrolling the settings never takes Generate away
        body = QWidget()
        body.setObjectName("controlsBody")
        bl = QVBoxLayout(body)
        bl.setContentsMargins(0, 0, 0, 0)
        bl.setSpacing(10)
        bl.addWidget(self._decoding_group())
        bl.addWidget(self._sampling_group())
        bl.addStretch(1)
        self.settings_scroll = QScrollArea()
        self.settings_scroll.setObjectName("settingsScroll")
        self.settings_scroll.setWidgetResizable(True)
        self.settings_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.settings_scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        self.settings_scroll.setWidget(body)
        bar = self.settings_scroll.verticalScrollBar().sizeHint().width()
        self.settings_scroll.setMinimumWidth(body.minimumSizeHint().width() + bar)  # never sideways
        self.settings_scroll.setMinimumHeight(SETTINGS_LEAST_HEIGHT)
        lay.addWidget(self.settings_scroll, 1)
        self.set_settings(self._defaults)  # sane values until the model's defaults or saved ones arrive
        guard_wheel(self)  # the wheel scrolls the column unless a control was clicked (gui/wheel_guard.py)

    # ------------------------------------------------------------------ building
    def _prompt_group(self) -> QGroupBox:
        g = QGroupBox("Prompt")
        v = QVBoxLayout(g)
        self.prompt = PromptEdit()
        self.prompt.submitted.connect(self.generate_requested)
        self.prompt.setPlaceholderText("Describe what to draw, e.g. “a red heart” — Enter generates")
        self.prompt.setToolTip(tt.PROMPT)
        self.prompt.setTabChangesFocus(True)
        self.prompt.setFixedHeight(54)  # three lines; a 900×600 window keeps Generate, k and δ on screen
        v.addWidget(self.prompt)
        self.match_line = MatchLine()  # a snapping model: what the prompt matched, alternatives, style
        self.prompt.textChanged.connect(lambda: self.match_line.prompt_changed(self.prompt.toPlainText(),
                                                                               self.seed.value()))
        self.match_line.alternative_chosen.connect(self.set_prompt)
        self.match_line.style_changed.connect(self._changed)
        v.addWidget(self.match_line)
        self.class_picker = ClassPicker()  # replaces the prompt box for a class-conditional model
        self.class_picker.setVisible(False)
        self.class_picker.returnPressed.connect(self.generate_requested)
        v.addWidget(self.class_picker)
        self.prompt_group = g
        self.history = QComboBox()
        self.history.setToolTip(tt.HISTORY)
        self.history.addItem("Recent prompts…")
        _narrow_combo(self.history, 20)  # a long recent prompt must not widen the column (the list shows it whole)
        self.history.activated.connect(self._history_picked)
        v.addWidget(self.history)

        buttons = QHBoxLayout()
        self.generate_button = QPushButton("Generate")
        self.generate_button.setObjectName("primary")
        self.generate_button.setToolTip(tt.GENERATE)
        self.generate_button.clicked.connect(self.generate_requested)
        self.variations_button = QPushButton("×4")  # beside Generate: it reads "Generate ×4"
        self.variations_button.setToolTip(tt.VARIATIONS)
        self.variations_button.setAccessibleName("Generate ×4")
        self.variations_button.clicked.connect(self.variations_requested)
        self.compare_button = QPushButton("Compare")
        self.compare_button.setToolTip(tt.COMPARE)
        self.compare_button.clicked.connect(self.compare_requested)
        buttons.addWidget(self.generate_button, 2)
        buttons.addWidget(self.variations_button, 1)
        buttons.addWidget(self.compare_button, 1)
        v.addLayout(buttons)
        return g

    def _seed_rows(self) -> QVBoxLayout:
        """The seed: at the top of Sampling, so that Generate sits right above the decoding group and a
        900×600 window shows Generate, k and δ together (they were never on screen at once)."""
        seeds = QVBoxLayout()
        seeds.setSpacing(6)
        # two rows, so the column stays narrow: the seed and its dice, then what else the seed offers
        seed_row = QHBoxLayout()
        seed_row.addWidget(QLabel("Seed"))
        self.seed = _int(0, SEED_MAX, tt.SEED)
        seed_row.addWidget(self.seed, 1)
        self.dice = QToolButton(text="🎲" if _has_emoji_font() else "Random")
        self.dice.setToolTip(tt.DICE)
        self.dice.clicked.connect(self.randomise_seed)
        seed_row.addWidget(self.dice)
        seeds.addLayout(seed_row)
        self.seed_options = QHBoxLayout()
        self.new_seed = QCheckBox("New seed each Generate")
        self.new_seed.setToolTip(tt.NEW_SEED)
        self.new_seed.setChecked(True)  # a new picture each time, until a person asks for the same one again
        self.seed_options.addWidget(self.new_seed)
        self.copy_seed = QToolButton(text="Copy")
        self.copy_seed.setToolTip(tt.COPY_SEED)
        self.copy_seed.clicked.connect(lambda: QGuiApplication.clipboard().setText(str(self.seed.value())))
        self.seed_options.addStretch(1)
        self.seed_options.addWidget(self.copy_seed)
        seeds.addLayout(self.seed_options)
        return seeds

    def _model_bar(self) -> QWidget:
        bar = QWidget()
        h = QHBoxLayout(bar)
        h.setContentsMargins(4, 0, 4, 0)
        h.setSpacing(8)
        h.addWidget(QLabel("Model"))
        self.model = QComboBox()
        self.model.setToolTip(tt.MODEL)
        self.model.setMinimumContentsLength(28)
        self.model.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.model.activated.connect(self._model_picked)
        h.addWidget(self.model)
        self.model_facts = ElidedLabel("loading…")
        self.model_facts.setObjectName("muted")
        # a long line of facts must not set the window's minimum width: it ends in "…" (tooltip: all of it)
        h.addWidget(self.model_facts, 1)
        return bar

    def _decoding_group(self) -> QGroupBox:
        g = QGroupBox("Speculative decoding (LANTERN)")
        f = QFormLayout(g)
        f.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.drafter = QComboBox()
        self.drafter.setToolTip(tt.DRAFTER)
        _narrow_combo(self.drafter)
        self._drafter_model = QStandardItemModel(self.drafter)
        self.drafter.setModel(self._drafter_model)
        for name, label in DRAFTER_LABELS:
            self.drafter.addItem(label, name)
        f.addRow("Drafter", self.drafter)
        self.k = LogIntSlider(65535)
        self.k.setToolTip(tt.K)
        f.addRow("k", self.k)
        self.delta = QuadraticSlider(1.0, decimals=4, step=0.005)
        self.delta.setToolTip(tt.DELTA)
        f.addRow("δ", self.delta)
        # k and δ right under the drafter, the draft length after them: with Generate right above this group,
        # a 900×600 window shows all three without scrolling (made in this order: Tab follows it)
        self.draft_length = _int(1, 64, tt.DRAFT_LENGTH)
        length_label = QLabel("Draft length")
        length_label.setToolTip(tt.DRAFT_LENGTH)
        f.addRow(length_label, self.draft_length)
        self.bound = QComboBox()
        self.bound.setToolTip(tt.BOUND)
        _narrow_combo(self.bound)
        for name, label in BOUND_LABELS:
            self.bound.addItem(label, name)
        self.lam_mode = _LamModeSwitch(self)
        self.lam = _double(1.0, 100.0, 0.1, 2, tt.LAMBDA)
        f.addRow("Bound", self.bound)
        lam_label = QLabel("λ")
        lam_label.setToolTip(tt.LAMBDA)
        f.addRow(lam_label, self.lam)
        self.adaptive = QCheckBox("Adaptive δ (entropy)")
        self.adaptive.setToolTip(tt.ADAPTIVE)
        self.delta_decay = _double(0.0, 1.0, 0.05, 2, tt.DELTA_DECAY)
        self.delta_decay.setPrefix("×")
        f.addRow(self.adaptive)
        decay_label = QLabel("Along draft")
        decay_label.setToolTip(tt.DELTA_DECAY)
        f.addRow(decay_label, self.delta_decay)
        self.guarantee = WrappedLabel()  # every line shows at the first start too (gui/wrapped_label.py)
        self.guarantee.setObjectName("muted")
        self.guarantee.setToolTip(tt.DELTA)
        f.addRow(self.guarantee)
        for w in (self.drafter, self.bound):
            w.currentIndexChanged.connect(self._changed)
        self.adaptive.toggled.connect(self._changed)
        for w in (self.draft_length, self.lam, self.delta_decay):
            w.valueChanged.connect(self._changed)
        self.k.valueChanged.connect(self._changed)
        self.delta.valueChanged.connect(self._changed)
        return g

    def _sampling_group(self) -> QGroupBox:
        g = QGroupBox("Sampling")
        f = QFormLayout(g)
        f.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        f.addRow(self._seed_rows())
        self.temperature = _double(0.05, 5.0, 0.05, 2, tt.TEMPERATURE)
        self.greedy = QCheckBox("Greedy")
        self.greedy.setToolTip(tt.GREEDY)
        row = QHBoxLayout()
        row.addWidget(self.temperature, 1)
        row.addWidget(self.greedy)
        f.addRow("Temperature", row)
        self.top_k = _int(0, 65536, tt.TOP_K)
        self.top_k.setSpecialValueText("off")
        self.top_p = _double(0.01, 1.0, 0.01, 2, tt.TOP_P)
        row = QHBoxLayout()
        row.addWidget(self.top_k, 1)
        top_p_label = QLabel("Top-p")
        top_p_label.setToolTip(tt.TOP_P)
        row.addWidget(top_p_label)
        row.addWidget(self.top_p, 1)
        f.addRow("Top-k", row)
        self.cfg = _double(0.0, 20.0, 0.25, 2, tt.CFG)
        self.reset = QPushButton("Defaults")
        self.reset.setToolTip(tt.RESET)
        self.reset.clicked.connect(lambda: self.set_settings(self._defaults.with_(seed=self.seed.value())))
        row = QHBoxLayout()
        row.addWidget(self.cfg, 1)
        row.addWidget(self.reset)
        f.addRow("CFG scale", row)
        self.greedy.toggled.connect(self._changed)
        for w in (self.temperature, self.top_k, self.top_p, self.cfg, self.seed):
            w.valueChanged.connect(self._changed)
        return g

    # ------------------------------------------------------------------ state
    def _changed(self, *_):
        self._update_enabled()
        self.settings_changed.emit()

    def _update_enabled(self) -> None:
        spec = self.drafter.currentData() != "none"
        knobs = knobs_of(self.drafter.currentData() or "none", self.bound.currentData() or "lantern")
        self.temperature.setEnabled(not self.greedy.isChecked())
        self.draft_length.setEnabled(spec)
        self.bound.setEnabled(spec)
        for name, widget in (("k", self.k), ("delta", self.delta), ("adaptive_delta", self.adaptive),
                             ("delta_decay", self.delta_decay), ("lam", self.lam)):
            widget.setEnabled(name in knobs)  # which settings the method reads: engine/decode_method.py
        tip = tt.DELTA_STEP if self.bound.currentData() == "step" else tt.DELTA
        profile = self._measured_profile()
        settings = self.settings()
        k_more, delta_more = (("", "") if profile is None else
                              (profile.describe("k", settings), profile.describe("delta", settings)))
        self.k.setToolTip(tt.K + (f"\n\n{k_more}" if k_more else ""))
        self.delta.setToolTip(tip + (f"\n\n{delta_more}" if delta_more else ""))
        self.guarantee.setToolTip(tip + (f"\n\n{delta_more}" if delta_more else ""))
        # the slider's number turns to a warning from the rung where this model's pictures break
        self.k.set_warning_from(profile.breaks_at("k") if profile else None)
        self.delta.set_warning_from(profile.breaks_at("delta") if profile else None)
        # under the sliders: what the current δ gave on this model; k only once it is where pictures break
        measured = []
        if profile is not None:
            measured.append(profile.at("delta", settings.delta))
            if self.k.warning():
                measured.append(profile.at("k", settings.k))
            if self.flat_hint and profile.flat("delta") and not self.delta.warning():
                measured.append(self.flat_hint)
        measured_text = " ".join(t for t in measured if t)
        lines = [self._guarantee_text(), measured_text]
        if self.k.warning() or self.delta.warning():
            lines.reverse()  # the warning first, where a short window shows it without scrolling
        self.guarantee.setText("\n".join(t for t in lines if t))

    def _measured_profile(self):
        """The loaded model's measured LANTERN profile where it speaks to these settings (LANTERN's own bound
        and a drafter), else None."""
        p = self._profile
        if p is None or self.bound.currentData() not in (None, "lantern") or self.drafter.currentData() in (None, "none"):
            return None
        return p

    def _guarantee_text(self) -> str:
        """What the current settings promise, in words (the tooltip says more)."""
        s = self.settings()
        method = DecodeMethod.of(s)  # exact or relaxed, and which family: engine/decode_method.py
        if method.family == VANILLA:
            return "Vanilla: one target forward per token; the picture comes exactly from the model."
        if method.family == EXACT:
            return "Exact (lossless): the picture comes exactly from the model's own distribution, only sooner."
        if method.family == LANTERN_PP:
            return (f"LANTERN++: the look-alikes may add at most {s.lam - 1:g} times the drafted token's own "
                    "chance, for each drafted token.")
        budget = f"δ = {s.delta:g}"
        if s.adaptive_delta:
            budget += ", less where the target is sure of itself"
        if s.delta_decay != 1:
            budget += f", {s.delta_decay:g} times less at each next draft of a chain"
        total = ""
        if self._tokens:
            total = (f"; over the image's {self._tokens} tokens the steps add up to at most "
                     f"{min(1.0, self._tokens * s.delta):g} in total variation")
        if method.family == STEP:
            return f"Step bound: each step stays within {budget} of the model in total variation{total}."
        if s.greedy:
            return (f"Greedy drafts are deterministic: each step stays within {budget} of the model "
                    f"in total variation{total}.")
        return (f"Sampled drafts: the bound ({budget}) holds per token only; a whole step can move further "
                "than δ (the step bound keeps it).")

    def settings(self) -> GenerationSettings:
        bound = self.bound.currentData() or "lantern"
        reads = KNOBS.get(bound, KNOBS["lantern"])  # what this bound reads (engine/decode_method.py)
        return GenerationSettings(
            seed=int(self.seed.value()),
            temperature=round(float(self.temperature.value()), 4),
            top_k=int(self.top_k.value()),
            top_p=round(float(self.top_p.value()), 4),
            cfg_scale=round(float(self.cfg.value()), 4),
            greedy=self.greedy.isChecked(),
            drafter=self.drafter.currentData() or "none",
            draft_length=int(self.draft_length.value()),
            k=int(self.k.value()),
            delta=round(float(self.delta.value()), 4),
            lam=round(float(self.lam.value()), 4) if "lam" in reads else None,
            bound=bound,
            adaptive_delta=self.adaptive.isChecked() and "adaptive_delta" in reads,
            delta_decay=round(float(self.delta_decay.value()), 4) if "delta_decay" in reads else 1.0,
            style=self.match_line.style(),
        )

    def set_settings(self, s: GenerationSettings) -> None:
        widgets = (self.seed, self.temperature, self.top_k, self.top_p, self.cfg, self.greedy, self.drafter,
                   self.draft_length, self.k, self.delta, self.bound, self.adaptive, self.lam, self.delta_decay)
        for w in widgets:
            w.blockSignals(True)
        try:
            self.seed.setValue(max(0, min(SEED_MAX, int(s.seed))))
            if s.temperature > 0:
                self.temperature.setValue(s.temperature)
            self.greedy.setChecked(bool(s.greedy))
            self.top_k.setValue(s.top_k)
            self.top_p.setValue(s.top_p)
            self.cfg.setValue(s.cfg_scale)
            i = self.drafter.findData(s.drafter)
            if i >= 0:
                self.drafter.setCurrentIndex(i)
            self.draft_length.setValue(s.draft_length)
            self.k.setValue(s.k)
            self.delta.setValue(s.delta)
            self.bound.setCurrentIndex(max(0, self.bound.findData(s.effective_bound)))
            if s.lam is not None:
                self.lam.setValue(s.lam)
            self.adaptive.setChecked(bool(s.adaptive_delta))
            self.delta_decay.setValue(s.delta_decay)
            self.match_line.style_box.blockSignals(True)
            self.match_line.set_style(s.style if isinstance(s.style, str) else "")
            self.match_line.style_box.blockSignals(False)
        finally:
            for w in widgets:
                w.blockSignals(False)
        self._changed()

    @staticmethod
    def draw_seed() -> int:
        """A new random seed: what the dice, New seed each Generate and Generate ×4 draw."""
        return random.randint(0, SEED_MAX)

    def randomise_seed(self) -> None:
        self.seed.setValue(self.draw_seed())

    def seed_for_generate(self) -> int:
        """The seed the next Generate (or Compare) uses: a fresh one, shown in the seed box, when New seed
        each Generate is on; else the one the box holds."""
        if self.new_seed.isChecked():
            self.randomise_seed()
        return int(self.seed.value())

    # ------------------------------------------------------------------ prompt history
    @property
    def class_mode(self) -> bool:
        return bool(self.class_picker.names)

    def prompt_text(self) -> str:
        return self.class_picker.text() if self.class_mode else self.prompt.toPlainText()

    def set_prompt(self, text: str) -> None:
        if self.class_mode:
            self.class_picker.setText(text)
        else:
            self.prompt.setPlainText(text)

    def set_class_names(self, names) -> None:
        """A class-conditional model: a class picker with type-ahead instead of the free-text prompt."""
        was = self.class_mode
        self.class_picker.set_names(names)
        on = self.class_mode
        self.class_picker.setVisible(on)
        self.prompt.setVisible(not on)
        self.prompt_group.setTitle("Class (ImageNet)" if on else "Prompt")
        if on and not was:
            self.class_picker.setText("")

    def prompt_history(self) -> list:
        return [self.history.itemText(i) for i in range(1, self.history.count())]

    def set_prompt_history(self, prompts) -> None:
        self.history.blockSignals(True)
        while self.history.count() > 1:
            self.history.removeItem(1)
        for p in list(prompts)[:MAX_HISTORY]:
            self.history.addItem(str(p))
        self.history.setCurrentIndex(0)
        self.history.blockSignals(False)

    def remember_prompt(self, prompt: str) -> None:
        items = [prompt] + [p for p in self.prompt_history() if p != prompt]
        self.set_prompt_history(items)

    def _history_picked(self, index: int) -> None:
        if index > 0:
            self.set_prompt(self.history.itemText(index))
        self.history.setCurrentIndex(0)

    # ------------------------------------------------------------------ models
    def set_model_choices(self, choices, current) -> None:
        """choices: [(label, spec)]; an "Open model folder…" entry is appended."""
        self.model.blockSignals(True)
        self.model.clear()
        for label, spec in choices:
            self.model.addItem(label, spec)
        self.model.addItem("Open model folder…", OPEN_FOLDER)
        i = self.model.findData(current)
        self.model.setCurrentIndex(max(0, i))
        self.model.blockSignals(False)
        self._current_model = current

    def _model_picked(self, index: int) -> None:
        spec = self.model.itemData(index)
        if spec == OPEN_FOLDER:
            self.model.setCurrentIndex(max(0, self.model.findData(getattr(self, "_current_model", None))))
        self.model_chosen.emit(spec)

    def set_model_info(self, info: ModelInfo) -> None:
        self._profile = info.profile  # models/lantern_profile.py: where the sliders break this model's pictures
        self._vocab = info.vocab_size
        self._tokens = info.grid * info.grid
        self._defaults = info.defaults
        for row, (name, _label) in enumerate(DRAFTER_LABELS):
            item = self._drafter_model.item(row)
            item.setEnabled(name in info.drafters)
        if self.drafter.currentData() not in info.drafters:
            self.drafter.setCurrentIndex(self.drafter.findData("jacobi" if "jacobi" in info.drafters else "none"))
        self.k.setMaximum(info.vocab_size - 1)
        self.top_k.setMaximum(info.vocab_size)
        self.set_class_names(info.class_names)
        self.match_line.set_model(info.matcher, info.styles, info.default_style, info.style_previews)
        self.model_facts.setText(
            f"{info.name}: {info.grid}×{info.grid} = {info.grid * info.grid} tokens, codebook {info.vocab_size}"
            + ("" if "eagle" in info.drafters else " · no EAGLE head")
            + (f" · scores {fidelity.NAME}" if info.has_score else "")
        )
        # the facts line is elided in a narrow column: the tooltip holds all of it, and says what each part means
        self.model_facts.setToolTip(self.model_facts.text() + "\n\n" + model_facts_help(info))
        self._update_enabled()

    def set_model_failed(self, message: str) -> None:
        self.model_facts.setText("no model loaded")
