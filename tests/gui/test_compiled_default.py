"""Compiled decoding on by default, in the background (issue #35): the eager path serves Generate while the
decode steps compile, the compiled twin is swapped in between jobs, every record says which path made its
picture (and a replayed record asks for that path), and a machine without a C++ compiler says so once and
stays eager. The compiles here are stand-ins (``torch.compile`` returning the step itself, so a "graph"
is the eager fixed-shape step): what is tested is the studio's plumbing, not inductor."""

from __future__ import annotations

import threading

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

import torch  # noqa: E402
from PIL import Image  # noqa: E402
from torch._inductor import cpp_builder, exc  # noqa: E402

from lantern_studio.engine import compiled_decoding  # noqa: E402
from lantern_studio.engine.compiled import NO_COMPILER  # noqa: E402
from lantern_studio.export import read_png_record  # noqa: E402
from lantern_studio.studio import compiled_steps  # noqa: E402
from lantern_studio.studio.compiled_steps import COMPILED_STEPS, EAGER_STEPS, failed_steps  # noqa: E402
from support.studio import WAIT, open_window, run_job  # noqa: E402


@pytest.fixture
def stand_in_compile(monkeypatch):
    """``torch.compile`` as the identity, held at a gate until the test opens it; the C++ compiler check
    passes (whatever this machine has). Yields (gate, calls)."""
    gate, calls = threading.Event(), []

    def compile(fn, **kwargs):
        calls.append(kwargs)
        gate.wait(WAIT / 1000)
        return fn

    monkeypatch.setattr(torch, "compile", compile)
    monkeypatch.setattr("lantern_studio.engine.compiled_decoding.missing_compiler", lambda _device: None)
    monkeypatch.setattr(compiled_decoding, "TIME_ROUNDS", 0)  # no timing: compiled serves every family
    return gate, calls


def _png_parameters(path) -> str:
    with Image.open(path) as img:
        return img.text["parameters"]


def test_compiled_is_the_default_and_eager_serves_generate_until_the_compile_is_in(
        qtbot, tiny, stand_in_compile, shipped_compiled_default):
    gate, calls = stand_in_compile
    w = open_window(qtbot, tiny)  # a fresh home: no preference saved
    assert shipped_compiled_default is True
    assert w.prefs.get_json("compiled_decoding") is None and w.compiled_action.isChecked()
    # the model is ready while its steps compile; the status line says how far the compile is
    qtbot.waitUntil(lambda: "compiling decode steps… 1/2" in w.status_model.text(), timeout=WAIT)
    qtbot.waitUntil(lambda: len(calls) == 1, timeout=WAIT)  # the line is said just before the graph compiles
    assert w.model_info.steps == EAGER_STEPS
    _, r = run_job(qtbot, w)  # served at once, eagerly, while the compile waits at the gate
    assert r.stats["compiled_forwards"] == 0 and w.finished_record["compiled"] is False
    entry = w.store.entries()[0]
    assert read_png_record(entry.path)["compiled"] is False and "Compiled: no" in _png_parameters(entry.path)

    gate.set()
    qtbot.waitUntil(lambda: w.model_info.steps == COMPILED_STEPS, timeout=WAIT)
    assert w.status_model.text().endswith(" · compiled") and "compiling" not in w.status_model.text()
    _, r = run_job(qtbot, w)
    assert r.stats["compiled_forwards"] == r.stats["target_forwards"] > 0
    assert w.finished_record["compiled"] is True
    entry = w.store.entries()[0]
    assert read_png_record(entry.path)["compiled"] is True and "Compiled: yes" in _png_parameters(entry.path)
    assert len(calls) == 1  # one compile for the session's model


