"""A load or decode still running when its window closed answers into nothing, never a traceback."""

from __future__ import annotations

import pytest
import shiboken6

from lantern_studio.gui.worker import Answers, Worker


def test_an_answer_after_the_window_closed_is_dropped(qapp):
    answers = Answers()
    worker = Worker(answers)
    shiboken6.delete(answers)  # the window (and the Answers it owned) is gone
    with pytest.raises(RuntimeError):  # what an unguarded emit does
        answers.model_ready.emit(object())
    worker._out.model_ready.emit(object())  # dropped
    worker._out.job_failed.emit(object(), "late")
