"""Issue 41's 900×600 leftovers (pytest-qt, offscreen, a 900×600 screen): the canvas's progress text fits its bar
(abbreviated, then elided; whole in its tooltip), the banner takes a row over the canvas instead of covering the
Export / Queue row, and a long status-bar message ends in "…" with the whole of it in the tooltip."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from PySide6.QtCore import QPoint, QRect  # noqa: E402
from PySide6.QtGui import QScreen  # noqa: E402

from lantern_studio.gui.progress_bar import PADDING, FittedProgressBar  # noqa: E402
from support.studio import open_window, run_job  # noqa: E402

DONE = "done · %v / %m tokens · 96 target forwards · 1.08 s"
LONG = ("Sweep δ queued: vanilla, then δ = 0, 0.1, 0.2, 0.3, 0.5 (seed 1841433659) · waiting for the model "
        "(compiling decode steps… 1/2) · the pictures fill in one after the other")


@pytest.fixture
def small(qtbot, tiny, monkeypatch):
    """The studio on a 900×600 screen (as tests/gui/test_first_use.py sizes it)."""
    free = QRect(0, 27, 900, 600 - 27)
    monkeypatch.setattr(QScreen, "availableGeometry", lambda self: QRect(free))
    w = open_window(qtbot, tiny)
    qtbot.wait(20)
    assert w.width() <= 900 and w.height() <= 600
    return w


def drawn_fits(bar: FittedProgressBar) -> bool:
    return bar.fontMetrics().horizontalAdvance(bar.text()) <= bar.contentsRect().width() - PADDING


def in_window(widget, window) -> QRect:
    return QRect(widget.mapTo(window, QPoint(0, 0)), widget.size())


def test_the_progress_text_fits_its_bar_and_its_tooltip_holds_it_whole(qtbot, small):
    w = small
    _, r = run_job(qtbot, w, "a cat")
    bar = w.canvas.progress
    whole = bar.full_text()
    n = bar.maximum()
    assert whole.startswith(f"done · {n} / {n} tokens · ") and whole.endswith(f"{r.stats['wall_seconds']:.2f} s")
    assert "target forwards" in whole and bar.toolTip() == whole
    assert drawn_fits(bar), (bar.text(), bar.width())
    # the three tries, on one bar made narrower and narrower: whole, abbreviated, elided
    bar.setFormat(DONE)
    bar.setRange(0, 256)
    bar.setValue(256)
    full = "done · 256 / 256 tokens · 96 target forwards · 1.08 s"
    assert bar.toolTip() == full == bar.full_text()
    seen = set()
    for width in (900, 420, 300, 200, 120):
        bar.setFixedWidth(width)
        qtbot.wait(5)
        text = bar.text()
        assert drawn_fits(bar), (width, text)
        seen.add("whole" if text == full else "short" if text == "done · 256 / 256 tok · 96 fwd · 1.08 s"
                 else "elided" if text.endswith("…") else text)
        assert bar.toolTip() == full
    assert seen == {"whole", "short", "elided"}, seen
    bar.setMinimumWidth(0)
    bar.setMaximumWidth(16777215)


def test_a_race_lanes_progress_text_fits_too(qtbot, small):
    lane = next(iter(small.race.lanes.values()))
    assert isinstance(lane.progress, FittedProgressBar)
    lane.progress.setFixedWidth(180)
    lane.set_state("done · %v / %m tokens · 256 target forwards · 2.31 s")
    assert drawn_fits(lane.progress) and "target forwards" in lane.progress.toolTip()


def test_the_banner_covers_nothing_and_the_export_and_queue_row_stays_whole(qtbot, small):
    w = small
    export, queue = w.export_bar, w.queue_view
    before = export.height(), queue.height()
    w.show_error("The model could not be loaded: a very long reason that wraps over two or three lines in a "
                 "small window, because people read whole sentences", actions=[("Use tiny demo model", lambda: None)])
    qtbot.waitUntil(w.banner.isVisible, timeout=2000)
    qtbot.wait(30)
    banner = in_window(w.banner, w)
    for part in (export, queue, w.views, w.controls_scroll if not w.narrow else w.side_tabs):
        if part.isVisibleTo(w):
            assert not banner.intersects(in_window(part, w)), part
    assert export.isVisibleTo(w) and queue.isVisibleTo(w)
    assert (export.height(), queue.height()) == before  # the canvas gave up the room, not the row
    assert banner.bottom() < in_window(w.views, w).top()  # over the canvas
    assert w.banner.label.heightForWidth(w.banner.label.width()) <= w.banner.label.height() + 1  # whole text
    w.banner.dismiss()
    assert not w.banner.isVisible()


def test_a_long_status_message_ends_in_an_ellipsis_with_the_whole_in_the_tooltip(qtbot, small):
    w = small
    bar = w.statusBar()
    bar.showMessage(LONG)
    shown = bar.shown_message()
    assert bar.currentMessage() == LONG and bar.toolTip() == LONG
    assert shown.endswith("…") and LONG.startswith(shown[:-1])
    assert bar.fontMetrics().horizontalAdvance(shown) <= bar.message_room()
    room = bar.message_room()
    assert room >= 0.4 * bar.width()  # the model's part takes at most half the line
    assert w.status_model.width() <= bar.width() // 2 + 1
    bar.showMessage("Saved a.png")  # a short one: whole, no tooltip
    assert bar.shown_message() == "Saved a.png" and bar.toolTip() == ""
    # the model's part, however long, ends in "…" (main_window puts its whole text in its tooltip); beside a
    # short message it takes the rest of the line, and the message stays whole
    w.status_model.setText(LONG)
    qtbot.wait(20)
    assert w.status_model.width() > bar.width() // 2 and w.status_model.shown_text().endswith("…")
    assert bar.shown_message() == "Saved a.png"
    bar.showMessage(LONG)
    assert bar.fontMetrics().horizontalAdvance(bar.shown_message()) <= bar.message_room()
    bar.clearMessage()  # no message: the model's part takes the rest of the line
    qtbot.wait(20)
    assert w.status_model.width() > 0.8 * bar.width()
    bar.showMessage(LONG)
    qtbot.wait(20)
    assert w.status_model.width() <= bar.width() // 2 + 1 and bar.shown_message().endswith("…")
    # a wider window: the message is whole again
    w.status_model.setText("tiny")
    w.resize(3000, 600)
    qtbot.wait(30)
    assert bar.shown_message() == LONG and bar.toolTip() == ""
