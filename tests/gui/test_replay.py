"""Replay: a generation's steps recorded compactly, redrawn exactly, played on a clock."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from hypothesis import given, settings, strategies as st  # noqa: E402

from lantern_studio.studio.jobs import UNFILLED  # noqa: E402
from lantern_studio.studio.replay import MAX_STEPS, Recording, ReplayError, recording_of  # noqa: E402

from support.studio import WAIT, on_steps, open_window, run_job  # noqa: E402


class FakeClock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def recorded_grids(monkeypatch):
    """Hook the worker: the decision grid after every step, as the engine produced it."""
    grids = []

    def hook(job, ev):
        grid = grids[-1].copy() if grids else np.full(ev.total, UNFILLED, dtype=np.uint8)
        grid[ev.positions] = ev.decisions
        grids.append(grid)

    on_steps(monkeypatch, hook)
    return grids


def test_replay_reproduces_the_decision_grid_at_every_step(qtbot, tiny, monkeypatch):
    w = open_window(qtbot, tiny)
    w.controls.drafter.setCurrentIndex(w.controls.drafter.findData("jacobi"))
    grids = recorded_grids(monkeypatch)
    job, r = run_job(qtbot, w, "a red heart")
    rec = w.replay.recording
    assert rec is not None and rec.steps == len(grids) > 1 and w.replay.play_button.isEnabled()
    for step, grid in enumerate(grids):
        w.replay.show_step(step)
        assert np.array_equal(w.canvas.decisions, grid), step
        filled = (grid != UNFILLED).reshape(rec_grid(rec), -1)
        assert w.canvas.progress.value() == int(filled.sum())
        # pixels of fixed tokens are the final image's; the rest is the placeholder
        scale = r.image.shape[0] // filled.shape[0]
        mask = np.kron(filled, np.ones((scale, scale), dtype=bool))
        assert np.array_equal(w.canvas.image[mask], r.image[mask])
        assert (w.canvas.image[~mask] == 128).all()
    w.replay.show_step(-1)
    assert (w.canvas.decisions == UNFILLED).all() and w.replay.label.text().startswith(f"step 0/{rec.steps}")
    # the running numbers follow the scrubber
    w.replay.show_step(0)
    assert w.stats.values["tokens"].text().startswith(f"{int((grids[0] != UNFILLED).sum())} /")
    # the same replay from the history row (the record carries it) and from the PNG
    w.replay.load(None, None)
    entry = w.store.entries()[0]
    w.restore_entry(entry)
    assert w.replay.recording is not None and w.replay.recording.steps == len(grids)
    mid = len(grids) // 2
    w.replay.show_step(mid)
    assert np.array_equal(w.canvas.decisions, grids[mid])


def rec_grid(rec):
    return int(round(rec.total ** 0.5))


def test_play_runs_on_the_clock_at_the_chosen_speed(qtbot, tiny):
    w = open_window(qtbot, tiny)
    w.controls.drafter.setCurrentIndex(w.controls.drafter.findData("none"))
    run_job(qtbot, w, "a slow heart")
    bar, rec = w.replay, w.replay.recording
    clock = FakeClock()
    bar.clock = clock
    bar.speed.setCurrentIndex(0)  # one step per 0.25 s
    bar.play()
    assert bar.playing and bar.slider.value() == -1
    clock.t += 0.25 * 3 + 0.01
    bar._tick()
    assert bar.slider.value() == 2 and w.canvas.progress.value() == rec.fixed[2]
    bar.speed.setCurrentIndex(bar.speed.findData(1.0))  # real time, from where it is
    bar.stop()
    bar.play()
    clock.t += rec.duration + 1.0
    bar._tick()
    assert bar.slider.value() == rec.steps - 1 and not bar.playing
    assert np.array_equal(w.canvas.image, w.finished_image)


def test_compare_races_two_full_canvases_live_then_on_one_clock(qtbot, tiny, monkeypatch):
    """Issue 35: Compare is a race. While each half decodes its own full-size canvas fills live (vanilla on
    the left, LANTERN on the right; the old Compare drew both halves in the one canvas and showed 80-px
    thumbnails); once both are done the race replays on one clock, each lane at its own recorded pace, so
    the faster lane finishes first; a plain Generate brings the single canvas back."""
    from lantern_studio.studio.compare import LANTERN, VANILLA

    w = open_window(qtbot, tiny)
    w.controls.drafter.setCurrentIndex(w.controls.drafter.findData("jacobi"))
    w.controls.set_settings(w.controls.settings().with_(k=3, delta=0.5))
    w.resize(1400, 880)
    lanes = w.race.lanes
    live = {VANILLA: [], LANTERN: []}  # the frames each lane was handed while its half ran
    real = w.race.show_frame
    w.race.show_frame = lambda side, f: (live[side].append((f.job_id, lanes[side].isVisible())), real(side, f))
    w.controls.set_prompt("compare me")
    vanilla, current = w.compare()
    qtbot.waitUntil(lambda: w.race.race_button.isEnabled(), timeout=WAIT)
    assert w.views.currentWidget() is w.race and w.race.isVisible() and not w.canvas.isVisible()
    # two canvases side by side, each as large as half the column, not thumbnails
    left, right = lanes[VANILLA].view.geometry(), lanes[LANTERN].view.geometry()
    assert lanes[VANILLA].mapTo(w.race, left.topRight()).x() < lanes[LANTERN].mapTo(w.race, right.topLeft()).x()
    assert min(left.width(), right.width()) >= 0.4 * w.race.width() / 2 and left.height() >= 200
    # each lane was drawn, on screen, with its own half's frames only
    assert {job for job, _ in live[VANILLA]} == {vanilla.id} and {job for job, _ in live[LANTERN]} == {current.id}
    assert all(shown for side in live for _, shown in live[side])
    # labels, clocks and tokens/forward; the ratio
    assert lanes[VANILLA].title.text() == "vanilla" and lanes[LANTERN].title.text() == "LANTERN"
    pair = w.race.pair
    assert pair.vanilla.job is vanilla and pair.lantern.job is current
    assert f"{pair.speedup:.2f}× faster than vanilla" in w.race.ratio.text()
    assert "Speed-up" in w.stats.speedup_label.text() and w.stats.last_speedup == pytest.approx(pair.speedup)
    # the race replay started by itself; drive its clock by hand
    assert w.race.playing
    clock = FakeClock()
    w.race.clock = clock
    w.race.play()
    race = w.race.race
    rv, rc = pair.vanilla.result.recording, pair.lantern.result.recording
    assert rv.steps > rc.steps  # vanilla: one token a step
    mid = rc.steps // 2  # recorded seconds: the LANTERN run half-way through its steps, between two of them
    t = (rc.elapsed[mid - 1] + rc.elapsed[mid]) / 2
    clock.t += t * race.slowmo
    w.race._tick()
    for side, rec in ((VANILLA, rv), (LANTERN, rc)):  # both at the same moment of their own recorded decode
        step = rec.step_at(t)
        assert lanes[side].progress.value() == (rec.fixed[step] if step >= 0 else 0)
        assert lanes[side].clock.text() == f"{min(t, rec.duration):.2f} s"
    assert "tokens/forward" in lanes[LANTERN].rate.text()
    # the faster lane finishes first: at its own wall time the other is still going
    clock.t = 100.0 + (rc.duration + 1e-6) * race.slowmo
    w.race._tick()
    faster, slower = (LANTERN, VANILLA) if rc.duration < rv.duration else (VANILLA, LANTERN)
    assert lanes[faster].progress.format().startswith("finished first") and w.race.playing
    assert lanes[slower].progress.value() < lanes[slower].progress.maximum()
    clock.t = 100.0 + race.replay_seconds + 1.0
    w.race._tick()
    assert not w.race.playing and all(lane.progress.value() == lane.progress.maximum() for lane in lanes.values())
    assert np.array_equal(lanes[LANTERN].image, pair.lantern.result.image)
    # a plain Generate: the single canvas is back
    run_job(qtbot, w, "alone")
    assert w.views.currentWidget() is w.single_view and w.canvas.isVisible() and not w.race.isVisible()


def test_after_a_compare_the_narrow_window_brings_the_results_forward(qtbot, tiny):
    w = open_window(qtbot, tiny)
    w.resize(760, 560)
    qtbot.wait(20)
    assert w.narrow
    w.side_tabs.setCurrentIndex(0)  # the settings tab, as when a person presses Compare
    w.controls.drafter.setCurrentIndex(w.controls.drafter.findData("jacobi"))
    w.controls.set_prompt("compare me")
    w.compare()
    qtbot.waitUntil(lambda: w.race.race_button.isEnabled(), timeout=WAIT)
    qtbot.wait(20)
    assert w.side_tabs.currentWidget() is w.right_scroll and w.stats.compare_box.isVisible()
    assert w.race.isVisible() and all(lane.view.width() >= 96 for lane in w.race.lanes.values())
    assert (w.width(), w.height()) == (760, 560)


events = st.lists(st.tuples(st.integers(1, 5), st.integers(0, 3), st.floats(0, 0.5)), min_size=1, max_size=30)


class Ev:
    def __init__(self, positions, n_fixed, total, target, drafter, elapsed):
        self.positions, self.n_fixed, self.total = positions, n_fixed, total
        self.target_forwards, self.drafter_forwards, self.elapsed = target, drafter, elapsed


@settings(max_examples=60, deadline=None)
@given(events, st.booleans())
def test_recording_round_trips_through_its_compact_json(steps, shuffled):
    fixed = sum(n for n, _, _ in steps)
    side = math.isqrt(fixed - 1) + 1  # the least square grid the fixed tokens fit in
    total = side * side
    order = list(range(fixed))
    if shuffled:
        order = order[::-1]
    rec, n, t, fwd, dr = Recording(total), 0, 0.0, 0, 0
    for count, drafter, dt in steps:
        t += dt
        fwd += 1
        dr += drafter
        rec.add(Ev(order[n:n + count], n + count, total, fwd, dr, t))
        n += count
    back = Recording.from_dict(rec.to_dict())
    assert (back.fixed, back.target, back.drafter, back.order) == (rec.fixed, rec.target, rec.drafter, rec.order)
    assert np.allclose(back.elapsed, rec.elapsed, atol=6e-4)
    assert ("order" in rec.to_dict()) == (shuffled and fixed > 1)


@pytest.mark.parametrize("bad", [
    None, [], {"format": 2}, {"format": 1, "total": 4, "fixed": [2, 2], "target": [1], "drafter": [0, 0], "ms": [1, 1]},
    {"format": 1, "total": 4, "fixed": [2, 3], "target": [1, 1], "drafter": [0, 0], "ms": [1, 1]},  # 5 > 4 tokens
    {"format": 1, "total": 4, "fixed": [-1, 5], "target": [1, 1], "drafter": [0, 0], "ms": [1, 1]},
    {"format": 1, "total": 4, "fixed": [2, 2], "target": [1, 1], "drafter": [0, 0], "ms": [1, 1], "order": [0, 0, 1, 2]},
    {"format": 1, "total": "x", "fixed": [], "target": [], "drafter": [], "ms": []},
    {"format": 1, "total": 5, "fixed": [2, 3], "target": [1, 1], "drafter": [0, 0], "ms": [1, 1]},  # not n × n
    {"format": 1, "total": 4.0, "fixed": [2, 2], "target": [1, 1], "drafter": [0, 0], "ms": [1, 1]},
    {"format": 1, "total": True, "fixed": [1], "target": [1], "drafter": [0], "ms": [1]},
])
def test_a_damaged_recording_is_refused_and_the_image_kept(bad):
    with pytest.raises(ReplayError):
        Recording.from_dict(bad)
    assert recording_of({"prompt": "x", "replay": bad}) is None


def _empty(total) -> dict:
    """A recording that adds up in every other way: no steps yet, ``total`` tokens."""
    return {"format": 1, "total": total, "fixed": [], "target": [], "drafter": [], "ms": []}


def _square(total) -> bool:
    return isinstance(total, int) and total >= 1 and math.isqrt(total) ** 2 == total


_totals = st.one_of(st.integers(), st.integers(-2**200, 2**200), st.integers(1, 1100).map(lambda n: n * n),
                    st.integers(1, 2**100).map(lambda n: n * n), st.sampled_from([-4, -1, 0, 1, 2, 3, 5, 15, 17]))


@settings(max_examples=400, deadline=None)
@given(total=_totals, tokens=st.one_of(st.none(), st.just("same"), _totals))
def test_only_a_square_token_count_matching_the_record_is_accepted(total, tokens):
    """Any integer total, negatives, 0 and huge ones included: from_dict accepts exactly the n × n counts
    (n ≥ 1, within the size limit) that equal the record's image tokens where it gives them; everything
    else is a ReplayError. recording_of passes the record's stats["tokens"] and agrees."""
    tokens = total if tokens == "same" else tokens
    ok = _square(total) and total <= MAX_STEPS and (tokens is None or tokens == total)
    try:
        rec = Recording.from_dict(_empty(total), tokens=tokens)
    except ReplayError:
        assert not ok, (total, tokens)
    else:
        assert ok, (total, tokens)
        assert rec.total == total and rec.grid ** 2 == total
    record = {"prompt": "x", "replay": _empty(total), **({} if tokens is None else {"stats": {"tokens": tokens}})}
    assert (recording_of(record) is not None) == ok


