"""Leaving the studio: the window goes at once and the process ends within 2 s, also in the middle of a
model's warm-up (which cannot be interrupted: the load is left behind, never waited for)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from support.studio import WAIT  # noqa: E402

EXIT_LIMIT_S = 2.0  # the bound: from the close (or SIGTERM) to the process gone


def test_close_during_a_slow_warm_up_hides_at_once_and_leaves_the_load_behind(qtbot, tmp_path, monkeypatch):
    from lantern_studio.engine.pipeline import ImagePipeline
    from lantern_studio.gui import main_window
    from lantern_studio.gui.app import create_main_window
    from lantern_studio.models.tiny import build_tiny_model_dir

    folder = build_tiny_model_dir(tmp_path / "tiny")
    release = threading.Event()
    real = ImagePipeline.warm_up

    def slow_warm_up(self, progress=None, decode_steps=2):
        real(self, progress, decode_steps)
        release.wait(60)  # a warm-up that takes a minute unless the test lets it go

    monkeypatch.setattr(ImagePipeline, "warm_up", slow_warm_up)
    w = create_main_window(str(folder))
    qtbot.addWidget(w)
    w.show()
    qtbot.waitUntil(lambda: w.session.loading == "warming up the decoder…", timeout=WAIT)
    w.controls.set_prompt("kept in the preferences")
    t0 = time.perf_counter()
    w.close()
    took = time.perf_counter() - t0
    try:
        assert not w.isVisible() and took < EXIT_LIMIT_S, took
        # the load is left running (app.main ends the process without joining it), the queue kept alive
        assert w.jobs in main_window._orphans and not w.jobs.thread.isFinished()
        assert w.prefs.get_json("prompt") == "kept in the preferences"
    finally:
        release.set()
        qtbot.waitUntil(w.jobs.thread.isFinished, timeout=WAIT)


def _studio(tmp_path: Path) -> subprocess.Popen:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", LANTERN_STUDIO_DATA=str(tmp_path / "data"),
               LANTERN_STUDIO_CACHE=str(tmp_path / "cache"), PYTHONUNBUFFERED="1")
    code = "import sys; from lantern_studio.gui.app import main; sys.exit(main())"
    return subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


@pytest.mark.parametrize("after_s", [3.0, 6.0])
def test_sigterm_during_start_up_ends_the_process_within_two_seconds(tmp_path, after_s):
    """The bundled model loads and warms up in the first seconds: SIGTERM then (window built or not) ends the
    process within the bound, and leaves no half-written file in the studio's folders."""
    proc = _studio(tmp_path)
    try:
        time.sleep(after_s)
        assert proc.poll() is None, proc.communicate()[0]
        t0 = time.perf_counter()
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
        took = time.perf_counter() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    print(f"SIGTERM after {after_s}s: exit in {took:.2f}s rc {proc.returncode}")
    assert took < EXIT_LIMIT_S, (took, out[-2000:])
    assert proc.returncode in (0, -signal.SIGTERM), out[-2000:]
    left = [p for p in tmp_path.rglob("*") if p.is_file() and (".tmp" in p.name or p.name.startswith("."))]
    assert left == []
