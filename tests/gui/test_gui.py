"""The studio window, driven for real (pytest-qt, offscreen) on tiny random models."""

from __future__ import annotations

import time

import numpy as np
import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from PIL import Image  # noqa: E402
from PySide6.QtCore import Qt  # noqa: E402

from lantern_studio.export import read_png_record  # noqa: E402
from lantern_studio.models.tiny import build_tiny_model_dir  # noqa: E402
from lantern_studio.studio.compiled_steps import COMPILED_STEPS, EAGER_STEPS  # noqa: E402
from support.compiler import needs_cxx  # noqa: E402
from support.studio import WAIT, on_steps, open_window, record_started, run_job  # noqa: E402


@pytest.fixture(scope="module")
def slow(tmp_path_factory):
    """16×16 tokens, so a vanilla run takes 256 steps: room to cancel mid-run."""
    return build_tiny_model_dir(tmp_path_factory.mktemp("models") / "slow", grid=16, layers=4, dim=128)


def test_generate_fills_canvas_and_writes_history(qtbot, tiny):
    w = open_window(qtbot, tiny)
    frames = []
    w.jobs.answers.frame.connect(frames.append)
    job, r = run_job(qtbot, w)
    total = w.model_info.grid ** 2
    assert w.canvas.progress.maximum() == total and w.canvas.progress.value() == total
    assert frames[0].n_fixed < total and frames[-1].final and frames[-1].n_fixed == total
    assert np.array_equal(w.canvas.image, r.image) and r.image.shape == (64, 64, 3)
    assert not r.stats["cancelled"] and r.stats["tokens"] == total
    # the history: one row, its PNG complete and carrying the record
    assert w.store.count() == 1 and w.gallery.model.rowCount() == 1
    entry = w.store.entries()[0]
    assert entry.path.is_file() and entry.prompt == "a red heart"
    assert np.array_equal(np.asarray(Image.open(entry.path).convert("RGB")), r.image)
    assert read_png_record(entry.path) == w.finished_record
    assert w.banner.text() == ""


def test_sliders_reach_the_engine(qtbot, tiny):
    from lantern_studio.gui.sliders import STEPS

    w = open_window(qtbot, tiny)
    c = w.controls
    c.drafter.setCurrentIndex(c.drafter.findData("jacobi"))
    k, delta = c.k, c.delta
    # the log slider reaches both ends and small values; the quadratic one has fine steps near 0
    k.slider.setValue(STEPS)
    assert c.settings().k == w.model_info.vocab_size - 1
    assert {k._value(p) for p in range(0, STEPS + 1)} >= {0, 1, 2, 3, 4, 5}
    assert delta._value(1) < 1e-5 and delta._value(STEPS) == 1.0
    k.slider.setValue(k.to_pos(5))
    delta.slider.setValue(300)
    s = c.settings()
    assert s.k == 5 and s.delta == pytest.approx(0.09)
    job, r = run_job(qtbot, w)
    started = w.started_jobs[-1]
    # New seed each Generate (on by default) drew the seed; the rest is what the controls showed
    assert started.id == job.id and started.settings == s.with_(seed=job.settings.seed) == c.settings()
    assert r.stats["settings"]["k"] == 5 and r.stats["settings"]["delta"] == pytest.approx(0.09)  # the engine's own record


def test_controls_prevent_invalid_combinations(qtbot, tiny):
    w = open_window(qtbot, tiny)
    c = w.controls
    c.greedy.setChecked(True)
    assert not c.temperature.isEnabled()
    c.greedy.setChecked(False)
    assert c.temperature.isEnabled()
    c.drafter.setCurrentIndex(c.drafter.findData("jacobi"))
    assert not c.lam.isEnabled() and c.delta.isEnabled()
    c.lam_mode.setChecked(True)
    assert c.lam.isEnabled() and not c.delta.isEnabled() and c.settings().lam == c.lam.value()
    c.drafter.setCurrentIndex(c.drafter.findData("none"))
    assert not c.k.isEnabled() and not c.delta.isEnabled() and not c.lam.isEnabled()
    assert "within δ" in c.delta.toolTip() and "can exceed δ" in c.delta.toolTip()
    # bad input: a banner naming the field, never a job or a crash
    c.set_prompt("   ")
    assert w.generate() is None and "prompt" in w.banner.text()
    c.set_prompt("ok")
    c.settings = lambda: w.model_info.defaults.with_(k=10_000)
    assert w.generate() is None and w.banner.text().startswith("k:")
    assert w.started_jobs == [] and not w.session.queue.busy


