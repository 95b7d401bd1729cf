"""A slider + spin box pair over a non-linear scale.

The slider moves over 0…STEPS positions; a mapping turns a position into a
value. ``log_int_slider`` makes both 1, 2, 3 and tens of thousands reachable
(the neighbour count k); ``quadratic_slider`` gives fine steps near 0 (δ).
The spin box holds the exact value; the two are kept in step.
"""

from __future__ import annotations

import math
from typing import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QDoubleSpinBox, QHBoxLayout, QSlider, QSpinBox, QWidget

STEPS = 1000
WARNING_STYLE = "QAbstractSpinBox { color: #d9534f; font-weight: bold; }"


class MappedSlider(QWidget):
    valueChanged = Signal(object)

    def __init__(self, spin, to_value: Callable[[int], float], to_pos: Callable[[float], int], parent=None):
        super().__init__(parent)
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(0, STEPS)
        self.spin = spin
        self.to_value, self.to_pos = to_value, to_pos
        self._warn_from = None  # from this value on, the number is shown as a warning (set_warning_from)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(8)
        lay.addWidget(self.slider, 1)
        lay.addWidget(self.spin)
        self.slider.valueChanged.connect(self._from_slider)
        self.spin.valueChanged.connect(self._from_spin)

    def _from_slider(self, pos: int) -> None:
        value = self.to_value(pos)
        if self.to_pos(self.spin.value()) == pos:
            return  # the spin box already holds a value on this position (keep its precision)
        self.spin.blockSignals(True)
        self.spin.setValue(value)
        self.spin.blockSignals(False)
        self._show_warning()
        self.valueChanged.emit(self.value())

    def _from_spin(self, value) -> None:
        self.slider.blockSignals(True)
        self.slider.setValue(self.to_pos(value))
        self.slider.blockSignals(False)
        self._show_warning()
        self.valueChanged.emit(self.value())

    def value(self):
        return self.spin.value()

    def set_warning_from(self, value) -> None:
        """From ``value`` on (None: never) the number is shown as a warning: where the loaded model's
        pictures break (models/lantern_profile.py)."""
        self._warn_from = value
        self._show_warning()

    def warning(self) -> bool:
        return self._warn_from is not None and self.value() >= self._warn_from

    def _show_warning(self) -> None:
        want = WARNING_STYLE if self.warning() else ""
        if self.spin.styleSheet() != want:
            self.spin.setStyleSheet(want)

    def setValue(self, value) -> None:
        self.spin.setValue(value)
        self._from_spin(self.spin.value())

    def setToolTip(self, text: str) -> None:  # noqa: N802 - Qt naming
        super().setToolTip(text)
        self.slider.setToolTip(text)
        self.spin.setToolTip(text)


class LogIntSlider(MappedSlider):
    """Integers 0…maximum; position ∝ log(1 + value)."""

    def __init__(self, maximum: int, parent=None):
        spin = QSpinBox()
        spin.setRange(0, maximum)
        spin.setAccelerated(True)
        self._max = maximum
        super().__init__(spin, self._value, self._pos, parent)

    def _value(self, pos: int) -> int:
        return int(round(math.expm1(pos / STEPS * math.log1p(self._max))))

    def _pos(self, value) -> int:
        return int(round(math.log1p(max(0, value)) / math.log1p(self._max) * STEPS)) if self._max > 0 else 0

    def setMaximum(self, maximum: int) -> None:  # noqa: N802
        self._max = max(0, int(maximum))
        self.spin.setMaximum(self._max)
        self._from_spin(self.spin.value())


class QuadraticSlider(MappedSlider):
    """Floats 0…maximum; value = maximum · (position / STEPS)²."""

    def __init__(self, maximum: float = 1.0, decimals: int = 4, step: float = 0.005, parent=None):
        spin = QDoubleSpinBox()
        spin.setRange(0.0, maximum)
        spin.setDecimals(decimals)
        spin.setSingleStep(step)
        self._max = maximum
        self._decimals = decimals
        super().__init__(spin, self._value, self._pos, parent)

    def _value(self, pos: int) -> float:
        return round(self._max * (pos / STEPS) ** 2, self._decimals)

    def _pos(self, value) -> int:
        return int(round(math.sqrt(max(0.0, value) / self._max) * STEPS))
