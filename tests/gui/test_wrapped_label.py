"""The text under the sliders keeps every line at the width it is given (at the first start at 1920×1080 its
first and last lines were cut until a setting changed: the settings column's scroll bar narrowed it after the
first layout)."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from PySide6.QtWidgets import QLabel  # noqa: E402

from lantern_studio.gui.wrapped_label import WrappedLabel  # noqa: E402

TEXT = ("Sampled drafts: the bound (δ = 0.2) holds per token only; a whole step can move further than δ (the step "
        "bound keeps it).\nMeasured on this model at δ 0.2 (k 64): 2.90 tokens/forward, 0% relaxed, recognised 66%; "
        "pictures break from δ 1.")


def keeps_its_lines(label: QLabel) -> bool:
    return label.minimumHeight() >= WrappedLabel.needed_height(label, label.width()) > 0


def test_the_label_asks_the_height_its_text_needs_whenever_its_width_or_text_changes(qtbot):
    label = WrappedLabel(TEXT)
    qtbot.addWidget(label)
    label.show()
    label.resize(300, 20)
    narrow = label.minimumHeight()
    assert keeps_its_lines(label) and narrow >= 4 * label.fontMetrics().lineSpacing()
    label.resize(900, narrow)
    assert keeps_its_lines(label) and label.minimumHeight() < narrow  # wider: fewer lines, less height
    assert label.minimumHeight() == label.needed_height(900) <= 3 * label.fontMetrics().lineSpacing()
    label.resize(300, 20)
    label.setText(TEXT + "\n⚠ On this model pictures break from δ 1.")
    assert keeps_its_lines(label) and label.minimumHeight() > narrow
    plain = QLabel(TEXT)  # the mutant: Qt's own word-wrapped label leaves its minimum height to the layout
    plain.setWordWrap(True)
    qtbot.addWidget(plain)
    plain.show()
    plain.resize(300, 20)
    assert not keeps_its_lines(plain)


def test_the_settings_column_uses_it_for_the_text_under_the_sliders(qtbot):
    from lantern_studio.gui.controls import ControlsPanel

    c = ControlsPanel()
    qtbot.addWidget(c)
    try:
        assert isinstance(c.guarantee, WrappedLabel) and c.guarantee.wordWrap()
    finally:
        c.match_line.shutdown()
