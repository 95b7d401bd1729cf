"""Issue 41, the studio on first use: an honest Compare, ×4 seeds never seen before, a wheel that scrolls,
numbers in words, and the 900×600 finish (status messages, banners, the history highlight). pytest-qt,
offscreen, on a tiny random model; the Qt-free rules (studio/) as plain Python."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from PySide6.QtCore import QPoint, QPointF, QRect, Qt  # noqa: E402
from PySide6.QtGui import QWheelEvent  # noqa: E402
from PySide6.QtWidgets import QAbstractScrollArea, QApplication  # noqa: E402

from lantern_studio.engine.settings import GenerationSettings  # noqa: E402
from lantern_studio.export import read_png_record  # noqa: E402
from lantern_studio.gui import banner as banner_module  # noqa: E402
from lantern_studio.studio import engine_host  # noqa: E402
from lantern_studio.studio.status import MIN_SHOW, StatusQueue  # noqa: E402
from lantern_studio.studio.display import Studio  # noqa: E402
from lantern_studio.studio.verdict import (  # noqa: E402
    busy_words, fidelity_field, fidelity_words, load_of, verdict_tip, verdict_words,
)
from support.studio import COLD, WAIT, cold_vanilla_path, fake_screen, open_window, run_job  # noqa: E402


# ------------------------------------------------------------------------------- 2. an honest Compare

def test_compare_measures_decoding_only_when_the_vanilla_path_is_slow_to_warm_up(qtbot, tiny, monkeypatch):
    """The first Compare of a session reported 8.65× because vanilla's path warmed up inside its clock.
    Here its first one-token step sleeps COLD seconds once: the warm-up takes it, the timed decode does not."""
    w = open_window(qtbot, tiny)
    cold = cold_vanilla_path(monkeypatch, w)
    w.controls.set_prompt("an honest race")
    vanilla, current = w.compare()
    assert vanilla.settings.seed == current.settings.seed and vanilla.steps == current.steps == "eager"
    assert vanilla.warm and current.warm
    qtbot.waitUntil(lambda: w.race.pair is not None and w.race.pair.complete, timeout=WAIT)
    pair = w.race.pair
    assert not cold[0], "the slow first step never ran"
    assert pair.vanilla.warm >= COLD  # the wait was measured, apart …
    assert pair.vanilla.wall < COLD  # … and is not in the clock
    assert pair.speedup == pytest.approx(pair.vanilla.wall / pair.lantern.wall)
    assert pair.vanilla.path == pair.lantern.path == "eager"
    # the labels say what the ratio compares, and show the warm-up apart
    assert "decoding only, both eager" in w.race.ratio.text() and "warm-up excluded" not in w.race.ratio.text()
    assert f"vanilla {pair.vanilla.warm:.1f} s" in w.stats.speedup_label.text()
    assert "decoding wall time, both eager" in w.stats.speedup_label.text()
    assert "untimed" in w.race.ratio.toolTip() and "warm-up not counted" in w.race.ratio.toolTip()


def test_both_halves_of_a_compare_are_asked_for_on_one_path():
    studio = Studio()
    settings = GenerationSettings(drafter="jacobi", k=3, delta=0.2, seed=7)
    for path in ("compiled", "eager"):
        pair = studio.submit_compare("x", settings, None, path)
        assert pair.vanilla.job.steps == pair.lantern.job.steps == path and pair.path == path
        assert pair.vanilla.job.warm and pair.lantern.job.warm


# ------------------------------------------------------------------------------- 3. ×4 seeds are new


def test_generate_x4_never_repeats_a_seed_of_the_session_and_says_its_seeds(qtbot, tiny):
    w = open_window(qtbot, tiny)
    c = w.controls
    c.new_seed.setChecked(False)
    c.seed.setValue(1841433659)
    run_job(qtbot, w, "first")
    c.seed.setValue(141797050)
    w.controls.set_prompt("compare")
    vanilla, current = w.compare()
    qtbot.waitUntil(lambda: not w.session.queue.busy, timeout=WAIT)
    # the draws a person's ×4 gets: the session's seeds come first, and come again
    draws = iter([1841433659, 141797050, 11, 1841433659, 12, 12, 13, 14, 11, 12, 13, 14, 141797050, 15, 16, 17, 18])
    c.draw_seed = lambda: next(draws)
    c.set_prompt("four")
    v = w.generate_variations()
    assert v.seeds == [11, 12, 13, 14]
    assert "seeds 11, 12, 13, 14" in w.statusBar().currentMessage()
    qtbot.waitUntil(lambda: v.ended and not w.session.queue.busy, timeout=WAIT)
    assert [cell.caption.text().split(" · ")[0] for cell in w.variations_view.cells] == [
        f"seed {s}" for s in (11, 12, 13, 14)]
    again = w.generate_variations()  # nor a seed of the last ×4
    assert again.seeds == [15, 16, 17, 18]
    w.studio.cancel_all()
    qtbot.waitUntil(lambda: not w.session.queue.busy, timeout=WAIT)


# ------------------------------------------------------------------------------- 4. the wheel scrolls


def wheel(widget, down=True) -> None:
    centre = QPointF(widget.width() / 2, widget.height() / 2)
    event = QWheelEvent(centre, QPointF(widget.mapToGlobal(centre.toPoint())), QPoint(0, 0),
                        QPoint(0, -120 if down else 120), Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier,
                        Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(widget, event)


def test_the_wheel_over_an_unfocused_setting_scrolls_the_column_and_changes_nothing(qtbot, tiny):
    w = open_window(qtbot, tiny)
    w.resize(760, 520)  # narrow: the settings column is a tab that scrolls
    qtbot.wait(20)
    c = w.controls
    w.side_tabs.setCurrentWidget(w.controls_scroll)
    qtbot.wait(20)
    outer = w.controls_scroll.verticalScrollBar()
    outer.setValue(0)
    bar = c.settings_scroll.verticalScrollBar()  # the settings under the prompt and Generate scroll
    assert bar.maximum() > 0
    before = c.settings()
    drafter = c.drafter.currentIndex()
    for control in (c.drafter, c.bound, c.temperature, c.k.spin, c.k.slider, c.delta.slider, c.seed):
        assert control.focusPolicy() == Qt.FocusPolicy.StrongFocus, control
        assert not control.hasFocus()
        bar.setValue(0)
        wheel(control)
        assert bar.value() > 0, f"{type(control).__name__}: the column did not scroll"
    assert c.settings() == before and c.drafter.currentIndex() == drafter
    # a control a person clicked (focused) answers the wheel as before
    w.activateWindow()
    c.bound.setFocus(Qt.FocusReason.MouseFocusReason)
    qtbot.waitUntil(c.bound.hasFocus, timeout=WAIT)
    index = c.bound.currentIndex()
    wheel(c.bound, down=index == 0)
    assert c.bound.currentIndex() != index


# ------------------------------------------------------------------------------- 5. numbers in words


def test_verdict_words_give_the_asked_emojis_rank_and_a_percentage_only_where_the_meter_is_calibrated():
    first = {"recognised": {"level": "identity", "seen": "octopus", "asked": "octopus", "rank": 1, "classes": 1349,
                            "probability": 0.87, "calibrated": True}, "prompt_fidelity": 0.87}
    assert verdict_words(first) == "octopus: ranked first of 1,349 emoji this model draws"
    assert fidelity_words(first) == "prompt fidelity 87%" and fidelity_field(first) == "87%"
    third = {"recognised": {"level": "identity", "seen": "dog face", "asked": "octopus", "rank": 3, "classes": 1349,
                            "probability": 0.12, "calibrated": True}}
    assert verdict_words(third) == "octopus ranks 3 of 1,349; the meter sees dog face first"
    assert fidelity_words(third) == "prompt fidelity 12%"
    # uncalibrated: the rank alone, no percentage (in the note nor in the grid)
    raw = {"recognised": dict(third["recognised"], calibrated=False), "prompt_fidelity": 0.12}
    assert verdict_words(raw) == verdict_words(third) and fidelity_words(raw) == ""
    assert fidelity_field(raw) == "rank 3/1,349" and "%" not in fidelity_field(raw)
    assert "not calibrated" in verdict_tip(raw) and "calibrated on pictures a person marked" in verdict_tip(first)
    assert "subgroup" not in verdict_tip(first) and "subgroup" not in verdict_tip(raw)  # an emoji, not a subgroup
    # a record from before the meter: its verdict has no "calibrated" (its probability was the subgroup's)
    old = {"recognised": {"level": "identity", "seen": "cat face", "asked": "cat face", "rank": 1, "classes": 1349,
                          "seen_probability": 0.4, "probability": 0.4}, "prompt_fidelity": 0.4}
    assert verdict_words(old) == "cat face: ranked first of 1,349 emoji this model draws"
    assert fidelity_words(old) == "" and fidelity_field(old) == "rank 1/1,349"
    subgroup = {"recognised": {"level": "subgroup", "seen": "animal-mammal", "asked": "animal-mammal", "rank": 1,
                               "classes": 98}}
    assert verdict_words(subgroup) == "animal-mammal: ranked first of 98 subgroups the recogniser knows"
    # no verdict at all (a plain scorer, an older record): the stored fidelity, as before
    assert fidelity_words({"prompt_fidelity": 0.75}) == "prompt fidelity 75%" and fidelity_field({"score": 0.5}) == "50%"
    assert fidelity_words({}) == "" and fidelity_field({}) == "—" and verdict_tip({}) == ""
    bad_p = {"recognised": dict(first["recognised"], probability=float("nan"))}
    assert fidelity_words(bad_p) == "" and fidelity_field(bad_p) == "rank 1/1,349"


def test_verdict_and_load_words_read_only_what_they_can_trust():
    for bad in ({}, {"recognised": 3}, {"recognised": {"seen": "x", "asked": "y", "rank": 0, "classes": 5}},
                {"recognised": {"seen": "x", "asked": "y", "rank": 9, "classes": 5}},
                {"recognised": {"seen": "", "asked": "y", "rank": 1, "classes": 5}},
                {"recognised": {"seen": "x", "asked": "y", "rank": True, "classes": 5}}):
        assert verdict_words(bad) == ""
    assert load_of({"load_average": [3.1, 2]}) == (3.1, 2) and busy_words((3.1, 2)) == "machine busy: load 3.1 on 2 CPUs"
    assert busy_words((1.9, 2)) == "" and busy_words(None) == ""
    for bad in ({"load_average": [float("nan"), 2]}, {"load_average": [1.0, 0]}, {"load_average": "high"},
                {"load_average": [1.0, 2, 3]}, {"load_average": [-1, 2]}):
        assert load_of(bad) is None


class Judge:
    """A quality meter stand-in with a verdict: the asked cat face is its first choice among 1,349, its probability
    calibrated on labelled pictures (``calibrated``) or not."""

    def __init__(self, calibrated: bool = True):
        self.calibrated = calibrated

    def __call__(self, image, prompt):
        return 0.4

    def verdict(self, image, prompt):
        return {"level": "identity", "asked": "cat face", "seen": "cat face", "rank": 1, "classes": 1349,
                "probability": 0.4, "calibrated": self.calibrated}


def test_the_stats_say_what_the_recogniser_saw_and_when_the_machine_was_busy(qtbot, tiny, monkeypatch):
    w = open_window(qtbot, tiny)
    w.jobs.worker.pipeline.scorer = Judge()
    monkeypatch.setattr(engine_host, "_load", lambda: (5.0, 2))
    job, r = run_job(qtbot, w, "a cat")
    note = w.stats.run_label.text()
    assert "cat face: ranked first of 1,349 emoji this model draws · prompt fidelity 40%" in note
    assert w.stats.values["fidelity"].text() == "40%" and "calibrated on pictures" in w.stats.run_label.toolTip()
    assert "machine busy: load 5.0 on 2 CPUs" in note and "competed for the cores" in w.stats.run_label.toolTip()
    saved = read_png_record(w.store.entries()[0].path)
    assert saved["recognised"]["seen"] == "cat face" and saved["load_average"] == [5.0, 2]
    # a history click says the same from the record
    w.stats.run_label.setText("")
    w.gallery.view.clicked.emit(w.gallery.model.index(0, 0))
    assert "cat face: ranked first of 1,349 emoji this model draws · prompt fidelity 40%" in w.stats.run_label.text()
    # a meter not calibrated on labelled pictures: the rank alone, no percentage anywhere in the panel
    w.jobs.worker.pipeline.scorer = Judge(calibrated=False)
    run_job(qtbot, w, "a cat")
    note = w.stats.run_label.text()
    assert "cat face: ranked first of 1,349 emoji this model draws" in note and "%" not in note
    assert w.stats.values["fidelity"].text() == "rank 1/1,349" and "not calibrated" in w.stats.run_label.toolTip()


# ------------------------------------------------------------------------------- 6. the 900×600 finish


def test_at_900x600_generate_k_and_delta_are_on_screen_together(qtbot, tiny, monkeypatch):
    fake_screen(monkeypatch, 900, 600)
    w = open_window(qtbot, tiny)
    qtbot.wait(20)
    assert w.narrow
    w.side_tabs.setCurrentWidget(w.controls_scroll)
    qtbot.wait(20)
    c = w.controls
    assert w.controls_scroll.verticalScrollBar().value() == 0
    assert c.settings_scroll.verticalScrollBar().value() == 0
    for part in (c.generate_button, c.variations_button, c.compare_button, c.k, c.delta):
        assert on_screen(part), part
    # scrolling the settings down to the sampling never takes Generate away
    c.settings_scroll.ensureWidgetVisible(c.cfg)
    qtbot.wait(20)
    assert on_screen(c.cfg) and on_screen(c.generate_button)


def on_screen(part) -> bool:
    """Whether ``part`` is wholly inside every scroll area's viewport it sits in (shown without scrolling)."""
    w = part.parentWidget()
    while w is not None:
        if isinstance(w.parentWidget(), QAbstractScrollArea) and w is w.parentWidget().viewport():
            if not w.rect().contains(QRect(part.mapTo(w, QPoint(0, 0)), part.size())):
                return False
        w = w.parentWidget()
    return part.isVisibleTo(part.window())


