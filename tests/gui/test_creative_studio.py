"""Issue 35, the studio for creative people: a first window that fits the screen, columns that never scroll
sideways, a new picture on every Generate, and the small things a person trips over (pytest-qt, offscreen)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from PySide6.QtCore import QPoint, QRect, Qt  # noqa: E402
from PySide6.QtWidgets import QWidget  # noqa: E402

from support.studio import WAIT, fake_screen, on_steps, open_window, run_job  # noqa: E402


# ---------------------------------------------------------------------------------------- 1. fits the screen


@pytest.mark.parametrize("screen", [(900, 600), (1100, 750), (1920, 1080)])
def test_the_first_window_fits_the_screen_it_opens_on(qtbot, tiny, monkeypatch, screen):
    free = fake_screen(monkeypatch, *screen)
    w = open_window(qtbot, tiny)  # a fresh data folder: no saved geometry, the first start
    qtbot.wait(20)
    g = w.geometry()
    assert free.contains(g), (g, free)  # the whole window, its status line and right column included
    want_w = min(1600, round(0.85 * free.width()))
    want_h = min(1000, round(0.85 * free.height()))
    assert abs(g.width() - want_w) <= 2 and abs(g.height() - want_h) <= 2, (g, want_w, want_h)
    centre = g.center() - free.center()
    assert abs(centre.x()) <= 2 and abs(centre.y()) <= 2
    # every column is on screen and inside the window
    for part in (w.controls, w.canvas, w.stats, w.gallery, w.statusBar()):
        top_left = part.mapTo(w, QPoint(0, 0))
        assert w.rect().contains(QRect(top_left, part.size()).topLeft()), type(part).__name__
    # too narrow for three columns: settings, results and the history share one column as tabs, beside the canvas
    assert w.narrow == (g.width() < w.three_columns_width)
    if w.narrow:
        assert w.top_split.count() == 2 and w.side_tabs.count() == 3 and w.main_split.count() == 1
        assert [w.side_tabs.tabText(i) for i in range(3)] == ["Settings", "Results", "History"]
    else:
        assert w.top_split.count() == 3 and w.main_split.widget(1) is w.gallery
    assert sideways(w) == []


def test_on_a_1080_px_screen_the_first_window_shows_the_whole_trade_off_chart(qtbot, tiny, monkeypatch):
    """The right column scrolled up and down at first start on a 1920×1080 screen and the chart's lower half
    (its points and the fidelity label) was below the fold: the column was laid out at pyqtgraph's preferred
    480-px plot. Now it fits, and the chart takes the column's spare height."""
    fake_screen(monkeypatch, 1920, 1080)
    w = open_window(qtbot, tiny)
    qtbot.wait(50)
    assert not w.narrow
    bar = w.right_scroll.verticalScrollBar()
    assert bar.maximum() == 0, f"the right column scrolls by {bar.maximum()} px"
    bottom = w.chart.mapTo(w.right_scroll.viewport(), QPoint(0, w.chart.height()))
    assert bottom.y() <= w.right_scroll.viewport().height()
    assert w.chart.plot.height() >= 200


def test_a_window_made_wide_again_gets_its_three_columns_back(qtbot, tiny):
    w = open_window(qtbot, tiny)
    w.canvas.set_overlay(True)  # its legend too
    w.resize(760, 520)
    qtbot.wait(20)
    assert w.narrow and w.width() == 760 and sideways(w) == []
    w.side_tabs.setCurrentIndex(1)
    assert w.stats.isVisibleTo(w) and not w.controls.isVisibleTo(w)
    w.resize(1400, 880)
    qtbot.wait(20)
    assert not w.narrow and w.top_split.count() == 3
    assert w.controls.isVisibleTo(w) and w.stats.isVisibleTo(w) and sideways(w) == []
    left, middle, right = (w.top_split.widget(i).geometry() for i in range(3))
    assert left.right() < middle.left() and middle.right() < right.left()