def _full(total: int) -> Recording:
    """A finished two-step decode of ``total`` tokens in raster order."""
    half = total // 2
    return Recording.from_dict({"format": 1, "total": total, "fixed": [half, total - half], "target": [1, 1],
                                "drafter": [0, 0], "ms": [1, 2]})


@pytest.mark.parametrize("step", [-1, 0, 1])
@pytest.mark.parametrize("image, decisions", [
    (np.zeros((8, 16, 3), np.uint8), np.zeros(4, np.uint8)),  # not square
    (np.zeros((5, 5, 3), np.uint8), np.zeros(4, np.uint8)),  # the 2 × 2 grid does not divide it
    (np.zeros((1, 1, 3), np.uint8), np.zeros(4, np.uint8)),  # smaller than the grid
    (np.zeros((8, 8), np.uint8), np.zeros(4, np.uint8)),  # no colour channels
    (np.zeros((8, 8, 4), np.uint8), np.zeros(4, np.uint8)),  # RGBA
    (np.zeros((8, 8, 3), np.uint8), np.zeros(3, np.uint8)),  # decisions too few
    (np.zeros((8, 8, 3), np.uint8), np.zeros(9, np.uint8)),  # decisions for another grid
    ([[1, 2], "x"], np.zeros(4, np.uint8)),  # not pixels at all
])
def test_a_frame_that_does_not_fit_the_grid_is_a_replay_error(image, decisions, step):
    rec = _full(4)
    with pytest.raises(ReplayError):
        rec.frame(step, image, decisions)
    assert rec.frame(step, np.zeros((8, 8, 3), np.uint8), np.zeros(4, np.uint8)).total == 4  # what fits draws