def test_status_messages_wait_their_turn():
    q = StatusQueue()
    assert q.post("Done #1 in 0.80 s", 6, t=0.0) == "Done #1 in 0.80 s"
    assert q.post("Generating #2…", 0, t=0.1) == "Done #1 in 0.80 s"  # waits: Done has not had its time
    assert q.post("Generating #3…", 0, t=0.2) == "Done #1 in 0.80 s"  # the newer progress replaces #2's
    assert list(m.text for m in q.waiting) == ["Generating #3…"]
    assert q.tick(MIN_SHOW - 0.01) == "Done #1 in 0.80 s"
    assert q.tick(MIN_SHOW) == "Generating #3…"
    assert q.post("Done #3 in 0.70 s", 6, t=2.0) == "Done #3 in 0.70 s"  # progress gives way at once
    # what a person just did shows now; the result it displaced comes back after it
    assert q.post("Saved x.png", 6, t=2.1, now=True) == "Saved x.png"
    assert q.tick(2.1 + MIN_SHOW) == "Done #3 in 0.70 s"
    assert q.tick(2.1 + 2 * MIN_SHOW + 6) == ""  # its time is up and nothing waits
    assert q.idle


def test_the_status_line_keeps_a_result_on_screen_while_the_next_job_starts(qtbot, tiny):
    w = open_window(qtbot, tiny)
    bar = w.statusBar()
    now = [1000.0]
    bar.clock = lambda: now[0]
    bar.clearMessage()
    job, _ = run_job(qtbot, w, "one")
    qtbot.waitUntil(lambda: bar.currentMessage().startswith(f"Done #{job.id}"), timeout=WAIT)
    second = w.generate()
    qtbot.waitUntil(lambda: w.last_result.job.id == second.id and not w.session.queue.busy, timeout=WAIT)
    assert bar.currentMessage().startswith(f"Done #{job.id}")  # not overwritten by "Generating #…"
    assert [m.text for m in bar.messages.waiting] == [f"Done #{second.id} in {w.last_result.stats['wall_seconds']:.2f} s"]
    now[0] += MIN_SHOW
    bar.tick()
    assert bar.currentMessage().startswith(f"Done #{second.id}")