def sideways(w) -> list:
    """What scrolls or sticks out sideways: a side column's horizontal scroll bar, a column narrower than
    what it holds, a widget reaching past its column's right edge; the history strip's horizontal bar."""
    found = []
    for name, scroll in (("controls", w.controls_scroll), ("results", w.right_scroll)):
        if not scroll.isVisibleTo(w):
            continue  # the other tab of a narrow window
        bar, inner, room = scroll.horizontalScrollBar(), scroll.widget(), scroll.viewport().width()
        if bar.isVisible() and bar.maximum() > 0:
            found.append(f"{name}: a horizontal scroll bar (0 … {bar.maximum()})")
        if inner.minimumSizeHint().width() > room:
            found.append(f"{name}: holds {inner.minimumSizeHint().width()} px in {room} px")
        for child in inner.findChildren(QWidget):
            if child.isVisibleTo(w) and child.width() > 0:
                right = child.mapTo(inner, QPoint(child.width(), 0)).x()
                if right > room + 1:
                    found.append(f"{name}: {type(child).__name__}({child.objectName()}) ends at {right} > {room}")
    if w.middle.minimumSizeHint().width() > w.middle.width():
        found.append(f"canvas column: needs {w.middle.minimumSizeHint().width()} px, has {w.middle.width()}")
    if w.gallery.view.horizontalScrollBar().isVisible():
        found.append("history: a horizontal scroll bar")
    return found


@pytest.mark.parametrize("size", [(1100, 750), (1400, 880)])
def test_no_column_scrolls_sideways_whatever_was_generated(qtbot, tiny, monkeypatch, size):
    import time

    w = open_window(qtbot, tiny)
    w.resize(*size)
    qtbot.wait(20)
    c = w.controls
    c.drafter.setCurrentIndex(c.drafter.findData("jacobi"))
    long_prompt = "a very long prompt about a lantern-lit harbour at night with boats and gulls " * 3
    for k, delta in ((w.model_info.vocab_size - 1, 1.0), (0, 0.0), (1, 0.0001), (3, 0.6180)):
        c.set_settings(c.settings().with_(k=k, delta=delta, seed=2**31 - 1, adaptive_delta=True,
                                          delta_decay=0.37))
        run_job(qtbot, w, long_prompt)
        assert sideways(w) == [], (k, delta)
    w.canvas.set_overlay(True)  # the legend in the canvas's toolbar
    c.set_prompt(long_prompt)
    vanilla, current = w.compare()
    qtbot.waitUntil(lambda: w.last_result is not None and w.last_result.job.id == current.id and not w.session.queue.busy,
                    timeout=WAIT)
    qtbot.wait(20)
    assert sideways(w) == [] and "Speed-up" in w.stats.speedup_label.text()
    w.gallery.view.clicked.emit(w.gallery.model.index(1, 0))  # a history click
    qtbot.wait(20)
    assert sideways(w) == [] and "From the history" in w.stats.run_label.text()
    # numbers as long as a record from elsewhere may carry
    w.stats.show_record({"stats": {"tokens": 10**9, "tokens_per_second": 1.5e12, "wall_seconds": 12345678.9,
                                   "target_forwards": 10**9, "mean_accepted_length": 123456.789}},
                        None, "From the history · seed 2147483647 · a title that goes on and on and on")
    qtbot.wait(20)
    assert sideways(w) == []
    on_steps(monkeypatch, lambda job, ev: time.sleep(0.02))
    c.set_prompt("stop me")
    job = w.generate()
    qtbot.waitUntil(lambda: w.session.queue.current is not None and w.session.queue.current.id == job.id, timeout=WAIT)
    qtbot.keyClick(c.prompt, Qt.Key.Key_Escape)  # Esc
    qtbot.waitUntil(lambda: not w.session.queue.busy, timeout=WAIT)
    qtbot.wait(20)
    assert sideways(w) == []
    assert (w.width(), w.height()) == size


# ---------------------------------------------------------------------------------------- 2. a new picture


