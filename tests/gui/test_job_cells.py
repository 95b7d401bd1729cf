"""studio/job_cells.py: the bookkeeping a Generate ×4 grid and a Sweep strip share — which cell a job fills,
which one runs, when all have ended, which finished one a person chose, and the title's counts — driven the
same way through both sets, as plain Python."""

from __future__ import annotations

import numpy as np
import pytest

from lantern_studio.engine.settings import GenerationSettings
from lantern_studio.studio.jobs import Job, JobResult
from lantern_studio.studio.job_cells import progress_text
from lantern_studio.studio.sweep import DELTA, SweepSet
from lantern_studio.studio.variations import VariationSet

SETTINGS = GenerationSettings(drafter="jacobi", k=8, delta=0.2, seed=5)


def result(job, wall=0.5) -> JobResult:
    stats = {"wall_seconds": wall, "target_forwards": 8, "mean_accepted_length": 2.0, "tokens": 16}
    return JobResult(job, np.zeros((8, 8, 3), np.uint8), np.zeros(16, np.int64), np.zeros(16, np.uint8), stats, "",
                     "m")


def grid() -> VariationSet:
    return VariationSet.of(7, [Job("a cat", SETTINGS.with_(seed=s), None, "variation", 7) for s in (1, 2, 3, 4)])


def strip() -> SweepSet:
    return SweepSet.of(8, DELTA, "a cat", SETTINGS, [0.1, 0.2, 0.4], seeds=1)  # one cell a job, as the grid's


def members(s):
    return s.cells if isinstance(s, VariationSet) else s.rungs


@pytest.mark.parametrize("make", [grid, strip])
def test_both_sets_follow_their_jobs_from_waiting_to_ended(make):
    s = make()
    cells = members(s)
    assert [c.state for c in cells] == ["waiting"] * 4 and s.running is None and not s.ended
    assert s.started(cells[0].job) is cells[0] and s.running is cells[0]
    assert s.choose(0) is None and s.chosen is None  # still decoding: nothing to show
    r = result(cells[0].job)
    assert s.finished(r, {"n": 1}) is cells[0] and cells[0].done
    assert cells[0].result is r and cells[0].record == {"n": 1}
    s.saved(cells[0].job, 42)
    assert cells[0].entry_id == 42 and s.running is None
    assert s.stopped(cells[1].job, "failed") is cells[1] and cells[1].state == "failed"
    assert s.progress() == "1 of 4 done, 1 stopped · Esc stops the rest"
    stranger = Job("a dog", SETTINGS, None, "variation", 99)  # another set's job changes nothing here
    assert s.started(stranger) is None and s.finished(result(stranger), {}) is None
    assert s.stopped(stranger, "failed") is None
    assert [c.state for c in cells] == ["done", "failed", "waiting", "waiting"]
    assert s.choose(1) is None and s.choose(4) is None and s.choose(-1) is None and s.chosen is None
    assert s.choose(0) is cells[0] and s.chosen == 0


def test_the_grid_stops_every_waiting_cell_and_the_strip_only_those_that_left_the_queue():
    g, s = grid(), strip()
    for one in (g, s):
        one.started(members(one)[0].job)
    assert g.stop_waiting() == g.cells[1:] and g.running is g.cells[0] and not g.ended
    still_queued = {s.rungs[3].job.id}
    assert s.forget_unqueued(lambda job: job.id in still_queued) == s.rungs[1:3]
    assert [r.state for r in s.rungs] == ["running", "cancelled", "cancelled", "waiting"]
    g.stopped(g.cells[0].job, "cancelled")
    assert g.ended and g.progress() == "0 of 4 done, 4 stopped · none finished"
    g2 = grid()
    for c in g2.cells:
        g2.finished(result(c.job), {})
    assert g2.ended and g2.summary() == "Generate ×4 · 4 of 4 done · click one to pick it"


def test_a_running_cells_progress_is_a_percentage_once_its_first_frame_came():
    assert progress_text(None, 256) == "starting…" and progress_text(5, 0) == "starting…"
    assert progress_text(122, 256) == "47%" and progress_text(256, 256) == "100%"
