"""Driving the studio window in tests (pytest-qt, offscreen): open it on a model
folder and wait until it is ready; run one generation to its result."""

from __future__ import annotations

WAIT = 30000  # ms; generous for a loaded CI machine, never a timing assert


def open_window(qtbot, folder):
    from lantern_studio.gui.app import create_main_window

    w = create_main_window(str(folder) if folder is not None else None)
    qtbot.addWidget(w)
    w.confirm = lambda title, text: True
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