def test_each_generate_draws_a_new_seed_shows_it_and_records_it(qtbot, tiny):
    from lantern_studio.export import read_png_record

    w = open_window(qtbot, tiny)
    c = w.controls
    assert c.new_seed.isChecked() and c.new_seed.text() == "New seed each Generate"  # on by default
    j1, r1 = run_job(qtbot, w, "a red heart")
    seed1 = j1.settings.seed
    assert c.seed.value() == seed1  # the seed box shows the seed that was used
    assert r1.record()["settings"]["seed"] == seed1 == read_png_record(w.store.entries()[0].path)["settings"]["seed"]
    # Enter in the prompt box draws one too
    c.prompt.setFocus()
    qtbot.keyClick(c.prompt, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: w.last_result.job.id != j1.id and not w.session.queue.busy, timeout=WAIT)
    seed2 = w.last_result.job.settings.seed
    assert seed2 != seed1 and c.seed.value() == seed2
    assert w.finished_record["settings"]["seed"] == seed2
    # a Compare: one fresh seed for both halves
    vanilla, current = w.compare()
    assert vanilla.settings.seed == current.settings.seed == c.seed.value() != seed2
    qtbot.waitUntil(lambda: w.last_result.job.id == current.id and not w.session.queue.busy, timeout=WAIT)


def test_with_the_choice_off_the_seed_stays_and_the_choice_is_remembered(qtbot, tiny):
    from lantern_studio.gui.app import create_main_window

    w = open_window(qtbot, tiny)
    c = w.controls
    c.new_seed.setChecked(False)
    c.seed.setValue(1234)
    j1, _ = run_job(qtbot, w, "same again")
    j2, _ = run_job(qtbot, w, "same again")
    assert j1.settings.seed == j2.settings.seed == c.seed.value() == 1234
    assert w.prefs.get_json("new_seed_each_generate") is False
    w.close()
    w2 = create_main_window(str(tiny))
    qtbot.addWidget(w2)
    assert not w2.controls.new_seed.isChecked() and w2.controls.seed.value() == 1234


def test_a_history_click_restores_the_seed_and_turns_the_choice_off_so_generate_reproduces(qtbot, tiny):
    import numpy as np

    w = open_window(qtbot, tiny)
    c = w.controls
    _, first = run_job(qtbot, w, "keep this one")
    run_job(qtbot, w, "another")
    assert c.new_seed.isChecked() and c.seed.value() != first.job.settings.seed
    entry = next(e for e in w.store.entries() if e.prompt == "keep this one")
    w.gallery.view.clicked.emit(w.gallery.model.index([e.id for e in w.store.entries()].index(entry.id), 0))
    assert c.seed.value() == first.job.settings.seed and not c.new_seed.isChecked()
    message = w.statusBar().currentMessage()
    assert f"seed {first.job.settings.seed}" in message and "New seed each Generate is off" in message
    job, again = run_job(qtbot, w, "keep this one")
    assert job.settings.seed == first.job.settings.seed and np.array_equal(again.image, first.image)


# ---------------------------------------------------------------------------------------- 3. the small items


def test_the_stats_panel_says_cancelled_after_esc_not_running(qtbot, tiny, monkeypatch):
    import time

    w = open_window(qtbot, tiny)
    on_steps(monkeypatch, lambda job, ev: time.sleep(0.05))
    cancelled = []
    w.jobs.answers.job_cancelled.connect(cancelled.append)
    w.controls.set_prompt("stop me")
    job = w.generate()
    qtbot.waitUntil(lambda: w.stats.run_label.text().startswith(f"Running #{job.id}"), timeout=WAIT)
    qtbot.keyClick(w.controls.prompt, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: bool(cancelled) and not w.session.queue.busy, timeout=WAIT)
    note = w.stats.run_label.text()
    assert "Running" not in note and note.startswith(f"Cancelled #{job.id}"), note
    assert "cancelled" in w.canvas.progress.format()


def test_the_canvas_hint_and_tooltips_name_the_key_that_generates(qtbot, tiny, monkeypatch):
    from PySide6.QtGui import QPainter

    from lantern_studio.gui import tooltips

    w = open_window(qtbot, tiny)
    drawn = []
    real = QPainter.drawText

    def record(painter, *args):
        drawn.extend(a for a in args if isinstance(a, str))
        return real(painter, *args)

    monkeypatch.setattr(QPainter, "drawText", record)
    w.canvas.view.grab()  # paints the empty canvas: its hint
    hint = " ".join(drawn)
    assert "press Enter" in hint and "Ctrl+Enter" not in hint, hint
    for tip in (tooltips.PROMPT, tooltips.GENERATE):
        assert "Enter" in tip and "Ctrl+Enter generates" not in tip and "(Ctrl+Enter)" not in tip, tip
    # and Enter is what generates
    w.controls.set_prompt("a red heart")
    w.controls.prompt.setFocus()
    qtbot.keyClick(w.controls.prompt, Qt.Key.Key_Return)
    assert w.session.queue.current is not None or w.started_jobs


