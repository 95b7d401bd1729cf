"""The studio model under the window (studio/): the queue's order and cancel rules, the Compare pairs,
the race replay's one clock and the trade-off chart's axes, driven as plain Python — no QApplication,
no worker thread, no model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from lantern_studio import fidelity
from lantern_studio.engine.settings import GenerationSettings
from lantern_studio.studio.jobs import Frame, JobResult
from lantern_studio.studio.replay import Recording
from lantern_studio.engine.decode_method import DecodeMethod
from lantern_studio.studio.compare import LANTERN, VANILLA, ComparePair
from lantern_studio.studio.queue import QueueState, ordinal
from lantern_studio.studio.race import MAX_SLOWMO, RACE_SECONDS, Race, lane_at, slowmo_for
from lantern_studio.studio.display import GRID, RACE, SINGLE, Studio, jsonable
from lantern_studio.studio.variations import COUNT, fresh_seeds
from lantern_studio.studio.tradeoff import X_LABEL, Y_QUALITY_LABEL, Y_SPEED_LABEL, Tradeoff, point_of

APP = Path(__file__).resolve().parents[2] / "app"
LANTERN_SETTINGS = GenerationSettings(drafter="jacobi", k=3, delta=0.2, seed=7)


def recording(steps, per_step: int, dt: float, total: int = 16) -> Recording:
    rec = Recording(total)
    for i in range(steps):
        n = min(total, (i + 1) * per_step)
        rec.fixed.append(n)
        rec.target.append(i + 1)
        rec.drafter.append(0)
        rec.elapsed.append((i + 1) * dt)
    rec.order = list(range(rec.fixed[-1]))
    return rec


def result(job, wall: float, forwards: int, rec=None, image=None) -> JobResult:
    image = np.zeros((8, 8, 3), np.uint8) if image is None else image
    stats = {"wall_seconds": wall, "target_forwards": forwards, "mean_accepted_length": 16 / (forwards + 1),
             "tokens": 16, "tokens_per_second": 16 / wall}
    return JobResult(job, image, np.zeros(16, np.int64), np.zeros(16, np.uint8), stats, "", "m", recording=rec)


def frame(job, n: int = 4) -> Frame:
    return Frame(job.id, np.zeros((8, 8, 3), np.uint8), np.zeros(16, np.uint8), n, 16, n, 0, 0.1)


# ------------------------------------------------------------------------------------------- no Qt


def test_importing_the_model_imports_no_qt():
    code = ("import sys\nimport lantern_studio.studio.display, lantern_studio.studio.race, "
            "lantern_studio.studio.tradeoff, lantern_studio.studio.variations\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6', 'shiboken6', 'qasync', "
            "'pyqtgraph')))")
    env = {**os.environ, "PYTHONPATH": str(APP), "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


# ------------------------------------------------------------------------------------------- the queue


def test_the_queue_hands_out_one_job_at_a_time_in_order():
    studio = Studio()
    q = studio.queue
    a, b, c = (studio.submit(p, LANTERN_SETTINGS, None) for p in "abc")
    assert [q.position(j) for j in (a, b, c)] == [1, 2, 3] and q.busy
    assert q.take_next() is a and q.take_next() is None  # one runs: nothing more is handed out
    assert [q.position(j) for j in (a, b, c)] == [0, 1, 2]
    assert q.cancel(c.id) is c and q.position(c) is None
    assert q.ended(a) and q.take_next() is b
    assert not q.ended(a)  # not the running one any more
    summary = q.summary()
    assert summary.title == "Queue: 1 running, 0 waiting" and summary.rows[0].startswith("▶ running: #")
    assert q.ended(b) and not q.busy and q.summary().title == "Queue: idle"
    q.stopped = True
    q.add(studio.submit("d", LANTERN_SETTINGS, None))
    assert q.take_next() is None  # shut down


def test_the_queue_says_what_waits_for_the_model():
    q = QueueState()
    q.loading = "warming up the decoder…"
    assert q.summary().title == "Queue: idle · model warming up the decoder…"
    studio = Studio()
    studio.queue.loading = "loading weights…"
    job = studio.submit("x", LANTERN_SETTINGS, None)
    studio.queue.take_next()
    studio.submit("y", LANTERN_SETTINGS, None)
    s = studio.queue.summary()
    assert s.title == "Queue: 2 waiting for the model (loading weights…)"
    assert s.rows[0].startswith("▶ waiting for the model (loading weights): #") and "2nd in line" not in s.rows[1]
    job.cancel()
    assert studio.queue.summary().rows[0].startswith("▶ cancelling…")
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 111)] == \
        ["1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "111th"]


def test_esc_stops_both_halves_of_a_compare_and_nothing_else():
    studio = Studio()
    before = studio.submit("before", LANTERN_SETTINGS, None)
    pair = studio.submit_compare("race", LANTERN_SETTINGS, None)
    after = studio.submit("after", LANTERN_SETTINGS, None)
    q = studio.queue
    assert q.take_next() is before
    assert studio.cancel() == [before]  # a plain job: only itself
    q.ended(before)
    assert q.take_next() is pair.vanilla.job
    stopped = studio.cancel()
    assert stopped == [pair.vanilla.job, pair.lantern.job]
    assert pair.vanilla.job.cancel_requested and q.position(pair.lantern.job) is None
    assert q.position(after) == 1 and pair.group not in studio.pairs and pair.lantern.state == "cancelled"
    q.ended(pair.vanilla.job)
    assert q.take_next() is after
    # Shift+Esc: everything goes, and no pair is left waiting for halves that will never run
    waiting = studio.submit_compare("never", LANTERN_SETTINGS, None)
    studio.cancel_all()
    assert after.cancel_requested and not q.pending and waiting.group not in studio.pairs


# ------------------------------------------------------------------------------------------- Compare


def test_a_compare_is_two_halves_of_one_seed_and_knows_which_is_which():
    studio = Studio()
    pair = studio.submit_compare("race", LANTERN_SETTINGS, "tiny")
    v, l = pair.vanilla.job, pair.lantern.job
    assert (v.settings.drafter, l.settings) == ("none", LANTERN_SETTINGS) and v.group == l.group == pair.group
    assert v.settings.with_(drafter="jacobi") == l.settings and v.model == l.model == "tiny"
    assert (pair.half(v.id).side, pair.half(l.id).side) == (VANILLA, LANTERN) and pair.half(-1) is None
    assert (pair.vanilla.name, pair.lantern.name) == ("vanilla", "LANTERN")
    assert DecodeMethod.of(LANTERN_SETTINGS.with_(k=0)).label == "exact speculative"
    assert DecodeMethod.of(LANTERN_SETTINGS.with_(lam=1.5)).label == "LANTERN++"
    # the window follows the halves in the race view, each in its own lane
    studio.queue.take_next()
    assert studio.started(v).view == RACE and studio.started(v).lane == VANILLA
    assert studio.target_of(frame(v)).lane == VANILLA and studio.target_of(frame(l)) is None
    assert studio.job_finished(result(v, 2.0, 16), {}) is None and pair.speedup is None
    assert studio.started(l).lane == LANTERN and studio.target_of(frame(l)).lane == LANTERN
    done = studio.job_finished(result(l, 0.5, 4), {})
    assert done is pair and pair.complete and pair.group not in studio.pairs and studio.race is pair
    assert pair.speedup == pytest.approx(4.0) and pair.forwards_ratio == pytest.approx(17 / 5)
    assert pair.identical and "Speed-up 4.00×" in pair.summary() and "identical images" in pair.summary()
    # a plain Generate brings the single canvas back
    single = studio.submit("plain", LANTERN_SETTINGS, None)
    assert studio.started(single).view == SINGLE and studio.view == SINGLE
    assert studio.target_of(frame(single)).view == SINGLE


def test_a_failed_half_stops_its_pair():
    studio = Studio()
    pair = studio.submit_compare("race", LANTERN_SETTINGS, None)
    studio.started(pair.vanilla.job)
    assert studio.job_ended(pair.vanilla.job, "failed") is pair
    assert pair.stopped and not pair.complete and pair.lantern.state == "cancelled"
    assert studio.job_ended(studio.submit("x", LANTERN_SETTINGS, None), "failed") is None


def test_a_history_image_is_shown_on_the_single_canvas_finished():
    studio = Studio()
    image = np.ones((8, 8, 3), np.uint8)
    studio.show_history(image, {"prompt": "old"})
    assert studio.view == SINGLE and studio.shown_job_id is None and studio.canvas_finished
    assert studio.finished.image is image and studio.finished.record == {"prompt": "old"}
    assert jsonable({"a": Path("x"), "b": (1, 2)}) == {"a": "x", "b": [1, 2]}


# ------------------------------------------------------------------------------------------- Generate ×4


def test_four_variations_get_four_different_fresh_seeds():
    draws = iter([5, 5, 9, 7, 9, 3, 11])  # repeats and the seed to avoid are skipped
    assert fresh_seeds(COUNT, lambda: next(draws), avoid=[7]) == [5, 9, 3, 11]
    studio = Studio()
    v = studio.submit_variations("cats", LANTERN_SETTINGS, "tiny", [5, 9, 3, 11])
    jobs = [c.job for c in v.cells]
    assert v.seeds == [j.settings.seed for j in jobs] == [5, 9, 3, 11]
    assert all(j.settings == LANTERN_SETTINGS.with_(seed=j.settings.seed) for j in jobs)  # all else the same
    assert {j.group for j in jobs} == {v.group} and all(j.role == "variation" and j.model == "tiny" for j in jobs)
    assert list(studio.queue.pending) == jobs and studio.pair_of(jobs[0]) is None
    assert [c.caption() for c in v.cells][0] == "seed 5 · waiting" and "[×4]" in jobs[0].label()
    # a Compare made later gets a group of its own
    assert studio.submit_compare("x", LANTERN_SETTINGS, None).group != v.group


def test_the_grid_fills_in_as_the_variations_decode_and_follows_the_running_one():
    studio = Studio()
    v = studio.submit_variations("cats", LANTERN_SETTINGS, None, [1, 2, 3, 4])
    a, b = v.cells[0].job, v.cells[1].job
    studio.queue.take_next()
    assert studio.started(a) == studio.target_of(frame(a)) and studio.started(a).cell == 0
    assert studio.view == GRID and studio.shown_job_id == a.id and v.cells[0].state == "running"
    assert v.cells[0].caption(4, 16) == "seed 1 · 25%"
    assert studio.job_finished(result(a, 0.25, 4), {"seed": 1}) is None
    assert v.cells[0].done and v.cells[0].caption() == "seed 1 · 0.25 s"
    assert studio.finished.record == {"seed": 1} and not studio.canvas_finished  # the single canvas shows none
    assert studio.target_of(frame(b)).cell == 1 and studio.started(b).cell == 1 and studio.shown_job_id == b.id
    assert "1 of 4 done" in v.summary() and "Esc stops the rest" in v.summary()


def test_clicking_a_finished_variation_makes_it_the_current_picture_while_the_rest_decode():
    studio = Studio()
    v = studio.submit_variations("cats", LANTERN_SETTINGS, None, [1, 2, 3, 4])
    jobs = [c.job for c in v.cells]
    studio.started(jobs[0])
    studio.job_finished(result(jobs[0], 0.2, 4, image=np.full((8, 8, 3), 1, np.uint8)), {"seed": 1})
    studio.variation_saved(jobs[0], 41)
    studio.started(jobs[1])
    assert studio.choose_variation(1) is None and v.chosen is None  # still decoding: nothing to show yet
    assert studio.choose_variation(7) is None and studio.view == GRID
    cell = studio.choose_variation(0)
    assert cell is v.cells[0] and cell.entry_id == 41 and v.chosen == 0
    assert studio.view == SINGLE and studio.shown_job_id is None and studio.canvas_finished
    assert studio.finished.image[0, 0, 0] == 1 and studio.finished.job_id == jobs[0].id
    # the rest still fill in their cells, but neither take the canvas nor what Save exports
    assert studio.target_of(frame(jobs[1])).cell == 1
    studio.job_finished(result(jobs[1], 0.2, 4), {"seed": 2})
    studio.started(jobs[2])
    assert studio.view == SINGLE and studio.shown_job_id is None and studio.finished.job_id == jobs[0].id
    # back to the grid: the running variation is followed again; the chosen one is still the current picture
    assert studio.show_grid() and studio.view == GRID and studio.shown_job_id == jobs[2].id
    assert studio.finished.job_id == jobs[0].id and Studio().show_grid() is False
    # a plain Generate takes the canvas back
    plain = studio.submit("plain", LANTERN_SETTINGS, None)
    assert studio.started(plain).view == SINGLE and studio.view == SINGLE


def test_esc_stops_the_running_variation_and_the_waiting_ones_but_nothing_queued_after():
    studio = Studio()
    v = studio.submit_variations("cats", LANTERN_SETTINGS, None, [1, 2, 3, 4])
    after = studio.submit("after", LANTERN_SETTINGS, None)
    jobs = [c.job for c in v.cells]
    q = studio.queue
    q.take_next()
    studio.started(jobs[0])
    studio.job_finished(result(jobs[0], 0.2, 4), {})
    q.ended(jobs[0])
    q.take_next()
    studio.started(jobs[1])
    stopped = studio.cancel()
    assert stopped == jobs[1:] and jobs[1].cancel_requested
    assert [c.state for c in v.cells] == ["done", "running", "cancelled", "cancelled"]
    assert list(q.pending) == [after]
    assert studio.job_ended(jobs[1], "cancelled") is None and v.cells[1].state == "cancelled" and v.ended
    assert "1 of 4 done, 3 stopped" in v.summary()
    # Shift+Esc also takes the waiting variations off
    w = studio.submit_variations("dogs", LANTERN_SETTINGS, None, [5, 6, 7, 8])
    studio.cancel_all()
    assert [c.state for c in w.cells] == ["cancelled"] * 4 and not q.pending


def test_a_failed_variation_stops_alone():
    studio = Studio()
    v = studio.submit_variations("cats", LANTERN_SETTINGS, None, [1, 2, 3, 4])
    studio.started(v.cells[0].job)
    assert studio.job_ended(v.cells[0].job, "failed") is None
    assert [c.state for c in v.cells] == ["failed", "waiting", "waiting", "waiting"] and not v.ended


# ------------------------------------------------------------------------------------------- the race


def test_the_race_runs_both_lanes_on_one_clock_and_the_faster_finishes_first():
    vanilla = recording(16, 1, 0.1)  # 1.6 s: one token a step
    lantern = recording(4, 4, 0.1)  # 0.4 s: four tokens a step
    race = Race.of(vanilla, lantern)
    assert race.slowmo == pytest.approx(RACE_SECONDS / 1.6) and race.replay_seconds == pytest.approx(RACE_SECONDS)
    # the same recorded moment in both lanes: 0.35 s into each decode
    v, l = race.at(0.35 * race.slowmo)
    assert (v.step, v.n_fixed, l.step, l.n_fixed) == (2, 3, 2, 12) and v.seconds == l.seconds == pytest.approx(0.35)
    assert l.tokens_per_forward == pytest.approx(12 / 4) and v.tokens_per_forward == pytest.approx(3 / 4)
    v, l = race.at(0.45 * race.slowmo)
    assert l.done and not v.done and race.winner == LANTERN
    assert l.seconds == pytest.approx(0.4)  # its clock stops at its own wall time
    assert not race.done(0.45 * race.slowmo) and race.done(race.replay_seconds)
    assert race.at(-1)[0].step == -1 and race.at(-1)[0].n_fixed == 0
    assert "slowed" in race.describe()
    assert Race.of(lantern, lantern).winner is None


def test_one_slow_motion_factor_never_speeds_up_and_has_a_ceiling():
    assert slowmo_for(10.0, 2.0) == 1.0  # a slow decode plays in real time
    assert Race.of(recording(3, 2, 0.5), recording(3, 2, 0.5), slowmo=1.4).describe().endswith("(slowed 1.4×)")
    assert Race.of(recording(3, 2, 0.5), recording(3, 2, 0.5), slowmo=1.0).describe().endswith("(real time)")
    assert slowmo_for(1e-9) == MAX_SLOWMO
    assert slowmo_for(0.0, 0.0) == 1.0
    rec = recording(3, 2, 0.5)
    assert lane_at(rec, 99).done and lane_at(rec, 99).seconds == pytest.approx(1.5)


def test_a_pair_races_only_with_both_recordings():
    studio = Studio()
    pair = studio.submit_compare("race", LANTERN_SETTINGS, None)
    studio.job_finished(result(pair.vanilla.job, 1.0, 16, recording(16, 1, 0.06)), {})
    studio.job_finished(result(pair.lantern.job, 0.3, 4), {})
    assert pair.complete and not pair.can_race
    pair.lantern.result.recording = recording(4, 4, 0.075)
    assert pair.can_race
    pair.replayable = False
    assert not pair.can_race
    assert isinstance(ComparePair.of(1, pair.vanilla.job, pair.lantern.job).halves, tuple)


def test_a_compares_quality_is_one_seed_a_side_and_says_so():
    studio = Studio()
    pair = studio.submit_compare("quality", LANTERN_SETTINGS, None)
    assert pair.quality_words() == "" and pair.vanilla.fidelity_words() == ""
    for half, score in ((pair.vanilla, 0.62), (pair.lantern, None)):
        r = result(half.job, 1.0, 8)
        r.score = score
        studio.job_finished(r, {})
    assert pair.vanilla.fidelity == fidelity.Interval(0.62, 0.0, 1.0, 1)  # one seed: the whole range
    assert pair.vanilla.fidelity_words() == "prompt fidelity 62% (1 seed)"
    assert pair.lantern.fidelity is None and pair.lantern.fidelity_words() == ""  # not scored: nothing said
    assert "vanilla 62% (1 seed)" in pair.quality_words() and "races one seed" in pair.quality_words()


# ------------------------------------------------------------------------------------------- the chart


def record(drafter="jacobi", k=3, wall=1.0, tpf=2.0, tps=100.0, score=None, prompt="p", seed=1, delta=0.2):
    rec = {"prompt": prompt, "model": "m", "stats": {"wall_seconds": wall, "mean_accepted_length": tpf,
                                                     "tokens_per_second": tps},
           "settings": GenerationSettings(drafter=drafter, k=k, delta=delta, seed=seed).to_dict()}
    if score is not None:
        rec["prompt_fidelity"] = score
    return json.loads(json.dumps(rec))


def test_the_chart_axes_keep_their_meaning_and_markers_their_shape():
    chart = Tradeoff()
    lone = point_of(record(tpf=3.0, prompt="lone"), "lone")
    chart.add(lone)
    before = [(p.point.kind, p.x, p.y) for p in chart.placed()]
    assert chart.x_label == X_LABEL == "tokens per target forward" and chart.y_label == Y_SPEED_LABEL
    # a Compare's vanilla run and its LANTERN half: the axes keep their meaning, every point stays drawn
    chart.add(point_of(record(drafter="none", k=0, wall=2.0, tpf=1.0, tps=50.0), "vanilla"))
    chart.add(point_of(record(wall=0.5, tpf=4.0, tps=200.0), "lantern"))
    assert chart.x_label == X_LABEL and chart.y_label == Y_SPEED_LABEL
    placed = [(p.point.kind, p.x, p.y) for p in chart.placed()]
    assert placed[0] == before[0]  # the first point did not move nor change shape
    assert placed == [("LANTERN", 3.0, 100.0), ("vanilla", 1.0, 50.0), ("LANTERN", 4.0, 200.0)]
    assert chart.points[2].speedup == pytest.approx(4.0) and lone.speedup is None  # in the tooltip only
    assert "4.00× faster than its vanilla run" in chart.tip(chart.points[2], "")
    chart.quality = True
    assert chart.y_label == Y_QUALITY_LABEL and chart.placed() == [] and chart.hidden == 3  # no scores


def test_runs_that_differ_only_in_their_seed_are_one_point_at_their_mean_with_its_interval():
    chart = Tradeoff(quality=True)
    same = [record(seed=s, score=f, tpf=t) for s, f, t in [(1, 0.5, 2.0), (2, 0.6, 2.2), (3, 0.7, 2.4)]]
    other = record(seed=1, score=0.3, tpf=3.0, delta=0.5)  # another δ: a point of its own
    chart.extend([point_of(r, f"run {i}") for i, r in enumerate(same + [other])])
    chart.add(point_of(record(seed=4, score=None), "unscored"))  # the meter could not judge it: not drawn
    three, one = chart.placed()
    iv = fidelity.mean_interval([0.5, 0.6, 0.7])
    assert three.seeds == 3 and three.interval == iv and iv.n == 3
    assert three.x == pytest.approx(2.2) and three.y == pytest.approx(60.0)
    assert three.error == (pytest.approx(60.0 - 100 * iv.low), pytest.approx(100 * iv.high - 60.0))
    assert three.point.settings.seed == 3  # a click loads the latest run's settings
    assert "3 seeds" in chart.tip(three, "") and fidelity.format_interval(iv) in chart.tip(three, "")
    # one seed: no bar (its interval is the whole range), and its tooltip says "1 seed"
    assert one.seeds == 1 and one.error is None and one.interval == fidelity.Interval(0.3, 0.0, 1.0, 1)
    assert "prompt fidelity 30% (1 seed)" in chart.tip(one, "") and "whole 0–100 %" in chart.tip(one, "")
    assert chart.hidden == 1 and len(chart.points) == 5
    # the same seed again draws the same picture: it counts once (its latest run), not as a fourth seed
    chart.add(point_of(record(seed=3, score=0.9, tpf=2.4), "seed 3 again"))
    again = chart.placed()[0]
    assert again.seeds == 3 and again.interval == fidelity.mean_interval([0.5, 0.6, 0.9])
    # another model, prompt or sampling is another point; so is vanilla
    chart.add(point_of(record(seed=1, score=0.5, prompt="q"), "other prompt"))
    assert len(chart.placed()) == 3
    # without a recogniser y is the mean tokens per second, and no interval is drawn
    speed = Tradeoff()
    speed.extend(point_of(record(seed=s, tps=t), "r") for s, t in [(1, 100.0), (2, 200.0)])
    (both,) = speed.placed()
    assert both.y == pytest.approx(150.0) and both.error is None and "mean of 2 seeds" in speed.tip(both, "")


def test_chart_points_come_from_records_and_a_bad_record_is_skipped():
    p = point_of(record(score=0.5), "h")
    assert p.score == 0.5 and p.settings.k == 3 and p.kind == "LANTERN"
    assert point_of({"stats": {}}, "x") is None
    assert point_of({"stats": {"wall_seconds": 1, "mean_accepted_length": 2}, "settings": "nonsense"}, "x") is None
    assert point_of({"stats": {"wall_seconds": True, "mean_accepted_length": 2}}, "x") is None
    assert point_of(["not", "a", "dict"], "x") is None
    assert point_of(record(drafter="none", k=0), "v").kind == "vanilla"