def test_banners_go_by_themselves_unless_they_offer_a_way_out(qtbot, tiny, monkeypatch):
    monkeypatch.setitem(banner_module.SECONDS, "error", 0.2)
    w = open_window(qtbot, tiny)
    w.show_error("something went wrong")
    assert w.banner.isVisible()
    qtbot.waitUntil(lambda: not w.banner.isVisible(), timeout=WAIT)
    w.show_error("the model could not be loaded", actions=[("Use tiny demo model", lambda: None)])
    qtbot.wait(400)
    assert w.banner.isVisible() and not w.banner.timer.isActive()
    w.banner.dismiss()


def test_the_history_highlight_follows_the_picture_shown(qtbot, tiny):
    w = open_window(qtbot, tiny)
    run_job(qtbot, w, "first")
    assert w.gallery.selected().id == w.last_entry.id  # the new picture is the one highlighted
    first = w.last_entry
    run_job(qtbot, w, "second")
    assert w.gallery.selected().id == w.last_entry.id != first.id
    index = w.gallery.model.index(1, 0)  # a person clicks the first one
    w.gallery.view.setCurrentIndex(index)
    w.gallery.view.clicked.emit(index)
    assert w.gallery.selected().id == first.id
    seen = []
    w.jobs.answers.job_started.connect(lambda job: seen.append(w.gallery.selected_id()))
    _, r = run_job(qtbot, w, "third")
    assert seen == [None]  # while it decodes no old entry is highlighted
    assert w.gallery.selected().id == w.last_entry.id and w.last_entry.prompt == "third"