def test_a_saved_off_is_honoured_and_a_replayed_record_asks_for_its_path(qtbot, tiny, stand_in_compile):
    gate, calls = stand_in_compile
    gate.set()
    w = open_window(qtbot, tiny)  # the GUI tests' default: off, as a saved "off" is
    assert not w.compiled_action.isChecked() and w.model_info.steps == EAGER_STEPS and calls == []
    w.compiled_action.trigger()
    qtbot.waitUntil(lambda: w.model_info.steps == COMPILED_STEPS, timeout=WAIT)
    _, made = run_job(qtbot, w, "a cat")
    compiled_entry = w.store.entries()[0]
    assert compiled_entry.record["compiled"] is True
    w.compiled_action.trigger()  # off: eager at once
    qtbot.waitUntil(lambda: w.model_info.steps == EAGER_STEPS, timeout=WAIT)
    assert w.prefs.get_json("compiled_decoding") is False
    _, eager = run_job(qtbot, w, "a dog")
    assert eager.stats["compiled_forwards"] == 0 and w.store.entries()[0].record["compiled"] is False

    # opening the compiled entry and pressing Generate redraws it on its path, although the choice is off
    w.restore_entry(compiled_entry)
    job, again = run_job(qtbot, w, "a cat")
    assert job.steps == "compiled" and again.stats["compiled_forwards"] == again.stats["target_forwards"]
    assert (again.tokens == made.tokens).all() and w.finished_record["compiled"] is True
    # other settings are a new picture: the person's choice (off) decides
    w.controls.new_seed.setChecked(True)
    job, other = run_job(qtbot, w, "a cat")
    assert job.steps is None and other.stats["compiled_forwards"] == 0


def test_no_cxx_compiler_says_so_once_and_stays_eager(qtbot, tiny, monkeypatch, capfd, shipped_compiled_default):
    made = []
    real = compiled_decoding.BackgroundCompile

    def counted(*args, **kwargs):
        made.append(args)
        return real(*args, **kwargs)

    def no_compile(*_a, **_k):
        raise AssertionError("torch.compile was tried on a machine without a C++ compiler")

    def no_cxx():  # inductor's own search, finding nothing (its config is per thread: patched here instead)
        raise exc.InvalidCxxCompiler()

    monkeypatch.setattr(compiled_decoding, "BackgroundCompile", counted)
    monkeypatch.setattr(torch, "compile", no_compile)
    monkeypatch.setattr(cpp_builder, "get_cpp_compiler", no_cxx)
    w = open_window(qtbot, tiny)
    qtbot.waitUntil(lambda: w.model_info.steps == failed_steps(NO_COMPILER), timeout=WAIT)
    assert "eager (compiling failed)" in w.status_model.text() and NO_COMPILER in w.status_model.toolTip()
    assert "C++ compiler" in NO_COMPILER
    _, r = run_job(qtbot, w)
    assert r.stats["compiled_forwards"] == 0 and w.finished_record["compiled"] is False
    for _ in range(2):  # off and on again: no second attempt, the same line
        w.compiled_action.trigger()
    qtbot.waitUntil(lambda: w.model_info.steps == failed_steps(NO_COMPILER), timeout=WAIT)
    _, r = run_job(qtbot, w)
    assert r.stats["compiled_forwards"] == 0
    assert len(made) == 1
    log = [line for line in capfd.readouterr().err.splitlines() if "C++ compiler" in line]
    assert log == [f"lantern-studio: {NO_COMPILER}"]


def test_unticking_during_the_compile_stops_it_and_clears_the_status_line(
        qtbot, tiny, stand_in_compile, shipped_compiled_default):
    gate, calls = stand_in_compile
    w = open_window(qtbot, tiny)
    qtbot.waitUntil(lambda: "compiling decode steps… 1/2" in w.status_model.text(), timeout=WAIT)
    task = w.jobs.worker.steps.decoding.task
    w.compiled_action.trigger()  # off, mid-compile
    qtbot.waitUntil(lambda: "compiling" not in w.status_model.text(), timeout=WAIT)
    assert task.cancelled and w.model_info.steps == EAGER_STEPS and w.prefs.get_json("compiled_decoding") is False
    gate.set()
    assert task.wait(WAIT / 1000) and task.result is None
    _, r = run_job(qtbot, w)
    assert r.stats["compiled_forwards"] == 0 and w.model_info.steps == EAGER_STEPS and len(calls) == 1


