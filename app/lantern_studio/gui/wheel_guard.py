"""The mouse wheel scrolls a column, not the setting that passes under the pointer.

Scrolling the settings column with the wheel switched Drafter to "none (vanilla AR)" when the combo box
slid under the pointer. Every combo box, spin box and slider of a column is guarded: it takes focus only by
a click or Tab (``StrongFocus``, not Qt's default wheel focus), and while it has no focus a wheel event over
it scrolls the nearest scroll area instead of changing it. A control a person clicked (focused) still
answers the wheel as usual.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QAbstractScrollArea, QAbstractSpinBox, QApplication, QComboBox, QSlider, QWidget

GUARDED = (QComboBox, QAbstractSpinBox, QSlider)


class WheelGuard(QObject):
    """The event filter on each guarded control (one instance serves them all)."""

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if event.type() != QEvent.Type.Wheel or not isinstance(watched, QWidget) or watched.hasFocus():
            return False
        area = _scroll_area_of(watched)
        if area is not None:
            QApplication.sendEvent(area.viewport(), QWheelEvent(event))  # a copy: Qt owns the original
        event.accept()
        return True  # the control itself never sees it


def _scroll_area_of(widget: QWidget):
    w = widget.parentWidget()
    while w is not None and not isinstance(w, QAbstractScrollArea):
        w = w.parentWidget()
    return w


def guard_wheel(root: QWidget) -> WheelGuard:
    """Guard every combo box, spin box and slider under ``root`` (those made later are not: call again)."""
    guard = getattr(root, "_wheel_guard", None)
    if guard is None:
        guard = WheelGuard(root)
        root._wheel_guard = guard
    for kind in GUARDED:
        for control in root.findChildren(kind):
            control.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
            control.removeEventFilter(guard)
            control.installEventFilter(guard)
    return guard
