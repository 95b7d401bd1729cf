"""Sweep δ / Sweep k's state (studio/sweep.py), as plain Python: the ladder around the slider's value, the
job set (the vanilla run first), which result belongs to which rung, the captions' numbers and the chart's
curve — no QApplication, no worker, no model."""

from __future__ import annotations

import random
import statistics
import subprocess
import sys

import numpy as np
import pytest

from lantern_studio.engine.settings import GenerationSettings
from lantern_studio.studio.jobs import JobResult
from lantern_studio.studio.queue import QueueState
from lantern_studio.studio.display import Studio, jsonable
from lantern_studio import fidelity
from lantern_studio.studio.sweep import (
    DELTA, DELTA_FROM_ZERO, K, K_FROM_ZERO, ROLE, SEEDS, SweepSet, delta_ladder, k_ladder, ladder, problem, sweep_seeds,
)
from lantern_studio.studio.tradeoff import Tradeoff

BASE = GenerationSettings(drafter="jacobi", k=64, delta=0.2, seed=1234, temperature=0.9)


def result(job, wall: float, tpf: float, score=None) -> JobResult:
    stats = {"wall_seconds": wall, "target_forwards": int(16 / tpf) - 1, "mean_accepted_length": tpf,
             "tokens": 16, "tokens_per_second": 16 / wall}
    return JobResult(job, np.zeros((8, 8, 3), np.uint8), np.zeros(16, np.int64), np.zeros(16, np.uint8), stats, "",
                     "m", score=score)