def test_the_png_steps_and_the_ui_count_the_same_target_forwards(qtbot, tiny):
    import re

    from PIL import Image

    w = open_window(qtbot, tiny)
    job, r = run_job(qtbot, w, "count me")
    forwards = r.stats["target_forwards"] + 1  # the one definition: target forwards, the prefill's included
    assert forwards == r.recording.steps  # one decoding step per target forward
    with Image.open(w.store.entries()[0].path) as img:
        steps = int(re.search(r"Steps: (\d+)", img.text["parameters"]).group(1))
    assert steps == forwards
    assert w.stats.values["forwards"].text() == str(forwards)
    assert f"{forwards} target forwards" in w.canvas.progress.format()
    w.restore_entry(w.store.entries()[0])
    assert w.stats.values["forwards"].text() == str(forwards)


def test_history_thumbnails_are_whole_with_a_caption_of_prompt_and_seed(qtbot, tiny):
    from lantern_studio.gui.window_layout import HISTORY_MIN_HEIGHT

    w = open_window(qtbot, tiny)
    w.resize(1100, 750)
    long_prompt = "a lantern-lit harbour at night with boats, gulls and a lighthouse"
    job, _ = run_job(qtbot, w, long_prompt)
    qtbot.waitUntil(lambda: not w.gallery.thumbnails_pending, timeout=WAIT)
    # the history strip at its smallest
    sizes = w.main_split.sizes()
    w.main_split.setSizes([sum(sizes) - HISTORY_MIN_HEIGHT, HISTORY_MIN_HEIGHT])
    qtbot.wait(20)
    view = w.gallery.view
    index = w.gallery.model.index(0, 0)
    rect = view.visualRect(index)
    assert view.viewport().rect().contains(rect), (rect, view.viewport().rect())  # not clipped at the bottom
    caption = index.data()
    assert "\n" not in caption and caption.endswith(f" · {job.settings.seed}"), caption  # one line: prompt, seed
    prompt = caption[: -len(f" · {job.settings.seed}")]
    assert prompt.endswith("…") and long_prompt.startswith(prompt[:-1])
    fm = view.fontMetrics()
    assert fm.horizontalAdvance(caption) <= view.gridSize().width() - 4
    assert rect.height() >= view.iconSize().height() + fm.height()  # room for the picture and its caption


def test_export_defaults_to_eight_times_with_crisp_pixels(qtbot, tiny, tmp_path):
    import numpy as np
    from PIL import Image

    w = open_window(qtbot, tiny)
    assert w.export_bar.factor_value() == 8 and w.export_bar.method_value() == "nearest"
    _, r = run_job(qtbot, w, "export me")
    target = w.save_as(str(tmp_path / "out.png"))
    with Image.open(target) as img:
        pixels = np.asarray(img.convert("RGB"))
    assert pixels.shape == (512, 512, 3)
    assert np.array_equal(pixels[::8, ::8], r.image)  # every 8×8 block one source pixel: crisp, not smoothed
    assert np.array_equal(pixels, np.kron(r.image, np.ones((8, 8, 1), dtype=np.uint8)))


def test_help_explains_how_lantern_works_in_words_and_a_picture(qtbot, tiny):
    from lantern_studio.gui.canvas import DECISION_COLOURS

    w = open_window(qtbot, tiny)
    help_menu = next(a.menu() for a in w.menuBar().actions() if a.text() == "&Help")
    texts = [a.text() for a in help_menu.actions()]
    assert "How LANTERN works" in texts and texts[-1] == "About Lantern Studio"
    action = next(a for a in help_menu.actions() if a.text() == "How LANTERN works")
    action.trigger()
    d = w.how_it_works
    qtbot.addWidget(d)
    assert d.isVisible() and d.windowTitle() == "How LANTERN works"
    text = d.text.toPlainText()
    for words in ("drafter", "target", "look-alike codebook neighbours", "δ = 0", "k = 0",
                  "exactly the model's own distribution", "at most δ in total variation", "per token only",
                  "blue", "green", "orange"):
        assert words in text, words
    picture = d.picture.grab().toImage()
    seen = {(picture.pixelColor(x, y).red(), picture.pixelColor(x, y).green(), picture.pixelColor(x, y).blue())
            for x in range(0, picture.width(), 3) for y in range(0, picture.height(), 3)}
    for colour in DECISION_COLOURS.values():  # the canvas overlay's colours, each drawn
        assert (colour.red(), colour.green(), colour.blue()) in seen