def test_the_drafter_menu_offers_draft_heads_only_where_the_folder_ships_them(qtbot, tiny, tmp_path):
    import shutil

    from lantern_studio.engine.checkpoints import load_gpt, save_weights
    from lantern_studio.engine.draft_heads import DraftHeads
    from lantern_studio.models.local import install_heads

    def heads_item(w):
        c = w.controls
        return c._drafter_model.item(c.drafter.findData("heads"))

    w = open_window(qtbot, tiny)
    assert heads_item(w) is not None and not heads_item(w).isEnabled()
    w.close()
    folder = tmp_path / "with-heads"
    shutil.copytree(tiny, folder)
    dim = load_gpt(folder / "gpt.safetensors").config.dim  # the heads read the target's features
    heads = DraftHeads(dim, 2, 8)
    save_weights(heads, tmp_path / "h.safetensors", heads.config, "heads")
    install_heads(folder, tmp_path / "h.safetensors")
    w = open_window(qtbot, folder)
    assert heads_item(w).isEnabled()
    w.controls.drafter.setCurrentIndex(w.controls.drafter.findData("heads"))
    assert w.controls.settings().drafter == "heads"
    job, result = run_job(qtbot, w, "a cat")
    record = result.record()
    assert job.settings.drafter == "heads" and record["stats"]["drafter_forwards"] == 0


def test_frames_are_throttled_and_the_finished_picture_always_sent(qtbot, tiny):
    w = open_window(qtbot, tiny)
    frames = []
    w.jobs.answers.frame.connect(frames.append)
    w.jobs.worker.max_fps = 1e-3  # one frame per 1000 s: the first step's, then only the finished picture
    job, r = run_job(qtbot, w)
    assert [f.final for f in frames] == [False, True] and frames[0].n_fixed == 1
    assert frames[-1].n_fixed == w.model_info.grid ** 2 and np.array_equal(frames[-1].image, r.image)
    assert r.recording.fixed[-1] == frames[-1].n_fixed  # the replay recorded every step through generate


def test_cancel_stops_within_a_few_steps(qtbot, slow, monkeypatch):
    w = open_window(qtbot, slow)
    w.controls.drafter.setCurrentIndex(w.controls.drafter.findData("none"))  # 256 steps, one token each
    steps = []  # (tokens fixed, cancel already requested?) per step, recorded in the worker thread

    def hook(job, ev):
        steps.append((ev.n_fixed, job.cancel_requested))
        time.sleep(0.01)

    on_steps(monkeypatch, hook)
    seen, cancelled = [], []
    w.jobs.answers.frame.connect(lambda f: seen.append(f.n_fixed))
    w.jobs.answers.job_cancelled.connect(cancelled.append)
    w.controls.set_prompt("a slow one")
    w.activateWindow()
    w.controls.prompt.setFocus()
    qtbot.keyClick(w.controls.prompt, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)  # generate
    assert w.session.queue.current is not None, "Ctrl+Enter did not generate"
    job = w.session.queue.current
    assert w.controls.prompt_text() == "a slow one"  # no newline typed into the prompt
    qtbot.waitUntil(lambda: bool(seen) and seen[-1] >= 10, timeout=WAIT)
    qtbot.keyClick(w.controls.prompt, Qt.Key.Key_Escape)  # cancel
    qtbot.waitUntil(lambda: bool(cancelled), timeout=WAIT)
    assert cancelled[0].id == job.id
    after = [n for n, flagged in steps if flagged]
    assert len(after) <= 1  # the loop checks the flag before every step
    total = w.model_info.grid ** 2
    assert steps[-1][0] < total
    # the last frame shows where it stopped; signals from the worker arrive asynchronously, so on a loaded
    # machine give the GUI thread a moment to take them (the full suite failed once here, in a fresh clone
    # beside a training run)
    qtbot.waitUntil(lambda: seen[-1] == steps[-1][0] and not w.session.queue.busy, timeout=WAIT)
    assert "cancelled" in w.canvas.progress.format()
    assert w.store.count() == 0 and list(w.store.images.iterdir()) == []  # no row, no half a file
    assert w.last_result is None
    # closing the window mid-run stops the worker promptly and writes nothing
    seen.clear()
    w.generate()
    qtbot.waitUntil(lambda: bool(seen) and seen[-1] >= 5, timeout=WAIT)
    images = w.store.images
    w.close()
    assert w.jobs.thread.isFinished()
    assert list(images.iterdir()) == []


def test_queued_jobs_run_in_order(qtbot, tiny):
    w = open_window(qtbot, tiny)
    w.controls.set_prompt("first")
    j1 = w.generate()
    w.controls.set_prompt("second")
    j2 = w.generate()
    w.controls.set_prompt("third")
    j3 = w.generate()
    # visible places, before the GUI has processed anything from the worker
    assert w.session.queue.position(j1) == 0 and w.session.queue.position(j2) == 1 and w.session.queue.position(j3) == 2
    rows = [w.queue_view.list.item(i).toolTip() for i in range(w.queue_view.list.count())]
    assert rows[0].startswith("▶") and "1st in line" in rows[1] and "2nd in line" in rows[2]
    w.session.cancel_job(j3.id)
    assert w.session.queue.position(j3) is None
    qtbot.waitUntil(lambda: w.last_result is not None and w.last_result.job.id == j2.id and not w.session.queue.busy,
                    timeout=WAIT)
    assert [j.id for j in w.started_jobs] == [j1.id, j2.id]
    assert [e.prompt for e in w.store.entries()] == ["second", "first"]
    assert w.queue_view.title.text() == "Queue: idle"


