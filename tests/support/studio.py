"""Driving the studio window in tests (pytest-qt, offscreen): open it on a model
folder and wait until it is ready; run one generation to its result."""

from __future__ import annotations

import os

# ms; generous for a loaded CI machine, never a timing assert. LANTERN_TEST_WAIT_MS raises it where the
# machine is busier still (the first model load of a process imports torch's compiler: a minute and more
# on two cores shared with a training run)
WAIT = int(os.environ.get("LANTERN_TEST_WAIT_MS") or 30000)


def open_window(qtbot, folder):
    from lantern_studio.gui.app import create_main_window

    w = create_main_window(str(folder) if folder is not None else None)
    qtbot.addWidget(w)
    w.confirm = lambda title, text: True
    w.started_jobs = record_started(w)
    w.show()
    if folder is not None:
        qtbot.waitUntil(lambda: w.model_info is not None, timeout=WAIT)
    return w


def run_job(qtbot, w, prompt="a red heart"):
    w.controls.set_prompt(prompt)
    job = w.generate()
    assert job is not None, w.banner.text()
    qtbot.waitUntil(lambda: w.last_result is not None and w.last_result.job.id == job.id, timeout=WAIT)
    return job, w.last_result


def record_started(w) -> list:
    """Every job the window's queue starts, in order (the window keeps no such list itself)."""
    started: list = []
    w.jobs.answers.job_started.connect(started.append)
    return started


def on_steps(monkeypatch, fn) -> None:
    """Call ``fn(job, event)`` in the worker thread at each decoding step of every job, before the step's
    frame is drawn (a slow ``fn`` slows decoding down: room to cancel mid-run)."""
    from lantern_studio.gui import worker

    real = worker._LiveView.step

    def step(view, ev):
        fn(view.job, ev)
        real(view, ev)

    monkeypatch.setattr(worker._LiveView, "step", step)