FORMULA = ("min(", "p(", "q(", "m(", "H(p)", "log V", "Σ", "≤", "∼", "/ q", "δ_t", "·p")


def test_the_delta_explanation_is_words_not_a_formula(qtbot, tiny):
    w = open_window(qtbot, tiny)
    c = w.controls
    c.drafter.setCurrentIndex(c.drafter.findData("jacobi"))
    cases = [dict(k=8, delta=0.1), dict(k=8, delta=0.1, greedy=True), dict(k=8, delta=0.1, bound="step"),
             dict(k=8, delta=0.1, adaptive_delta=True, delta_decay=0.5), dict(k=0, delta=0.1),
             dict(k=8, delta=0.0)]
    for case in cases:
        c.set_settings(c.settings().with_(**case))
        for text in (c.delta.toolTip(), c.guarantee.text(), c.guarantee.toolTip()):
            assert not [f for f in FORMULA if f in text], (case, [f for f in FORMULA if f in text], text)
    c.set_settings(c.settings().with_(k=8, delta=0.1, greedy=False, bound="lantern"))
    assert "within δ" in c.delta.toolTip() and "can exceed δ" in c.delta.toolTip()


# ---------------------------------------------------------------------------------------- 3. the chart, the drag


def test_the_charts_y_label_is_whole_while_the_model_warms_up(qtbot):
    """Before any model is ready the chart does not know of a quality score; its y label then ran along the
    plot's whole height and past it ("mean accepted length (tokens/forward)", cut at both ends)."""
    from lantern_studio.gui.chart import TradeoffChart

    chart = TradeoffChart()
    qtbot.addWidget(chart)
    chart.resize(360, chart.minimumSizeHint().height())
    chart.show()
    qtbot.wait(20)
    for quality in (False, True):
        chart.set_quality_available(quality)
        qtbot.wait(20)
        axis = chart.plot.getAxis("left")
        assert axis.label.boundingRect().width() <= axis.geometry().height(), (axis.labelText, quality)


def test_after_a_restart_the_chart_is_filled_from_the_history(qtbot, tiny):
    from lantern_studio.gui.app import create_main_window

    w = open_window(qtbot, tiny)
    run_job(qtbot, w, "one")
    run_job(qtbot, w, "two")
    before = [(p.prompt, p.kind, p.tokens_per_forward, p.tokens_per_second) for p in w.chart.points]
    w.close()
    w2 = create_main_window(str(tiny))
    qtbot.addWidget(w2)
    qtbot.waitUntil(lambda: w2.model_info is not None, timeout=WAIT)
    after = [(p.prompt, p.kind, p.tokens_per_forward, p.tokens_per_second) for p in w2.chart.points]
    assert after == before and len(w2.chart.scatter.points()) == 2
    w2.close()


def test_dragging_the_picture_out_writes_what_export_writes(qtbot, tiny, tmp_path):
    """The dragged PNG is scaled as Save scales it (×8 crisp by default; it used to be the ×1 picture)."""
    from PIL import Image

    w = open_window(qtbot, tiny)
    _job, r = run_job(qtbot, w, "drag me")
    h, wd = r.image.shape[:2]
    dragged = w.canvas.view.mime_data().urls()[0].toLocalFile()
    target = tmp_path / "saved.png"
    assert w.save_as(str(target)) == target
    with Image.open(dragged) as a, Image.open(target) as b:
        assert a.size == b.size == (8 * wd, 8 * h)
        assert np.array_equal(np.asarray(a), np.asarray(b))
    # a race lane drags out its own half, at the same size
    w.controls.drafter.setCurrentIndex(w.controls.drafter.findData("jacobi"))
    vanilla, _current = w.compare()
    qtbot.waitUntil(lambda: w.race.race_button.isEnabled(), timeout=WAIT)
    w.race.stop()
    lane = w.race.lanes["vanilla"].view.mime_data().urls()[0].toLocalFile()
    with Image.open(lane) as img:
        assert img.size == (8 * wd, 8 * h) and img.text["parameters"].startswith("drag me")
        assert (np.asarray(img)[::8, ::8] == w.race.pair.vanilla.result.image).all()