def test_compare_and_chart(qtbot, tiny):
    w = open_window(qtbot, tiny)
    w.controls.set_prompt("compare me")
    vanilla, current = w.compare()
    qtbot.waitUntil(lambda: w.last_result is not None and w.last_result.job.id == current.id, timeout=WAIT)
    assert vanilla.settings.drafter == "none" and current.settings.drafter != "none"
    assert vanilla.settings.with_(drafter=current.settings.drafter) == current.settings  # same seed, sampling
    assert w.stats.last_speedup is not None and "Speed-up" in w.stats.speedup_label.text()
    pts = w.chart.points
    assert len(pts) == 2 and pts[0].vanilla and pts[1].speedup == pytest.approx(w.stats.last_speedup)
    assert w.chart.plot.getAxis("bottom").labelText == "tokens per target forward"
    # readable axes from 0 with room above the largest point, and no SI-prefix scaling
    (x0, x1), (y0, y1) = w.chart.plot.getViewBox().viewRange()
    assert -0.05 * x1 < x0 < 0 and x1 >= max(2.0, max(p.tokens_per_forward for p in pts)) and -0.06 * y1 < y0 < 0
    assert w.chart.plot.getAxis("left").autoSIPrefixScale == 1.0
    # hover names the settings; a click loads the prompt and settings back into the controls
    spots = w.chart.scatter.points()
    tip = w.chart._tip(0, 0, spots[1].data())
    assert f"seed {current.settings.seed}" in tip and current.settings.drafter in tip and "faster than its vanilla" in tip
    w.controls.set_prompt("something else")
    w.controls.set_settings(current.settings.with_(seed=current.settings.seed + 7, drafter="none"))
    w.chart.scatter.sigClicked.emit(w.chart.scatter, [spots[1]], None)
    assert w.controls.prompt_text() == "compare me" and w.controls.settings() == current.settings


def test_export_metadata_reads_back(qtbot, tiny, tmp_path):
    w = open_window(qtbot, tiny)
    run_job(qtbot, w, "export me")
    w.export_bar.set_choice(2, "nearest")
    target = tmp_path / "out.png"
    w.ask_save_path = lambda suggested: str(target)
    w.save_action.trigger()  # Ctrl+S through the real action; the (stubbed) dialog returns the path
    assert target.is_file()
    assert read_png_record(target) == w.finished_record == read_png_record(w.store.entries()[0].path)
    with Image.open(target) as img:
        assert img.size == (128, 128) and img.text["parameters"].startswith("export me\n")
    # an existing file is replaced only when the user agrees
    before = target.read_bytes()
    w.confirm = lambda title, text: False
    w.export_bar.set_choice(1, "nearest")
    assert w.save_as(str(target)) is None and target.read_bytes() == before
    w.confirm = lambda title, text: True
    assert w.save_as(str(target)) == target and Image.open(target).size == (64, 64)
    assert w.copy_image()
    # dragging the picture out offers image data and a PNG file carrying the same record
    mime = w.canvas.view.mime_data()
    assert mime.hasImage() and len(mime.urls()) == 1
    assert read_png_record(mime.urls()[0].toLocalFile()) == w.finished_record


def test_a_window_larger_than_the_screen_is_fitted_inside_it(qtbot, tiny):
    """Saved on a big monitor, reopened on a small one (Qt restores the saved size when the saved screen was
    larger): the window is shrunk to the screen's free area and moved into it, so nothing is off screen.
    (Checked on a real X server too: saved at 1400x880, reopened on a 900x600 screen.)"""
    w = open_window(qtbot, tiny)
    w.resize(5000, 4000)
    w.move(3000, 2000)
    free = w.screen().availableGeometry()
    assert not free.contains(w.geometry())
    w._fit_on_screen()
    least = w.minimumSizeHint()  # (this test screen, 800 px wide, is narrower than the window can be)
    assert w.width() <= max(free.width(), least.width()) and w.height() <= max(free.height(), least.height())
    assert free.contains(w.geometry().topLeft()) and w.height() <= free.height()


