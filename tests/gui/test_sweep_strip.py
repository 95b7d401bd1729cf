"""Generate ▸ Sweep δ / Sweep k on a tiny model (pytest-qt, offscreen): the vanilla run and the ladder decode in
the window's one queue into a strip of captioned pictures, the rungs join as one curve on the trade-off chart,
a click makes a rung the current picture, and Esc stops the whole sweep."""

from __future__ import annotations

import time

import numpy as np
import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402

from lantern_studio import fidelity  # noqa: E402
from lantern_studio.studio.sweep import SEEDS, delta_ladder, k_ladder  # noqa: E402
from lantern_studio.gui.sweep_view import PICTURE_SMALL  # noqa: E402
from support.studio import COLD, WAIT, cold_vanilla_path, on_steps, open_window  # noqa: E402


def run_sweep(qtbot, w, axis: str, prompt: str = "a red heart"):
    w.controls.set_prompt(prompt)
    w.sweeps.actions[axis].trigger()  # Generate ▸ Sweep δ / Sweep k
    s = w.sweeps.sweep
    assert s is not None and s.prompt == prompt, w.banner.text()
    qtbot.waitUntil(lambda: s.ended and not w.session.queue.busy, timeout=WAIT)
    qtbot.wait(20)
    return s


def shown_whole(strip) -> bool:
    """Every picture and caption of the strip inside its visible height (not clipped by its scroll area)."""
    room = strip.scroll.viewport().height()
    return all(cell.geometry().bottom() < room and cell.view.height() >= 48 for cell in strip.cells)