# ---------------------------------------------------------------------------------------- 4. Generate ×4


def run_variations(qtbot, w, prompt="a red heart"):
    """Generate ×4 by its button; waits until the four have ended. The set."""
    w.controls.set_prompt(prompt)
    qtbot.mouseClick(w.controls.variations_button, Qt.MouseButton.LeftButton)
    v = w.studio.variations
    assert v is not None and v.prompt == prompt.strip(), w.banner.text()
    qtbot.waitUntil(lambda: v.ended and not w.session.queue.busy, timeout=WAIT)
    qtbot.wait(20)
    return v


def test_generate_x4_decodes_four_new_seeds_into_a_grid_and_a_click_makes_one_current(qtbot, tiny):
    from lantern_studio.export import read_png_record

    w = open_window(qtbot, tiny)
    c = w.controls
    assert c.variations_button.text() == "×4" and c.variations_button.parent() is c.generate_button.parent()
    assert w.variations_action.shortcut().toString() == "Ctrl+4" and "Generate ×4" in w.variations_action.text()
    c.new_seed.setChecked(False)  # four new seeds whatever the choice says
    c.seed.setValue(1234)
    frames = []
    w.jobs.answers.frame.connect(lambda f: frames.append(f.job_id))
    v = run_variations(qtbot, w, "a red heart")
    jobs = [cell.job for cell in v.cells]
    seeds = [j.settings.seed for j in jobs]
    assert len(set(seeds)) == 4 and 1234 not in seeds and [j.id for j in w.started_jobs] == [j.id for j in jobs]
    assert all(j.settings.with_(seed=0) == jobs[0].settings.with_(seed=0) and j.prompt == "a red heart" for j in jobs)
    assert all(j.id in frames for j in jobs)  # each filled in as it decoded
    # the grid: each cell its own picture and its seed; each seed recorded in its history row and PNG
    assert w.views.currentWidget() is w.variations_view and all(cell.done for cell in v.cells)
    for cell, shown in zip(v.cells, w.variations_view.cells):
        wall = cell.result.stats["wall_seconds"]
        assert np.array_equal(shown.image, cell.result.image) and shown.caption.text() == f"seed {cell.seed} · {wall:.2f} s"
        entry = w.store.get(cell.entry_id)
        assert entry.settings["seed"] == cell.seed == read_png_record(entry.path)["settings"]["seed"]
    assert "4 of 4 done" in w.variations_view.title.text()
    # a click on the third: the canvas, stats, seed box and history selection show it, as a history click does
    third = v.cells[2]
    qtbot.mouseClick(w.variations_view.cells[2].view, Qt.MouseButton.LeftButton)
    assert w.views.currentWidget() is w.single_view and np.array_equal(w.canvas.image, third.result.image)
    assert c.seed.value() == third.seed and not c.new_seed.isChecked()  # Generate redraws this one
    assert w.stats.run_label.text().startswith(f"Variation 3 of 4 · seed {third.seed}")
    assert w.gallery.selected().id == third.entry_id and w.finished_record["settings"]["seed"] == third.seed
    assert np.array_equal(w.finished_image, third.result.image) and w.variations_view.cells[2].chosen
    assert f"seed {third.seed}" in w.statusBar().currentMessage()
    # ⊞ Variations: back to the grid, the chosen one framed and still what Save exports
    assert w.back_to_grid.isVisibleTo(w)
    qtbot.mouseClick(w.back_to_grid, Qt.MouseButton.LeftButton)
    assert w.views.currentWidget() is w.variations_view and not w.back_to_grid.isVisibleTo(w)
    assert w.finished_record["settings"]["seed"] == third.seed
    # a plain Generate brings the single canvas back
    job, _ = run_job(qtbot, w, "a red heart")
    assert w.views.currentWidget() is w.single_view and job.settings.seed == third.seed