def test_restart_restores_settings_and_history(qtbot, tiny):
    from lantern_studio.gui.app import create_main_window

    w = open_window(qtbot, tiny)
    c = w.controls
    c.seed.setValue(1234)
    c.k.setValue(7)
    c.delta.setValue(0.2)
    c.greedy.setChecked(True)
    w.canvas.set_zoom(4)
    job, r = run_job(qtbot, w, "remember me")
    saved = c.settings()
    w.close()

    w2 = create_main_window(str(tiny))
    qtbot.addWidget(w2)
    w2.confirm = lambda title, text: True
    qtbot.waitUntil(lambda: w2.model_info is not None, timeout=WAIT)
    assert w2.controls.settings() == saved
    assert w2.controls.prompt_text() == "remember me" and w2.controls.prompt_history() == ["remember me"]
    assert w2.canvas.zoom.currentData() == 4
    assert w2.gallery.model.rowCount() == 1
    # clicking a thumbnail restores its prompt and settings
    w2.controls.set_prompt("something else")
    w2.controls.set_settings(saved.with_(seed=1, k=0))
    w2.gallery.view.clicked.emit(w2.gallery.model.index(0, 0))
    assert w2.controls.prompt_text() == "remember me" and w2.controls.settings() == saved
    assert np.array_equal(w2.canvas.image, r.image)
    # delete asks first, then removes the row and the file
    entry = w2.store.entries()[0]
    w2.gallery.view.setCurrentIndex(w2.gallery.model.index(0, 0))
    w2.confirm = lambda title, text: False
    assert not w2.gallery.delete_selected() and w2.store.count() == 1
    w2.confirm = lambda title, text: True
    assert w2.gallery.delete_selected() and w2.store.count() == 0 and not entry.path.exists()


def test_worker_exception_becomes_banner(qtbot, tiny, monkeypatch):
    w = open_window(qtbot, tiny)
    run_job(qtbot, w, "warm up")
    pipe = w.jobs.worker.pipeline

    def boom(*a, **k):
        raise RuntimeError("boom in the engine")

    monkeypatch.setattr(pipe, "decoding", boom)
    w.controls.set_prompt("this fails")
    failed = []
    w.jobs.answers.job_failed.connect(lambda job, msg: failed.append(msg))
    w.generate()
    qtbot.waitUntil(lambda: bool(failed), timeout=WAIT)
    assert "boom in the engine" in w.banner.text() and "RuntimeError" in w.banner.text()
    assert w.store.count() == 1  # the failure wrote nothing
    monkeypatch.undo()
    w.banner.close_button.click()
    assert w.banner.text() == ""
    run_job(qtbot, w, "alive again")
    assert w.store.count() == 2


def test_missing_bundled_model_shows_banner(qtbot, monkeypatch, tmp_path):
    import lantern_studio.models as models

    monkeypatch.setattr(models, "bundled_dir", lambda name=models.BUNDLED_NAME: tmp_path / "no-such-model")
    w = open_window(qtbot, None)
    qtbot.waitUntil(lambda: "could not be loaded" in w.banner.text(), timeout=WAIT)
    assert "bundled model" in w.banner.text() and w.model_info is None
    assert not w.isHidden()
    w.choose_model("tiny-demo")  # what the banner's "Use tiny demo model" button does
    qtbot.waitUntil(lambda: w.model_info is not None, timeout=WAIT)
    assert w.banner.text() == "" and w.model_info.grid == 16


def test_the_v5_preview_is_offered_beside_the_bundled_model_and_loads_from_the_picker(qtbot, tiny):
    """The model picker lists the bundled v5 preview after the default; picking it loads it by name (not as
    a folder in the recent list), a fresh start comes back to it, and picking the default goes back."""
    from lantern_studio.models import PREVIEW_NAME

    w = open_window(qtbot, tiny)
    box = w.controls.model
    w.controls.seed.setValue(41)
    seed = w.controls.settings().seed
    specs = [box.itemData(i) for i in range(box.count())]
    assert specs[:2] == [None, PREVIEW_NAME] and str(tiny) in specs
    box.setCurrentIndex(specs.index(PREVIEW_NAME))
    box.activated.emit(specs.index(PREVIEW_NAME))  # what picking it with the mouse or keys does
    qtbot.waitUntil(lambda: w.model_info is not None and w.model_info.name == PREVIEW_NAME, timeout=WAIT)
    assert w.session.model_spec == PREVIEW_NAME and PREVIEW_NAME not in w.session.prefs.recent_models
    assert box.itemData(box.currentIndex()) == PREVIEW_NAME
    # its own sampling, not the default model's (T 0.5 / top-k 10 / no guidance draws poorly on it); the seed kept
    d = w.model_info.defaults
    got = w.controls.settings()
    assert (got.temperature, got.top_k, got.cfg_scale) == (d.temperature, d.top_k, d.cfg_scale) == (1.0, 0, 3.0)
    assert got.seed == seed
    assert "Preview v5" not in w.controls.guarantee.text()  # its sliders do work: no pointer to itself
    job, result = run_job(qtbot, w, "a red heart")
    assert result.image.shape == (64, 64, 3)
    w.close()
    again = open_window(qtbot, None)  # a fresh start: the remembered choice
    qtbot.waitUntil(lambda: again.model_info is not None, timeout=WAIT)
    assert again.model_info.name == PREVIEW_NAME
    again.controls.model.setCurrentIndex(0)
    again.controls.model.activated.emit(0)
    qtbot.waitUntil(lambda: again.model_info.name != PREVIEW_NAME, timeout=WAIT)
    assert again.session.model_spec is None
    assert again.controls.settings().temperature == again.model_info.defaults.temperature != 1.0
    # on the default model the sliders change little, and the line under them says where to see them work
    assert f"Preview v5 ({PREVIEW_NAME})" in again.controls.guarantee.text()


