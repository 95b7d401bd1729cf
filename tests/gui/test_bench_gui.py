"""The studio's responsiveness bench (gui/bench_gui.py) run once on a tiny model: it drives
the real window, so a change to the window it relies on breaks this test, not the bench's
next user."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from lantern_studio.gui import bench_gui  # noqa: E402
from support.studio import open_window  # noqa: E402


def test_the_bench_times_a_generation_and_a_cancel_and_reports_them(qtbot, tiny):
    w = open_window(qtbot, tiny)
    w.controls.set_prompt("a red heart")
    r = bench_gui.bench(w, runs=2)
    run = r["runs"][0]
    assert run["model"] == bench_gui.describe(w) and w.model_info.name in run["model"]
    for key in ("first_paint_s", "image_s", "stall_max_s", "decode_wall_s"):
        assert len(run[key]) == 2 and all(x > 0 for x in run[key]), key
    assert r["idle_stall_max_s"] > 0
    assert r["cancel"]["model"] == run["model"]
    r["ready_s"] = 1.5
    text = bench_gui.report(r)
    assert text.startswith("window opened → ready (model loaded, text encoder and decoder warmed): 1500.0 ms")
    assert f"[{run['model']}] 2 runs" in text and "Generate → first painted partial image" in text
    assert "cancel latency" in text