def test_sweep_delta_fills_a_captioned_strip_draws_a_curve_and_a_click_makes_a_rung_current(qtbot, tiny):
    w = open_window(qtbot, tiny)
    c = w.controls
    generate = next(a.menu() for a in w.menuBar().actions() if a.menu() and w.generate_action in a.menu().actions())
    assert all(w.sweeps.actions[axis] in generate.actions() for axis in ("delta", "k"))
    assert w.sweeps.actions["delta"].text().startswith("Sweep δ") and w.sweeps.actions["k"].text().startswith("Sweep k")
    c.new_seed.setChecked(True)  # a sweep keeps the seed shown whatever New seed each Generate says
    c.seed.setValue(4321)
    c.delta.setValue(0.2)
    frames = []
    w.jobs.answers.frame.connect(lambda f: frames.append(f.job_id))
    s = run_sweep(qtbot, w, "delta")
    assert s.values == delta_ladder(0.2) == [0.0, 0.1, 0.2, 0.3, 0.5]
    # seed by seed (three by default: Generate ▸ Sweep seeds), each round the vanilla run first, then the ladder
    assert [j.id for j in w.started_jobs] == [j.id for j in s.jobs] and len(s.jobs) == 6 * SEEDS
    assert [j.settings.seed for j in s.jobs] == [4321] * 6 + [4322] * 6 + [4323] * 6 and c.seed.value() == 4321
    assert s.jobs[0].settings.drafter == "none" and all(d.done for r in s.rungs for d in r.draws)
    # the strip: one picture per rung (its first seed's), filled in as it decoded, captioned with the state's numbers
    strip = w.sweeps.strip
    assert strip.isVisibleTo(w) and len(strip.cells) == 6 and all(j.id in frames for j in s.jobs)
    for rung, cell in zip(s.rungs, strip.cells):
        assert np.array_equal(cell.image, rung.result.image) and rung.result.job.settings.seed == 4321
        text = cell.caption()
        tpf = np.mean([d.result.stats["mean_accepted_length"] for d in rung.draws])  # over the seeds
        assert text == s.caption(rung) and f"{tpf:.2f} tok/fwd" in text
        if rung.vanilla:
            assert text.startswith("vanilla") and "baseline" in text
        else:
            speedup = np.median([v.wall / d.wall for v, d in zip(s.baseline.draws, rung.draws)])  # seed by seed
            assert text.startswith(f"δ {rung.value:g}\n") and f"{speedup:.2f}×" in text
        assert "fid" not in text  # the tiny model has no recogniser
        assert all(line.shown_text() == line.text() for line in cell.lines), text  # whole, not elided
    assert "Sweep δ (seeds 4321–4323) · speed-ups: decoding only, all eager · 18 of 18 done" in strip.title.text()
    assert shown_whole(strip)
    # this small window's strip: each picture at 1× beside its caption (not squeezed once a picture is in), and
    # scrolled along as the rungs decoded, so the last one is in view
    assert strip.compact and all(cell.view.height() == PICTURE_SMALL for cell in strip.cells)
    assert not strip.cells[-1].visibleRegion().isEmpty()
    # the chart: every run, a point per value (its seeds at their mean), and the five rungs joined in ladder order
    assert len(w.chart.points) == 18 and len(w.chart.model.placed()) == 6
    xs, ys = w.chart.curve.getData()
    rungs = s.rungs[1:]
    assert list(xs) == pytest.approx([np.mean([d.result.stats["mean_accepted_length"] for d in r.draws]) for r in rungs])
    assert list(ys) == pytest.approx([np.mean([d.result.stats["tokens_per_second"] for d in r.draws]) for r in rungs])
    # a click on δ 0.3: the canvas, the slider, the stats and the history selection show it
    rung = s.rungs[4]
    qtbot.mouseClick(strip.cells[4].view, Qt.MouseButton.LeftButton)
    assert s.chosen == 4 and strip.cells[4].chosen and not strip.cells[3].chosen
    assert w.views.currentWidget() is w.single_view and np.array_equal(w.canvas.image, rung.result.image)
    assert c.delta.value() == pytest.approx(0.3) and c.seed.value() == 4321 and not c.new_seed.isChecked()
    assert w.gallery.selected().id == rung.entry_id and w.finished_record["settings"]["delta"] == pytest.approx(0.3)
    assert w.stats.run_label.text().startswith("Sweep δ · δ 0.3 · seed 4321")
    assert "δ 0.3" in w.statusBar().currentMessage()
    # Sweep k from there: around the slider's k, clipped to the codebook; a new strip and a new curve
    c.k.setValue(8)
    w.sweeps.set_seeds(1)  # Generate ▸ Sweep seeds ▸ 1 seed per value
    assert w.sweeps.seed_actions[1].isChecked() and not w.sweeps.seed_actions[SEEDS].isChecked()
    t = run_sweep(qtbot, w, "k")
    assert t.values == k_ladder(8, 64) == [2, 4, 8, 16, 32] and len(strip.cells) == 6 and len(t.jobs) == 6
    assert all(r.job.settings.delta == pytest.approx(0.3) for r in t.rungs)
    assert [p.settings.k for p in w.chart.model.curve] == [2, 4, 8, 16, 32] and len(w.chart.points) == 24
    assert strip.cells[0].caption().startswith("vanilla") and strip.cells[1].caption().startswith("k 2\n")
    assert shown_whole(strip)  # a second strip is as tall as the first (it was clipped to one line once)
    # ✕ hides the strip; the next sweep shows it again
    qtbot.mouseClick(strip.close_button, Qt.MouseButton.LeftButton)
    assert not strip.isVisibleTo(w)


def test_a_sweep_that_cannot_show_anything_says_why_and_queues_nothing(qtbot, tiny):
    w = open_window(qtbot, tiny)
    w.controls.set_prompt("a red heart")
    w.controls.k.setValue(0)  # exact: δ changes nothing
    w.sweeps.actions["delta"].trigger()
    assert w.sweeps.sweep is None and not w.session.queue.busy and "k > 0" in w.banner.text()
    w.controls.k.setValue(8)
    w.controls.delta.setValue(0.0)  # no budget: every k decodes exactly
    w.sweeps.actions["k"].trigger()
    assert w.sweeps.sweep is None and not w.session.queue.busy and "δ > 0" in w.banner.text()
    w.controls.delta.setValue(0.1)
    w.controls.set_prompt("   ")  # the prompt's own check, as Generate's
    w.sweeps.actions["k"].trigger()
    assert w.sweeps.sweep is None and not w.session.queue.busy and "\n" not in w.banner.text() and "prompt" in w.banner.text()