def test_quality_score_reaches_record_and_chart(qtbot, tiny):
    w = open_window(qtbot, tiny)
    pipe = w.jobs.worker.pipeline
    pipe.scorer = lambda image, prompt: 0.75 if "heart" in prompt else None  # a recogniser stand-in
    w.chart.set_quality_available(True)  # what ModelInfo.has_score does for a model with a recogniser
    job, r = run_job(qtbot, w, "a red heart")
    assert r.score == 0.75 and w.finished_record["prompt_fidelity"] == 0.75
    saved = w.store.entries()[0].path
    assert read_png_record(saved)["prompt_fidelity"] == 0.75
    assert "Prompt fidelity: 75%" in Image.open(saved).text["parameters"]
    # one name and unit everywhere: the chart's axis and point, the stats panel
    assert w.chart.plot.getAxis("left").labelText == "prompt fidelity (%)"
    assert w.chart.scatter.data["y"][0] == pytest.approx(75.0)
    y0, y1 = w.chart.plot.getViewBox().viewRange()[1]
    assert -6 <= y0 < 0 and 100 <= y1 <= 105  # 0 … 100 %, a point at 0 or 100 drawn whole
    assert w.stats.values["fidelity"].text() == "75%" and "prompt fidelity 75%" in w.stats.run_label.text()
    job, r = run_job(qtbot, w, "a green frog")  # the scorer cannot judge this prompt: no score, no banner
    assert r.score is None and r.warning is None and w.banner.text() == ""
    assert len(w.chart.scatter.data) == 1 and w.chart.hidden == 1


def test_generate_pressed_during_warm_up_waits_and_then_runs(qtbot, tiny, monkeypatch):
    """Start-up warms the model in the background; a Generate pressed meanwhile is
    queued with the reason shown, and runs once the model is ready."""
    import threading

    from lantern_studio.engine.pipeline import ImagePipeline
    from lantern_studio.gui.app import create_main_window

    release, stages = threading.Event(), []
    real = ImagePipeline.warm_up

    def held_warm_up(self, progress=None, decode_steps=2):
        def say(message):
            stages.append(message)
            progress(message)
        real(self, say, decode_steps)
        assert release.wait(30), "the test never released the warm-up"

    monkeypatch.setattr(ImagePipeline, "warm_up", held_warm_up)
    w = create_main_window(str(tiny))
    started = record_started(w)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitUntil(lambda: w.session.loading == "warming up the decoder…", timeout=WAIT)
    assert w.model_info is None
    # the controls already show the model's own defaults (read from model.json), not placeholders
    from lantern_studio.models import model_defaults

    defaults = model_defaults(str(tiny))
    assert defaults.drafter == "jacobi" and defaults.k == 8 and defaults.cfg_scale == 2.0
    assert w.controls.settings().with_(seed=defaults.seed) == defaults
    w.controls.set_prompt("a red heart")
    job = w.generate()
    assert job is not None and job.settings == w.controls.settings()
    assert "waiting for the model" in w.canvas.progress.format()
    w.queue_view.update_from(w.session.queue)
    assert "waiting for the model" in w.queue_view.list.item(0).text()
    assert w.last_result is None and not started
    release.set()
    qtbot.waitUntil(lambda: w.last_result is not None and w.last_result.job.id == job.id, timeout=WAIT)
    assert stages == ["loading text encoder…", "preparing neighbour table…", "warming up the decoder…"]
    assert w.model_info is not None and w.session.loading is None
    # the image ran with those settings, and the panel still shows them once the model is ready
    assert w.last_result.record()["settings"] == job.settings.to_dict() and w.controls.settings() == job.settings
    assert w.status_model.text().startswith(w.model_info.name)


def test_history_thumbnails_load_off_the_gui_thread(qtbot, tiny):
    from lantern_studio.gui import history

    w = open_window(qtbot, tiny)
    job, r = run_job(qtbot, w, "a red heart")
    qtbot.waitUntil(lambda: not w.gallery.thumbnails_pending, timeout=WAIT)
    icon = w.gallery.model.item(0).icon()
    shown = icon.pixmap(history.THUMB, history.THUMB).toImage()
    grey = w.gallery._placeholder.pixmap(history.THUMB, history.THUMB).toImage()
    assert shown != grey  # the PNG's thumbnail replaced the placeholder
    # a PNG that cannot be read keeps the placeholder and the gallery goes on
    assert history.read_thumbnails([w.store.entries()[0].path.with_name("missing.png")]) == [None]