def _history_row(w, image, replay: dict, tokens: int, decisions):
    rec = {"prompt": "odd replay", "model": "tiny", "settings": {"seed": 7}, "stats": {"tokens": tokens},
           "replay": replay}
    return w.store.add(image, rec, decisions)


@pytest.mark.parametrize("case", ["total 5", "square, not the record's tokens", "PNG not square"])
def test_moving_the_slider_of_an_odd_history_row_never_raises(qtbot, tiny, case):
    """A history row whose replay does not fit (made elsewhere, or its PNG replaced): restoring it and moving
    the replay slider raises nothing (the studio's reshape ValueError / IndexError); a replay that cannot be
    drawn is unloaded and the banner says why."""
    w = open_window(qtbot, tiny)
    replay = {"format": 1, "total": 4, "fixed": [2, 2], "target": [1, 2], "drafter": [0, 0], "ms": [1, 2]}
    image, tokens = np.full((8, 8, 3), 200, np.uint8), 4
    if case == "total 5":
        replay, tokens = {**replay, "total": 5, "fixed": [2, 3]}, 5
    elif case == "square, not the record's tokens":
        tokens = 16
    else:
        image = np.full((8, 16, 3), 200, np.uint8)
    entry = _history_row(w, image, replay, tokens, np.zeros(replay["total"], np.uint8))
    w.restore_entry(entry)
    for step in (0, -1, 1, 0):
        w.replay.slider.setValue(step)
        w.replay.show_step(step)
    qtbot.wait(10)
    assert w.replay.recording is None and not w.replay.slider.isEnabled()
    assert w.replay.label.text() == "no replay for this image"
    if case == "PNG not square":  # the row's replay loaded and could not be drawn: the banner says why
        assert "replay cannot be shown" in w.banner.text() and "does not fit" in w.banner.text()
    # a row that fits still replays
    good = _history_row(w, np.full((8, 8, 3), 200, np.uint8), {**replay, "total": 4, "fixed": [2, 2]}, 4,
                        np.zeros(4, np.uint8))
    w.restore_entry(good)
    assert w.replay.recording is not None and w.replay.slider.isEnabled()
    w.replay.show_step(0)
    assert w.canvas.progress.value() == 2


def test_a_race_replay_that_does_not_fit_stops_and_says_why(qtbot, tiny):
    w = open_window(qtbot, tiny)
    w.controls.drafter.setCurrentIndex(w.controls.drafter.findData("jacobi"))
    w.controls.set_prompt("compare me")
    w.compare()
    qtbot.waitUntil(lambda: w.race.race_button.isEnabled(), timeout=WAIT)
    race = w.race
    race.stop()
    current = race.pair.lantern.result
    race.pair.lantern.result = dataclasses.replace(current, image=current.image[:, : current.image.shape[1] // 2])
    race.play()
    assert not race.playing and not race.race_button.isEnabled() and not race.pair.can_race
    assert "race replay cannot be shown" in w.banner.text()
    assert [lane.title.text() for lane in race.lanes.values()] == ["vanilla", "LANTERN"]
