"""Replay: a generation's steps recorded compactly, redrawn exactly, played on a clock."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from hypothesis import given, settings, strategies as st  # noqa: E402

from lantern_studio.gui.jobs import UNFILLED  # noqa: E402
from lantern_studio.gui.replay import MAX_STEPS, Recording, ReplayError, recording_of  # noqa: E402
from lantern_studio.models.tiny import build_tiny_model_dir  # noqa: E402

from support.studio import WAIT, on_steps, open_window, run_job  # noqa: E402


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny_model_dir(tmp_path_factory.mktemp("models") / "tiny")


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


def test_compare_replays_side_by_side_on_one_clock(qtbot, tiny):
    from lantern_studio.gui.stats_panel import COMPARE_SLOWMO

    w = open_window(qtbot, tiny)
    w.controls.drafter.setCurrentIndex(w.controls.drafter.findData("jacobi"))
    w.controls.set_prompt("compare me")
    vanilla, current = w.compare()
    qtbot.waitUntil(lambda: w.stats.replay_button.isEnabled(), timeout=WAIT)
    panel = w.stats
    clock = FakeClock()
    panel.clock = clock
    rv, rc = (p.recording for p in panel._pair)
    assert rv.steps > rc.steps  # vanilla: one token a step
    panel.replay_compare()
    t = rc.elapsed[rc.steps // 2]  # recorded seconds: the current run is half-way through its steps
    clock.t += t * COMPARE_SLOWMO
    panel._replay_tick()
    texts = [label.text() for label in panel.compare_texts]
    assert texts[0].startswith("vanilla") and texts[1].startswith("current")
    for text, rec in zip(texts, (rv, rc)):  # both at the same moment of their own recorded decode
        step = rec.step_at(t)
        fixed = rec.fixed[step] if step >= 0 else 0
        assert f"{fixed}/{rec.total} tokens" in text or (step == rec.steps - 1 and "done" in text), text
    clock.t += (max(rv.duration, rc.duration) + 1) * COMPARE_SLOWMO
    panel._replay_tick()
    assert not panel.replay_timer.isActive() and "fwd" in panel.compare_texts[0].text()


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


def test_a_side_by_side_replay_that_does_not_fit_stops_and_says_why(qtbot, tiny):
    w = open_window(qtbot, tiny)
    w.controls.drafter.setCurrentIndex(w.controls.drafter.findData("jacobi"))
    w.controls.set_prompt("compare me")
    w.compare()
    qtbot.waitUntil(lambda: w.stats.replay_button.isEnabled(), timeout=WAIT)
    panel = w.stats
    vanilla, current = panel._pair
    panel._pair = (vanilla, dataclasses.replace(current, image=current.image[:, : current.image.shape[1] // 2]))
    panel.replay_compare()
    assert not panel.replay_timer.isActive() and not panel.replay_button.isEnabled()
    assert "side-by-side replay cannot be shown" in w.banner.text()
    assert [t.text().split("\n")[0] for t in panel.compare_texts] == ["vanilla", "current"]