def test_the_studio_runs_on_a_qasync_loop(tmp_path):
    """app.main: asyncio and Qt share the GUI thread; a coroutine runs inside the real window's loop."""
    import os
    import subprocess
    import sys

    script = tmp_path / "probe.py"
    script.write_text(
        "import asyncio\n"
        "import qasync\n"
        "from PySide6.QtCore import QTimer\n"
        "from PySide6.QtWidgets import QApplication\n"
        "from lantern_studio.gui import aio, app\n"
        "async def probe():\n"
        "    value = await aio.in_thread(lambda: 6 * 7)\n"
        "    print('qasync loop', isinstance(asyncio.get_running_loop(), qasync.QEventLoop), value, flush=True)\n"
        "    QApplication.quit()\n"
        "QTimer.singleShot(0, lambda: aio.start(probe()))\n"
        "raise SystemExit(app.main('tiny-demo'))\n")
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "c"),
               XDG_CONFIG_HOME=str(tmp_path / "cfg"), XDG_DATA_HOME=str(tmp_path / "d"), OMP_NUM_THREADS="1")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "qasync loop True 42" in r.stdout


def test_enter_generates_shift_enter_is_a_new_line_and_esc_stops_both_halves_of_a_compare(qtbot, slow, monkeypatch):
    w = open_window(qtbot, slow)
    w.controls.set_settings(w.controls.settings().with_(drafter="jacobi"))
    on_steps(monkeypatch, lambda job, ev: time.sleep(0.01))
    w.controls.set_prompt("two")
    w.controls.prompt.setFocus()
    w.controls.prompt.moveCursor(w.controls.prompt.textCursor().MoveOperation.End)
    qtbot.keyClick(w.controls.prompt, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    assert w.controls.prompt_text() == "two\n" and not w.session.queue.busy  # a new line, no job
    w.controls.set_prompt("one")
    qtbot.keyClick(w.controls.prompt, Qt.Key.Key_Return)
    assert w.session.queue.current is not None and w.controls.prompt_text() == "one"  # generated, no newline typed
    qtbot.waitUntil(lambda: not w.session.queue.busy, timeout=WAIT)
    # Esc during a Compare cancels the vanilla half that runs and the LANTERN half that waits
    cancelled = []
    w.jobs.answers.job_cancelled.connect(cancelled.append)
    vanilla, current = w.compare()
    qtbot.waitUntil(lambda: w.session.queue.current is not None and w.session.queue.current.id == vanilla.id, timeout=WAIT)
    w.cancel()
    qtbot.waitUntil(lambda: not w.session.queue.busy, timeout=WAIT)
    assert [j.id for j in cancelled] == [vanilla.id]  # it stopped; its pair was taken off the queue, never ran
    assert w.session.queue.position(current) is None and (w.last_result is None or w.last_result.job.id != current.id)


def test_window_title_menus_and_counts_read_as_a_person_expects(qtbot, tiny):
    w = open_window(qtbot, tiny)
    assert w.windowTitle() == w.model_info.name  # Qt adds " — Lantern Studio" once, itself
    assert [a.text() for a in w.menuBar().actions()] == ["&File", "&Edit", "&Generate", "&View", "&Help"]
    run_job(qtbot, w, "red heart")
    qtbot.waitUntil(lambda: w.gallery.count_label.text() == "1 image", timeout=WAIT)


def test_the_chart_x_axis_has_one_unit(qtbot, tiny):
    """x is tokens per target forward before and after a Compare (it used to turn into the speed-up after the
    first Compare and take the runs without a vanilla run off the chart); every run stays drawn."""
    w = open_window(qtbot, tiny)
    _job, lone = run_job(qtbot, w, "no baseline")
    assert w.chart.plot.getAxis("bottom").labelText == "tokens per target forward"
    first = w.chart.scatter.points()[0]
    where, shape = (first.pos().x(), first.pos().y()), first.symbol()
    w.controls.set_prompt("with baseline")
    vanilla, current = w.compare()
    qtbot.waitUntil(lambda: w.last_result is not None and w.last_result.job.id == current.id, timeout=WAIT)
    assert w.chart.plot.getAxis("bottom").labelText == "tokens per target forward"
    spots = w.chart.scatter.points()
    assert len(spots) == 3 and (spots[0].pos().x(), spots[0].pos().y()) == where and spots[0].symbol() == shape
    from lantern_studio.gui.chart import SYMBOLS

    assert [p.kind for p in w.chart.points][1] == "vanilla" and spots[1].symbol() == "s"  # ■: by how it decoded
    assert [s.symbol() for s in spots] == [SYMBOLS[p.kind] for p in w.chart.points]
    assert "without a vanilla run" not in w.chart.key_label.text()


def test_a_history_click_restores_that_runs_numbers_too(qtbot, tiny):
    w = open_window(qtbot, tiny)
    _j1, first = run_job(qtbot, w, "first one")
    w.controls.set_settings(w.controls.settings().with_(drafter="none"))
    _j2, second = run_job(qtbot, w, "second one")
    assert w.stats.values["forwards"].text() == str(second.stats["target_forwards"] + 1)
    entry = next(e for e in w.store.entries() if e.prompt == "first one")
    w.restore_entry(entry)
    assert w.stats.values["forwards"].text() == str(first.stats["target_forwards"] + 1)
    assert w.stats.values["tokens"].text().startswith(str(first.stats["tokens"]))
    assert "From the history" in w.stats.run_label.text()


def clipped_texts(window):
    """Visible buttons and one-line labels whose text needs more room than the widget has (drawn cut; an
    ElidedLabel draws "…" instead, by design)."""
    from PySide6.QtWidgets import QAbstractButton, QLabel

    from lantern_studio.gui.elided_label import ElidedLabel

    cut = []
    for b in window.findChildren(QAbstractButton):
        if b.isVisibleTo(window) and b.text() and b.width() < b.sizeHint().width():
            cut.append(f"button {b.text()!r}: {b.width()} < {b.sizeHint().width()}")
    for lab in window.findChildren(QLabel):
        if (lab.isVisibleTo(window) and lab.text() and not lab.wordWrap() and lab.pixmap().isNull()
                and not isinstance(lab, ElidedLabel)
                and "<" not in lab.text()):
            need = max(lab.fontMetrics().horizontalAdvance(line) for line in lab.text().splitlines() or [""])
            if need > lab.contentsRect().width():
                cut.append(f"label {lab.text()[:40]!r}: {lab.contentsRect().width()} < {need}")
    return cut


def overlapping_siblings(window):
    """Pairs of visible widgets laid out side by side in one layout whose rectangles intersect."""
    from PySide6.QtWidgets import QLayout

    found = []
    for lay in window.findChildren(QLayout):
        items = [lay.itemAt(i).widget() for i in range(lay.count())]
        shown = [w for w in items if w is not None and w.isVisibleTo(window) and w.width() > 0 and w.height() > 0]
        for i, a in enumerate(shown):
            for b in shown[i + 1:]:
                if a.geometry().intersects(b.geometry()):
                    found.append(f"{type(a).__name__}({a.objectName()}) x {type(b).__name__}({b.objectName()})")
    return found


@pytest.mark.parametrize("size", [(900, 600), (1100, 750), (1400, 900), (1920, 1080)])
def test_the_layout_holds_at_every_window_size(qtbot, tiny, size):
    """The window stays the size asked for (nothing widens it: not a long queue message, not the model's
    facts), no text is cut, no two widgets of one layout overlap, the scrubber has a track, the history strip
    shows whole thumbnails, and what comes and goes (a Compare result, a replay) moves nothing; a banner takes a row
    from the canvas alone."""
    from lantern_studio.gui.window_layout import HISTORY_MIN_HEIGHT

    w = open_window(qtbot, tiny)
    w.resize(*size)
    w.session.queue.loading = "warming up the decoder… " * 4  # the longest line the queue title shows
    w.queue_view.update_from(w.session.queue)
    qtbot.wait(50)
    assert (w.width(), w.height()) == size
    if w.narrow:  # too narrow for three columns: settings and results are two tabs of one side column
        side, middle = (w.top_split.widget(i).geometry() for i in range(2))
        assert w.top_split.widget(0) is w.side_tabs and side.right() < middle.left()
    else:
        left, middle, right = (w.top_split.widget(i).geometry() for i in range(3))
        assert left.right() < middle.left() and middle.right() < right.left()
    assert w.replay.slider.width() >= 150 and w.gallery.height() >= HISTORY_MIN_HEIGHT
    w.session.queue.loading = None
    w.queue_view.update_from(w.session.queue)
    qtbot.wait(20)
    assert clipped_texts(w) == []
    assert overlapping_siblings(w) == []
    canvas, gallery = w.canvas.size(), w.gallery.size()
    views, canvas_view = w.views.size(), w.single_view.size()
    rows = w.export_bar.size(), w.queue_view.size()
    w.show_error("model: a long message that wraps over more than one line at the smaller sizes " * 3)
    qtbot.wait(20)
    # the banner takes a row over the canvas (it covers nothing): the canvas alone gives up that height
    assert w.banner.isVisible() and w.gallery.size() == gallery and (w.export_bar.size(), w.queue_view.size()) == rows
    assert w.canvas.width() == canvas.width() and w.canvas.height() >= canvas.height() - w.banner.height() - 6
    assert (w.width(), w.height()) == size and overlapping_siblings(w) == []
    w.banner.dismiss()
    qtbot.wait(20)
    assert w.canvas.size() == canvas
    w.controls.set_prompt("compare me")
    w.controls.set_settings(w.controls.settings().with_(drafter="jacobi"))
    assert w.compare() is not None, w.banner.text()
    qtbot.waitUntil(lambda: not w.studio.pairs and not w.session.queue.busy, timeout=WAIT)
    qtbot.wait(20)
    # the race takes the canvas's place, at the canvas's size; the rest of the window does not move
    assert w.race.isVisible() and w.race.size() == canvas_view
    assert (w.views.size(), w.gallery.size(), (w.width(), w.height())) == (views, gallery, size)
    assert all(lane.view.width() >= 96 and lane.view.height() >= 96 for lane in w.race.lanes.values())
    w.race.play()
    qtbot.wait(60)
    assert (w.views.size(), w.gallery.size()) == (views, gallery)
    w.race.stop()
    assert clipped_texts(w) == [] and overlapping_siblings(w) == []


def _mean_opaque_lightness(icon) -> float:
    img = icon.pixmap(16, 16).toImage()
    values = [img.pixelColor(x, y) for x in range(img.width()) for y in range(img.height())]
    opaque = [c.lightness() for c in values if c.alpha() > 128]
    assert opaque, "the icon draws nothing"
    return sum(opaque) / len(opaque)


def test_polish_glyphs_focus_rings_icons_and_tooltips(qtbot, tiny):
    """Point 10 of the studio issue: Play/Pause draw with what any font has (the Pause glyph was a missing-glyph
    box), keyboard focus shows on Random, Copy and the sliders, the banner's and dialogs' Close read on the dark
    theme, the model's facts line explains itself."""
    from PySide6.QtGui import QFontMetrics
    from PySide6.QtWidgets import QDialogButtonBox

    w = open_window(qtbot, tiny)
    run_job(qtbot, w)
    bar = w.replay
    for state in ("stopped", "playing"):
        if state == "playing":
            bar.play()
        b = bar.play_button
        assert all(QFontMetrics(b.font()).inFontUcs4(ord(ch)) for ch in b.text()), (state, b.text())
        assert not b.icon().isNull() and _mean_opaque_lightness(b.icon()) > 160, state
    bar.stop()
    assert _mean_opaque_lightness(w.banner.close_button.icon()) > 160
    # a focus ring: the widget looks different with keyboard focus than without
    w.activateWindow()
    qtbot.waitUntil(w.isActiveWindow, timeout=WAIT)
    c = w.controls
    for widget in (c.dice, c.copy_seed, c.k.slider, c.delta.slider):
        c.generate_button.setFocus(Qt.FocusReason.TabFocusReason)
        qtbot.wait(10)
        before = widget.grab().toImage()
        widget.setFocus(Qt.FocusReason.TabFocusReason)
        qtbot.waitUntil(widget.hasFocus, timeout=WAIT)
        qtbot.wait(10)
        assert widget.grab().toImage() != before, f"{type(widget).__name__} shows no focus"
    # dialog Close buttons carry no dark standard icon
    d = w.show_models_dialog()
    close = d.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Close)
    qtbot.wait(10)
    assert close.icon().isNull() or close.iconSize().isEmpty() or not close.style().styleHint(
        close.style().StyleHint.SH_DialogButtonBox_ButtonsHaveIcons, None, close)
    d.close()
    # the facts line: its tooltip holds all of it and says what each part means
    tip = c.model_facts.toolTip()
    assert tip.startswith(c.model_facts.text()) and "tokens:" in tip and len(tip) > len(c.model_facts.text()) + 40