def test_a_variation_still_decoding_cannot_be_chosen_and_esc_stops_the_rest(qtbot, tiny, monkeypatch):
    import time

    w = open_window(qtbot, tiny)
    on_steps(monkeypatch, lambda job, ev: time.sleep(0.03))
    w.controls.set_prompt("stop the rest")
    v = w.generate_variations()
    first = v.cells[0].job
    qtbot.waitUntil(lambda: v.cells[0].state == "running" and w.variations_view.cells[0].image is not None,
                    timeout=WAIT)
    assert w.views.currentWidget() is w.variations_view
    assert not w.choose_variation(0) and w.views.currentWidget() is w.variations_view  # not done yet
    assert "running" in w.statusBar().currentMessage()
    qtbot.keyClick(w.controls.prompt, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: v.ended and not w.session.queue.busy, timeout=WAIT)
    assert [j.id for j in w.started_jobs] == [first.id]  # the three waiting never ran
    assert [cell.state for cell in v.cells] == ["cancelled"] * 4
    assert all("cancelled" in cell.caption.text() for cell in w.variations_view.cells)
    assert w.stats.run_label.text().startswith(f"Cancelled #{first.id}")


@pytest.mark.parametrize("screen", [(900, 600), (1100, 750)])
def test_on_a_small_screen_the_canvas_gets_most_of_the_height_and_keeps_it_after_a_generate_x4(
        qtbot, tiny, monkeypatch, screen):
    """At 900×600 the history strip took the bottom third and squashed the canvas to a strip (16 % of the
    window's height): in a narrow window the history is a tab and the queue one line."""
    from lantern_studio.gui.picture_cell import CELL_LEAST

    fake_screen(monkeypatch, *screen)
    w = open_window(qtbot, tiny)
    qtbot.wait(20)
    size = (w.width(), w.height())
    assert w.narrow and w.side_tabs.tabText(2) == "History" and not w.queue_view.list.isVisibleTo(w)
    assert w.canvas.height() >= 0.55 * w.height(), (w.canvas.height(), w.height())
    assert w.canvas.view.height() >= w.canvas.view.least.height()  # never below its readable minimum
    for other in (w.replay, w.export_bar, w.queue_view):
        assert w.canvas.height() > 3 * other.height(), type(other).__name__
    run_job(qtbot, w, "one first")
    w.controls.drafter.setCurrentIndex(w.controls.drafter.findData("jacobi"))
    w.compare()
    qtbot.waitUntil(lambda: w.race.race_button.isEnabled(), timeout=WAIT)
    for lane in w.race.lanes.values():  # "vanilla" and "LANTERN" whole (they were "va…" and "LA…" at 900×600)
        assert lane.title.width() >= lane.title.sizeHint().width(), lane.title.text()
    run_variations(qtbot, w, "a lantern-lit harbour at night with boats, gulls and a lighthouse " * 2)
    assert w.views.currentWidget() is w.variations_view and sideways(w) == []
    assert w.views.height() >= 0.55 * w.height() and (w.width(), w.height()) == size
    for cell in w.variations_view.cells:
        assert cell.view.width() >= CELL_LEAST.width() and cell.view.height() >= CELL_LEAST.height()
        assert cell.view.target_rect().height() >= 64  # each picture at least its own size (scale 1)
        assert cell.caption.shown_text() == cell.caption.text()  # the seed and time whole, not "seed 15… · d…"
    assert w.variations_view.title.shown_text() == w.variations_view.title.text()
    # the history tab holds all five, and scrolls only up and down
    w.side_tabs.setCurrentWidget(w.gallery)
    qtbot.wait(20)
    assert w.gallery.model.rowCount() == 7 and sideways(w) == []
    qtbot.mouseClick(w.variations_view.cells[1].view, Qt.MouseButton.LeftButton)
    qtbot.wait(20)
    assert w.gallery.selected().id == w.studio.variations.cells[1].entry_id and sideways(w) == []
    assert w.canvas.height() >= 0.55 * w.height()
    # wide again: the history strip is back under the three columns, the queue with its list
    w.resize(1400, 880)
    qtbot.wait(20)
    assert not w.narrow and w.main_split.widget(1) is w.gallery and w.gallery.isVisibleTo(w)
    assert w.queue_view.list.isVisibleTo(w) and w.side_tabs.count() == 0 and sideways(w) == []