def test_compare_headers_are_whole_in_a_small_window(qtbot, tiny):
    w = open_window(qtbot, tiny)
    w.resize(760, 520)
    w.controls.set_prompt("a small window")
    w.compare()
    qtbot.waitUntil(lambda: w.race.pair is not None and w.race.pair.complete and not w.session.queue.busy, timeout=WAIT)
    qtbot.wait(50)
    for label in (w.race.ratio, w.race.note):
        assert label.wordWrap() and label.heightForWidth(label.width()) <= label.height() + 1, label.text()
    assert "faster than vanilla (decoding only" in w.race.ratio.text()


def test_the_bound_tooltip_says_what_each_bound_promises_and_where_it_breaks(qtbot, tiny):
    w = open_window(qtbot, tiny)
    tip = w.controls.bound.toolTip()
    for words in ("LANTERN:", "LANTERN++:", "Step-bounded:", "N·δ", "δ 0.2", "more target forwards"):
        assert words in tip, words


def test_the_overlay_legend_leaves_the_progress_text_room(qtbot, tiny):
    w = open_window(qtbot, tiny)
    w.canvas.set_overlay(True)
    w.resize(760, 520)
    qtbot.wait(20)
    assert w.canvas.width() < 640 and not any(n.isVisibleTo(w) for n in w.canvas.legend_names)
    legend = w.canvas.legend
    assert legend.window() is w and legend.isVisibleTo(w)  # in the window, beside the progress bar
    assert w.canvas.progress.width() >= 0.7 * w.canvas.width()
    w.resize(1600, 1000)
    qtbot.wait(20)
    assert all(n.isVisibleTo(w) for n in w.canvas.legend_names)