def test_esc_stops_the_running_rung_and_takes_the_waiting_ones_off(qtbot, tiny, monkeypatch):
    w = open_window(qtbot, tiny)
    on_steps(monkeypatch, lambda job, ev: time.sleep(0.03))
    w.controls.set_prompt("stop the sweep")
    s = w.sweeps.start("delta")
    qtbot.waitUntil(lambda: s.rungs[0].state == "running" and w.sweeps.strip.cells[0].image is not None,
                    timeout=WAIT)
    assert not w.sweeps.choose(0)  # still decoding
    qtbot.keyClick(w.controls.prompt, Qt.Key.Key_Escape)
    assert "Cancelling the sweep" in w.statusBar().currentMessage()
    qtbot.waitUntil(lambda: s.ended and not w.session.queue.busy, timeout=WAIT)
    assert [j.id for j in w.started_jobs] == [s.jobs[0].id]  # the waiting rungs never ran
    assert [r.state for r in s.rungs] == ["cancelled"] * len(s.rungs)
    assert all(d.state == "cancelled" for r in s.rungs for d in r.draws)  # nor their later seeds
    assert all(cell.caption().endswith("cancelled") for cell in w.sweeps.strip.cells)
    assert "none finished" in w.sweeps.strip.title.text() and w.chart.model.curve == []


def test_with_a_recogniser_the_captions_give_its_verdict_and_the_curve_is_in_fidelity(qtbot, tiny, monkeypatch):
    from lantern_studio.studio import engine_host

    real = engine_host.load_pipeline

    def with_scorer(*args, **kwargs):  # a model folder that ships a recogniser (models/quality.py), faked
        pipe = real(*args, **kwargs)
        pipe.scorer = lambda image, prompt: float(np.asarray(image).mean()) / 255.0
        return pipe

    monkeypatch.setattr(engine_host, "load_pipeline", with_scorer)
    w = open_window(qtbot, tiny)
    assert w.model_info.has_score
    s = run_sweep(qtbot, w, "delta")
    for rung, cell in zip(s.rungs, w.sweeps.strip.cells):
        scores = [d.result.score for d in rung.draws]
        assert scores == pytest.approx([d.result.image.mean() / 255.0 for d in rung.draws])
        iv = fidelity.mean_interval(scores)
        assert rung.fidelity == iv and iv.n == SEEDS
        mean, spread = fidelity.format_interval(iv).split(" (")
        # beside its 1× picture (this small window's compact strip) the interval shares the fidelity's line
        assert cell.caption().endswith(f"fid {mean} · {spread.rstrip(')')}") and spread.endswith(f"{SEEDS} seeds)")
        assert fidelity.format_interval(iv) in cell.toolTip()
    _xs, ys = w.chart.curve.getData()
    assert list(ys) == pytest.approx([100 * r.fidelity.mean for r in s.rungs[1:]])
    # the chart's points of the ladder carry the interval bars of their means
    bars = w.chart.bars.opts
    assert len(bars["x"]) == len([p for p in w.chart.model.placed() if p.error is not None]) >= 5