def test_closing_the_window_while_compiling_returns_at_once_and_the_compile_ends_unheard(
        qtbot, tiny, stand_in_compile, shipped_compiled_default, capfd):
    gate, calls = stand_in_compile
    w = open_window(qtbot, tiny)
    qtbot.waitUntil(lambda: len(calls) == 1, timeout=WAIT)
    task = w.jobs.worker.steps.decoding.task
    w.close()
    assert w.jobs.thread.isFinished() and task.cancelled
    gate.set()
    assert task.wait(WAIT / 1000) and task.result is None
    assert "Traceback" not in capfd.readouterr().err


# --------------------------------------------------------------------------- compiled only where faster


def _timed_as(monkeypatch, tmp_path, vanilla, speculative, counted=None):
    """Timing after the stand-in compile reports ``vanilla`` / ``speculative`` as (eager s, compiled s);
    verdicts are kept under ``tmp_path``."""
    from lantern_studio.engine import decode_paths

    def fake_time(pipe, rounds, should_stop=None):
        if counted is not None:
            counted.append(rounds)
        return {decode_paths.VANILLA: decode_paths.PathTiming(*vanilla),
                decode_paths.SPECULATIVE: decode_paths.PathTiming(*speculative)}

    monkeypatch.setattr(compiled_decoding, "time_paths", fake_time)
    monkeypatch.setattr(compiled_steps, "compile_cache", lambda: tmp_path / "compiled")
    monkeypatch.setattr(compiled_decoding, "TIME_ROUNDS", 3)


def test_each_family_decodes_on_the_path_measured_faster_and_the_status_says_why(
        qtbot, tiny, stand_in_compile, monkeypatch, tmp_path):
    gate, calls = stand_in_compile
    timed = []
    _timed_as(monkeypatch, tmp_path, vanilla=(1.15, 1.07), speculative=(0.78, 0.85), counted=timed)
    gate.set()
    w = open_window(qtbot, tiny)
    w.set_compiled_decoding(True)  # an earlier test of this module may have saved "off"
    qtbot.waitUntil(lambda: w.model_info is not None and w.model_info.steps.measured, timeout=WAIT)
    assert timed == [3]
    short = "compiled for vanilla AR, eager for speculative (LANTERN) (faster here)"
    assert w.status_model.text().endswith(f" · {short}")  # the verdict's short words end the line, whole
    assert w.status_model.toolTip().endswith(
        f"decode steps compiled where faster (Generate ▸ Compiled decoding)\nmeasured: {short} — measured on this "
        "machine: vanilla AR: compiled (1.07 s compiled vs 1.15 s eager); speculative (LANTERN): eager (0.85 s "
        "compiled vs 0.78 s eager)")
    w.controls.drafter.setCurrentIndex(w.controls.drafter.findData("none"))
    _, r = run_job(qtbot, w)
    assert r.stats["compiled_forwards"] == r.stats["target_forwards"] > 0  # vanilla: compiled was faster
    w.controls.drafter.setCurrentIndex(w.controls.drafter.findData("jacobi"))
    _, r = run_job(qtbot, w)
    assert r.stats["compiled_forwards"] == 0 and w.finished_record["compiled"] is False  # speculative: eager


def test_a_relaunch_remembers_that_compiled_is_slower_and_compiles_nothing(
        qtbot, tiny, stand_in_compile, monkeypatch, tmp_path):
    gate, calls = stand_in_compile
    _timed_as(monkeypatch, tmp_path, vanilla=(1.0, 1.2), speculative=(0.78, 0.85))
    gate.set()
    w = open_window(qtbot, tiny)
    w.set_compiled_decoding(True)  # an earlier test of this module may have saved "off"
    qtbot.waitUntil(lambda: w.model_info is not None and w.model_info.steps.measured, timeout=WAIT)
    assert "eager (faster here than compiled)" in w.status_model.text() and len(calls) == 1
    assert (tmp_path / "compiled" / "decode-paths.json").is_file()
    w.close()

    again = open_window(qtbot, tiny)  # the same machine and model: the verdict is read, nothing compiles
    qtbot.waitUntil(lambda: again.model_info is not None and again.model_info.steps.measured,
                    timeout=WAIT)
    _, r = run_job(qtbot, again)
    assert r.stats["compiled_forwards"] == 0 and len(calls) == 1
    assert not again.jobs.worker.steps.compiling