def test_importing_the_sweep_state_imports_no_qt():
    code = ("import sys\nimport lantern_studio.studio.sweep\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6', 'shiboken6', 'pyqtgraph')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# ------------------------------------------------------------------------------------------- the ladder


@pytest.mark.parametrize("delta, want", [
    (0.2, [0.0, 0.1, 0.2, 0.3, 0.5]),
    (0.5, [0.0, 0.25, 0.5, 0.75, 1.0]),  # 2.5 × 0.5 clipped to the slider's 1
    (1.0, [0.0, 0.5, 1.0]),  # 1.5 and 2.5 × clip to 1: repeats dropped
    (0.0123, [0.0, 0.0062, 0.0123, 0.0185, 0.0307]),  # the slider's 4 decimals
    (0.0, list(DELTA_FROM_ZERO)),  # nothing to scale: the fixed ladder
])
def test_the_delta_ladder_is_fractions_of_the_setting_clipped_to_the_slider(delta, want):
    assert delta_ladder(delta) == pytest.approx(want)


@pytest.mark.parametrize("k, vocab, want", [
    (64, 1024, [16, 32, 64, 128, 256]),
    (64, 100, [16, 32, 64, 99]),  # 2k and 4k clip to V − 1
    (1, 64, [1, 2, 4]),  # ¼ and ½ of 1 clip to 1
    (6, 64, [2, 3, 6, 12, 24]),  # rounded to whole numbers
    (0, 64, [4, 8, K_FROM_ZERO, 32, 63]),  # exact: around K_FROM_ZERO
    (3, 2, [1]),  # a two-token codebook has one k
])
def test_the_k_ladder_is_quarters_to_fourfold_clipped_to_the_codebook(k, vocab, want):
    assert k_ladder(k, vocab) == want


def test_every_ladder_is_ascending_in_range_and_holds_the_setting():
    rng = random.Random(5)
    for _ in range(500):
        d = round(rng.random(), 4)
        values = delta_ladder(d)
        assert values == sorted(set(values)) and all(0.0 <= v <= 1.0 for v in values)
        assert 0.0 in values and (d in values or d == 0)
        vocab = rng.choice([2, 16, 64, 1024, 16384])
        k = rng.randrange(0, vocab)
        ks = k_ladder(k, vocab)
        assert ks == sorted(set(ks)) and all(isinstance(v, int) and 1 <= v <= vocab - 1 for v in ks)
        assert k == 0 or k in ks
    assert ladder(DELTA, BASE, None) == delta_ladder(0.2) and ladder(K, BASE, 1024) == k_ladder(64, 1024)
    with pytest.raises(ValueError):
        ladder(K, BASE, None)


def test_a_sweep_that_would_show_nothing_says_why_in_one_line():
    assert problem(DELTA, BASE, 1024) is None and problem(K, BASE, 1024) is None
    cases = {
        (DELTA, BASE.with_(drafter="none")): "pick a drafter",
        (K, BASE.with_(drafter="none")): "pick a drafter",
        (DELTA, BASE.with_(k=0)): "k > 0",
        (DELTA, BASE.with_(lam=2.0, bound="lantern++")): "LANTERN++",
        (K, BASE.with_(delta=0.0)): "δ > 0",
        (K, BASE.with_(lam=1.0, bound="lantern++")): "δ > 0",
        (K, BASE): "waits for the model",  # with no codebook size yet (vocab None below)
    }
    for (axis, s), words in cases.items():
        why = problem(axis, s, None if (axis, s) == (K, BASE) else 1024)
        assert why is not None and words in why and "\n" not in why, (axis, s, why)
    assert problem(K, BASE.with_(delta=0.0, lam=2.0, bound="lantern++"), 1024) is None  # λ is a budget


# ------------------------------------------------------------------------------------------- the job set


def test_the_job_set_is_the_vanilla_run_then_the_ladder_at_three_seeds_each_by_default():
    studio = Studio()
    group = studio.new_group()
    assert studio.new_group() != group  # a fresh id each time: never another request's
    s = SweepSet.of(group, DELTA, "a cat", BASE, delta_ladder(BASE.delta), "m", quality=True)
    jobs = s.jobs
    assert SEEDS == fidelity.SWEEP_SEEDS == 3 and s.seeds == [1234, 1235, 1236] and s.seeds_words() == "seeds 1234–1236"
    assert [r.index for r in s.rungs] == list(range(6)) and s.values == [0.0, 0.1, 0.2, 0.3, 0.5]
    assert len(jobs) == 6 * 3 and len({j.id for j in jobs}) == 18 and "[sweep]" in jobs[1].label()
    # queued seed by seed: every rung's first seed (the strip's pictures), then the second, then the third
    assert [j.settings.seed for j in jobs] == [1234] * 6 + [1235] * 6 + [1236] * 6
    assert jobs[0].settings == BASE.with_(drafter="none") and s.baseline.vanilla
    assert [j.settings.drafter for j in jobs[::6]] == ["none"] * 3  # each seed's round starts with its vanilla run
    for rung in s.rungs:
        assert [d.seed for d in rung.draws] == s.seeds and rung.job is rung.draws[0].job
        for d in rung.draws:  # only δ (and the seed) differs: the same sampling
            want = BASE.with_(drafter="none") if rung.vanilla else BASE.with_(delta=rung.value)
            assert d.job.settings == want.with_(seed=d.seed)
    assert all(j.group == group and j.role == ROLE and j.prompt == "a cat" and j.model == "m" for j in jobs)
    ks = SweepSet.of(group, K, "a cat", BASE, [16, 64], None, seeds=1)
    assert [r.job.settings.k for r in ks.rungs[1:]] == [16, 64] and all(isinstance(v, int) for v in ks.values)
    assert len(ks.jobs) == 3 and ks.seeds_words() == "seed 1234"
    # the session's Sweep draws as many by default, and as many as asked
    assert len(Studio().submit_sweep(DELTA, "a cat", BASE, [0.1, 0.2], None).jobs) == 3 * SEEDS
    assert len(Studio().submit_sweep(DELTA, "a cat", BASE, [0.1, 0.2], None, seeds=5).jobs) == 3 * 5


def test_the_seeds_follow_the_one_shown_and_stay_in_range():
    assert sweep_seeds(7, 3) == [7, 8, 9] and sweep_seeds(7, 1) == [7]
    assert sweep_seeds(2**63 - 1, 3) == [2**63 - 1, 2**63 - 2, 2**63 - 3]  # the largest seed counts down
    for bad in (0, 17):
        with pytest.raises(ValueError):
            sweep_seeds(7, bad)


def test_a_rungs_numbers_are_over_its_seeds_mean_and_interval_and_the_curve_has_one_vertex_a_value():
    s = SweepSet.of(1, DELTA, "a cat", BASE, [0.1, 0.3], quality=True)
    v, a, b = s.rungs
    walls = [[1.0, 1.2, 0.9], [0.5, 0.4, 0.6], [0.25, 0.3, 0.2]]  # by rung, then seed
    tpfs = [[1.0, 1.0, 1.0], [2.0, 2.2, 2.4], [3.0, 3.3, 3.6]]
    scores = [[0.7, 0.8, 0.9], [0.6, 0.65, 0.7], [0.2, 0.4, 0.0]]
    for seed in range(3):
        for i, rung in enumerate(s.rungs):
            d = rung.draws[seed]
            assert s.started(d.job) is rung and s.running is rung
            res = result(d.job, walls[i][seed], tpfs[i][seed], scores[i][seed])
            assert s.finished(res, jsonable(res.record())) is rung
            if seed == 0:  # the first seed alone: its picture, and an interval of the whole range
                assert rung.fidelity == fidelity.Interval(scores[i][0], 0.0, 1.0, 1)
    assert s.ended and "9 of 9 done" in s.summary()
    iv = b.fidelity
    assert iv.n == 3 and iv.mean == pytest.approx(0.2) and iv == fidelity.mean_interval([0.2, 0.4, 0.0])
    assert iv.low == 0.0 and iv.high == pytest.approx(0.2 + 4.303 * 0.2 / 3 ** 0.5)  # clipped at 0
    row = s.row(a)
    assert row["fidelity"] == pytest.approx(0.65) and row["fidelity_n"] == 3 and row["tokens_per_forward"] == pytest.approx(2.2)
    assert row["fidelity_low"] < 0.65 < row["fidelity_high"]
    # the speed-up: the median over seeds of vanilla's wall time over the rung's, seed by seed
    assert s.speedup(a) == pytest.approx(statistics.median([1.0 / 0.5, 1.2 / 0.4, 0.9 / 0.6]))
    assert s.speedup(v) == pytest.approx(1.0)
    # the caption: the mean on one line, its interval and seeds on the next; the tooltip says it whole
    mean, spread = fidelity.format_interval(a.fidelity).split(" (")
    assert s.caption(a).split("\n")[3:] == [f"fid {mean}", spread.rstrip(")")] and spread.endswith("3 seeds)")
    assert f"{fidelity.NAME} {fidelity.format_interval(a.fidelity)}" in s.tooltip(a)
    # the strip shows the first seed's picture; the curve joins each value's seeds at their mean
    assert a.result.job.settings.seed == 1234
    chart = Tradeoff(quality=True)
    chart.set_curve(s.curve())
    assert len(chart.curve) == 6
    assert chart.curve_placed() == [(pytest.approx(2.2), pytest.approx(65.0)), (pytest.approx(3.3), pytest.approx(20.0))]


@pytest.mark.parametrize("path", ["eager", "compiled"])
def test_every_job_of_a_sweep_warms_its_path_and_all_decode_on_one(path):
    """As a Compare's halves: one path fixed when the sweep is asked for, each job warming it untimed first,
    so that no speed-up counts the vanilla path's first-use warm-up."""
    s = Studio().submit_sweep(DELTA, "a cat", BASE, [0.0, 0.2], "m", path=path)
    assert s.path == path and all(j.steps == path and j.warm for j in s.jobs) and len(s.jobs) == 3 * SEEDS
    assert f"decoding only, all {path}" in s.summary() and "untimed" in s.help()
    assert SweepSet.of(1, DELTA, "x", BASE, [0.1], path="anything else").path == "eager"


def test_the_speedups_leave_the_warm_ups_out_and_say_so():
    """A vanilla run whose path took 20 s to warm: its wall time (what the speed-ups divide) is the decode's
    alone, the warm-up is said apart in the tooltip, and the caption says the ratio is of decoding."""
    s = SweepSet.of(1, DELTA, "a cat", BASE, [0.2])
    v, r = s.rungs
    for rung, wall, warm in [(v, 1.2, 20.0), (r, 0.6, 0.3)]:
        res = result(rung.job, wall, 1.0 if rung is v else 2.0)
        res.warm_seconds = warm
        s.finished(res, jsonable(res.record()))
    assert s.speedup(r) == pytest.approx(2.0)  # 1.2 / 0.6, not (1.2 + 20) / (0.6 + 0.3)
    assert s.caption(r).split("\n")[2] == "decoding 2.00×"
    assert "warm-up not counted: 20.0 s" in s.tooltip(v) and "(decoding only)" in s.tooltip(r)
    assert v.path == r.path == "eager" and s.path_words() == "all eager"
    r.result.stats["compiled_forwards"] = 5  # a run that decoded compiled: the label says the paths differ
    assert s.path_words() == "compiled and eager" and "compiled and eager" in s.summary()


def test_a_sweeps_seed_joins_the_session_so_a_later_x4_never_draws_it():
    studio = Studio()
    sweep = studio.submit_sweep(K, "a cat", BASE.with_(seed=777), [16, 64], None)
    assert {j.settings.seed for j in sweep.jobs} == {777, 778, 779} and {777, 778, 779} <= studio.seeds_used
    draws = iter([777, 1, 777, 2, 3, 4])
    assert studio.variation_seeds(lambda: next(draws)) == [1, 2, 3, 4]
    assert all(studio.queue.position(j) is not None for j in sweep.jobs)  # queued, in order
    assert [studio.queue.position(j) for j in sweep.jobs] == sorted(studio.queue.position(j) for j in sweep.jobs)


def test_results_land_on_their_rungs_whatever_order_they_end_in_and_the_speedups_are_against_vanilla():
    s = SweepSet.of(1, DELTA, "a cat", BASE, [0.0, 0.1, 0.2], quality=True, seeds=1)
    v, r0, r1, r2 = s.rungs
    assert s.summary().startswith("Sweep δ (seed 1234) · speed-ups: decoding only, all eager · 0 of 4 done")
    assert "Esc stops the rest" in s.summary()
    # a rung that ends before the vanilla run (a re-ordered queue) has no speed-up until the baseline is in
    for rung, wall, tpf, score in [(r1, 0.5, 2.0, 0.4), (v, 1.0, 1.0, 0.6), (r0, 0.8, 1.25, 0.6)]:
        s.started(rung.job)
        assert s.running is rung and "starting…" in s.caption(rung) and "50%" in s.caption(rung, 8, 16)
        res = result(rung.job, wall, tpf, score)
        assert s.finished(res, jsonable(res.record())) is rung and rung.result is res
        if rung is r1:
            assert s.speedup(r1) is None and "—" in s.caption(r1)
    assert s.speedup(v) == pytest.approx(1.0) and s.speedup(r1) == pytest.approx(2.0)
    assert s.speedup(r0) == pytest.approx(1.25)
    assert s.caption(r1) == "δ 0.1\n2.00 tok/fwd\ndecoding 2.00×\nfid 40%\n1 seed"  # one seed: said so
    assert s.caption(v) == "vanilla\n1.00 tok/fwd\nbaseline\nfid 60%\n1 seed"
    assert s.row(r0) == {"value": "δ 0", "tokens_per_forward": 1.25, "speedup": pytest.approx(1.25), "fidelity": 0.6,
                         "fidelity_low": 0.0, "fidelity_high": 1.0, "fidelity_n": 1}
    assert s.caption(r2) == "δ 0.2\nwaiting" and not s.ended
    s.quality = False  # a model without a recogniser: no verdict
    assert s.caption(r1) == "δ 0.1\n2.00 tok/fwd\ndecoding 2.00×" and "fidelity" not in s.tooltip(r1)
    assert s.stopped(r2.job, "failed") is r2 and s.ended and s.caption(r2) == "δ 0.2\nfailed"
    assert "3 of 4 done, 1 stopped" in s.summary() and "click one" in s.summary()
    other = SweepSet.of(2, DELTA, "x", BASE, [0.1])
    assert s.rung_of(other.jobs[1].id) is None and s.started(other.jobs[1]) is None  # another sweep's job


def test_the_curve_joins_the_finished_rungs_in_ladder_order_and_leaves_vanilla_out():
    s = SweepSet.of(1, K, "a cat", BASE, [16, 64, 256], quality=True)
    v, a, b, c = s.rungs
    for rung, wall, tpf, score in [(c, 0.4, 3.0, 0.1), (v, 1.0, 1.0, 0.7), (a, 0.9, 1.5, 0.65)]:
        res = result(rung.job, wall, tpf, score)
        s.finished(res, jsonable(res.record()))
    curve = s.curve()
    assert [p.settings.k for p in curve] == [16, 256] and [p.label for p in curve] == ["k 16", "k 256"]
    chart = Tradeoff(quality=True)
    chart.set_curve(curve)
    assert chart.curve_placed() == [(1.5, pytest.approx(65.0)), (3.0, pytest.approx(10.0))]
    chart.quality = False  # y is tokens per second without a recogniser
    assert chart.curve_placed() == [(1.5, pytest.approx(16 / 0.9)), (3.0, pytest.approx(16 / 0.4))]
    res = result(b.job, 0.6, 2.0, None)  # a rung the recogniser cannot judge: no y while y is fidelity
    s.finished(res, jsonable(res.record()))
    chart.quality = True
    chart.set_curve(s.curve())
    assert [p.settings.k for p in chart.curve] == [16, 64, 256] and [x for x, _ in chart.curve_placed()] == [1.5, 3.0]
    chart.clear()
    assert chart.curve == [] and chart.curve_placed() == []


def test_waiting_rungs_taken_off_the_queue_are_cancelled_and_only_finished_ones_can_be_chosen():
    q = QueueState()
    s = SweepSet.of(3, DELTA, "a cat", BASE, [0.0, 0.2], seeds=1)
    for job in s.jobs:
        q.add(job)
    running = q.take_next()
    s.started(running)
    assert s.forget_unqueued(lambda j: q.position(j) is not None) == []
    assert s.choose(0) is None and s.choose(9) is None and s.chosen is None  # still decoding; not a rung
    stopped = q.cancel_with_group()  # Esc: the running vanilla run and the two waiting rungs
    assert [j.id for j in stopped] == [j.id for j in s.jobs]
    gone = s.forget_unqueued(lambda j: q.position(j) is not None or (q.current is not None and q.current.id == j.id))
    assert [r.index for r in gone] == [1, 2] and [r.state for r in s.rungs] == ["running", "cancelled", "cancelled"]
    s.stopped(running, "cancelled")
    assert s.ended and s.choose(0) is None and "none finished" in s.summary()
    t = SweepSet.of(4, DELTA, "a cat", BASE, [0.2])
    res = result(t.rungs[1].job, 0.5, 2.0)
    t.finished(res, jsonable(res.record()))
    assert t.choose(1) is t.rungs[1] and t.chosen == 1