@pytest.mark.parametrize("window_height, compact", [(600, True), (1080, False)])
def test_a_small_window_gets_captions_beside_the_pictures_a_tall_one_over_them(qtbot, window_height, compact):
    from lantern_studio.engine.settings import GenerationSettings
    from lantern_studio.studio.sweep import SweepSet
    from lantern_studio.gui.sweep_view import PICTURE_LARGE, SweepStrip

    strip = SweepStrip()
    qtbot.addWidget(strip)
    strip.resize(900 if compact else 1000, 300)
    strip.show()
    s = SweepSet.of(1, "delta", "a cat", GenerationSettings(drafter="jacobi", k=64, delta=0.2), delta_ladder(0.2),
                    quality=True)
    strip.fit(window_height)
    strip.start(s, 256)
    qtbot.wait(20)
    assert strip.compact == compact and len(strip.cells) == 6 and shown_whole(strip)
    for rung, cell in zip(s.rungs, strip.cells):
        line, view = cell.lines[0], cell.view
        if compact:  # beside: the caption right of the picture, the picture at 1×
            assert line.x() >= view.x() + view.width() and view.height() == PICTURE_SMALL
        else:  # over: the caption above the picture, the picture at 2×
            assert line.y() + line.height() <= view.y() and view.height() == PICTURE_LARGE
        assert cell.caption() == s.caption(rung) == f"{s.label(rung)}\nwaiting"
    # the strip is a few lines tall whatever it holds: compact, it leaves the canvas most of a small column
    # (tall: four caption lines over a 2× picture)
    assert strip.sizeHint().height() <= (120 if compact else 260)
    # the widest caption a rung gets is shown whole
    strip.cells[0].set_caption("vanilla\n12.34 tok/fwd\nbaseline\nfid 100%", "")
    strip.cells[1].set_caption("δ 0.25\n12.34 tok/fwd\ndecoding 10.00×\nfid 100%", "")
    qtbot.wait(20)
    for cell in strip.cells[:2]:
        assert all(line.shown_text() == line.text() for line in cell.lines), cell.caption()
    if not compact:  # in the canvas column of a 1920×1080 window (845 px): all six side by side, no scrolling
        strip.resize(845, 300)
        qtbot.wait(20)
        assert strip.scroll.horizontalScrollBar().maximum() == 0


def test_the_first_sweep_of_a_session_leaves_the_vanilla_paths_warm_up_out_of_its_speedups(qtbot, tiny, monkeypatch):
    """As the first Compare of a session once did, a first sweep would count the vanilla path's warm-up in every
    speed-up. Here vanilla's first one-token step sleeps COLD seconds once: the run's warm-up takes it, its clock
    does not, and the captions and the strip's title say the ratio compares decoding only."""
    w = open_window(qtbot, tiny)
    cold = cold_vanilla_path(monkeypatch, w)
    w.controls.delta.setValue(0.2)
    s = run_sweep(qtbot, w, "delta", "an honest sweep")
    assert all(j.warm and j.steps == "eager" for j in s.jobs) and s.path == "eager"
    base = s.baseline
    assert not cold[0], "the slow first step never ran"
    assert base.warm >= COLD and base.wall < COLD  # the wait was measured, apart, and is not in the clock
    strip = w.sweeps.strip
    for rung, cell in zip(s.rungs[1:], strip.cells[1:]):  # the median over seeds, each against its own vanilla run
        assert s.speedup(rung) == pytest.approx(np.median([v.wall / d.wall for v, d in zip(base.draws, rung.draws)]))
        assert f"decoding {s.speedup(rung):.2f}×" in cell.caption()
    assert "speed-ups: decoding only, all eager" in strip.title.text()
    assert f"warm-up not counted: {base.warm:.1f} s" in strip.cells[0].toolTip()


def test_a_later_x4_never_repeats_the_seed_of_a_sweep(qtbot, tiny):
    w = open_window(qtbot, tiny)
    c = w.controls
    c.new_seed.setChecked(False)
    c.seed.setValue(5151)
    c.k.setValue(4)
    c.delta.setValue(0.2)
    s = run_sweep(qtbot, w, "k")
    assert {j.settings.seed for j in s.jobs} == {5151, 5152, 5153} and 5151 in w.studio.seeds_used
    draws = iter([5151, 21, 5151, 22, 23, 24])
    c.draw_seed = lambda: next(draws)
    v = w.generate_variations()
    assert v.seeds == [21, 22, 23, 24]
    w.studio.cancel_all()
    qtbot.waitUntil(lambda: not w.session.queue.busy, timeout=WAIT)