@needs_cxx
@pytest.mark.slow  # a real compile in the window (~40 s); test_compiled_default.py covers the studio's side in CI
def test_compiled_decoding_is_a_remembered_choice_the_engine_follows(qtbot, tiny, monkeypatch):
    """Generate ▸ Compiled decoding: the loaded model compiles (the status line says so), its next
    image's forwards all run compiled, the choice is saved, and unticking goes back to eager. (The
    timing that picks a path per family is tested in test_compiled_default.py; here it is off.)"""
    from lantern_studio.engine import compiled_decoding

    monkeypatch.setattr(compiled_decoding, "TIME_ROUNDS", 0)
    w = open_window(qtbot, tiny)
    assert w.model_info.steps == EAGER_STEPS and not w.compiled_action.isChecked()
    w.compiled_action.trigger()
    qtbot.waitUntil(lambda: w.model_info.steps != EAGER_STEPS, timeout=4 * WAIT)  # a real compile: seconds
    assert w.model_info.steps == COMPILED_STEPS and "compiled" in w.status_model.text()
    assert w.prefs.get_json("compiled_decoding") is True
    _, r = run_job(qtbot, w)
    assert r.stats["compiled_forwards"] == r.stats["target_forwards"] > 0
    w.compiled_action.trigger()
    qtbot.waitUntil(lambda: w.model_info.steps == EAGER_STEPS, timeout=WAIT)
    _, r = run_job(qtbot, w)
    assert r.stats["compiled_forwards"] == 0 and w.prefs.get_json("compiled_decoding") is False
