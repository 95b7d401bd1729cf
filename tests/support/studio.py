"""Driving the studio window in tests (pytest-qt, offscreen): open it on a model
folder and wait until it is ready; run one generation to its result."""

from __future__ import annotations

import os
import time

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
    if folder is not None:  # loaded and warmed: a job asked for now runs at once (a cold cache warms slowly)
        qtbot.waitUntil(lambda: w.model_info is not None and w.session.loading is None, timeout=WAIT)
    else:  # the default model: let its load end (loaded, or a banner says why not) before the test goes on, so
        # that no load is still running in a worker when the window closes (a cold file-hash cache makes it slow)
        qtbot.waitUntil(lambda: w.session.loading is None and (w.model_info is not None or w.banner.text() != ""),
                        timeout=WAIT)
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
    from lantern_studio.studio import engine_host

    real = engine_host._LiveView.step

    def step(view, ev):
        fn(view.job, ev)
        real(view, ev)

    monkeypatch.setattr(engine_host._LiveView, "step", step)


def fake_screen(monkeypatch, width, height, top=27):
    """Every screen's free area: ``width`` × ``height`` below a ``top`` px panel (the offscreen platform's
    one screen is 800 × 600 whatever is asked, so its free area is what the window is told); → that area."""
    from PySide6.QtCore import QRect
    from PySide6.QtGui import QScreen

    free = QRect(0, top, width, height - top)
    monkeypatch.setattr(QScreen, "availableGeometry", lambda self: QRect(free))
    return free


COLD = 2.0  # s: the vanilla path's first use, as a cold path pays it (17–28 s on the real studio)


def cold_vanilla_path(monkeypatch, w) -> list:
    """The vanilla path cold, as on a session's first use: the first one-token step (vanilla's step shape) of
    window ``w``'s runner sleeps COLD seconds, once; → a flag, ``[True]`` until that step has run."""
    runner = w.jobs.worker.pipeline.runner
    real_step, cold = runner.step, [True]

    def step(tokens, first_index):
        if cold[0] and tokens.shape[1] == 1:  # vanilla's step shape, first use
            cold[0] = False
            time.sleep(COLD)
        return real_step(tokens, first_index)

    monkeypatch.setattr(runner, "step", step)
    return cold
