"""``lantern-studio doctor``: the text and JSON reports, model file verification, and
that a failing probe is reported instead of crashing the report."""

from __future__ import annotations

import contextlib
import json
import os
import socket

import pytest

from lantern_studio import __version__, doctor
from lantern_studio.cli import main
from lantern_studio.models.tiny import build_tiny_model_dir

SECTIONS = {"lantern_studio", "python", "platform", "torch", "devices", "threads", "display", "qt", "paths", "disk",
            "model", "text_encoder", "huggingface", "packages"}


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    return build_tiny_model_dir(tmp_path_factory.mktemp("doctor") / "m")


def _doctor(capsys, *args) -> tuple:
    rc = main(["doctor", *args])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_text_report(capsys, tiny_folder):
    rc, out, _ = _doctor(capsys, "--model", str(tiny_folder))
    assert rc == 0, out
    assert out.startswith(f"Lantern Studio {__version__} — environment report")
    for section in SECTIONS:
        assert f"[{section}]" in out
    import torch

    assert torch.__version__ in out
    assert ("CPU only" in out) or ("CUDA " in out) or ("ROCm " in out)
    from lantern_studio.engine.precision import native_bf16

    ok, why = native_bf16("cuda" if torch.cuda.is_available() else "cpu")
    assert f"auto={'bf16' if ok else 'fp32'}" in out and why in out  # which precision auto picks, and why
    assert "qpa offscreen" in out and "started=yes" in out  # the child process started Qt offscreen
    assert str(tiny_folder) in out
    assert out.count("  OK") >= 3 and "MISMATCH" not in out
    assert "verdict              OK" in out


def test_json_report(capsys, tiny_folder, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    rc, out, _ = _doctor(capsys, "--json", "--no-qt-probe", "--model", str(tiny_folder))
    assert rc == 0
    r = json.loads(out)
    assert SECTIONS <= set(r)
    for section in SECTIONS:
        assert "error" not in r[section], (section, r[section])
    assert r["lantern_studio"]["version"] == __version__
    assert r["python"]["version"].count(".") == 2
    assert r["torch"]["build"] in ("CPU only",) or r["torch"]["build"].startswith(("CUDA", "ROCm"))
    assert isinstance(r["devices"]["cuda"]["available"], bool) and "mps" in r["devices"]
    assert r["threads"]["intra_op"] >= 1
    assert r["qt"]["pyside6"] and "offscreen" in r["qt"]["platform_plugins"]
    assert r["qt"]["platforms"]["offscreen"]["started"] is None  # --no-qt-probe: no child process
    assert {"DISPLAY", "WAYLAND_DISPLAY", "available"} <= set(r["display"])
    # the folders follow the environment (conftest points them at temporary folders)
    import os

    assert r["paths"]["cache"] == os.environ["LANTERN_STUDIO_CACHE"]
    assert r["paths"]["app_data"] == os.environ["LANTERN_STUDIO_DATA"]
    assert r["disk"]["app_data"]["free_bytes"] > 0
    assert r["huggingface"]["offline"] is True and r["huggingface"]["HF_HUB_OFFLINE"] == "1"
    assert r["huggingface"]["cache"]
    m = r["model"]
    assert m["ok"] is True and m["folder"] == str(tiny_folder)
    assert {f["file"] for f in m["files"]} >= {"gpt.safetensors", "vq.safetensors"}
    assert all(f["status"] == "OK" and f["sha256"] == f["expected"] for f in m["files"])


def test_corrupted_model_file_shows_mismatch(capsys, tmp_path):
    folder = build_tiny_model_dir(tmp_path / "m")
    gpt = folder / "gpt.safetensors"
    data = bytearray(gpt.read_bytes())
    data[-1] ^= 0xFF  # one flipped byte in the weights
    gpt.write_bytes(bytes(data))
    rc, out, _ = _doctor(capsys, "--no-qt-probe", "--model", str(folder))
    assert rc == 1
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("gpt.safetensors"))
    assert "MISMATCH" in line
    assert next(ln for ln in out.splitlines() if ln.strip().startswith("vq.safetensors")).rstrip().endswith("OK")
    assert "verdict              PROBLEM" in out

    (folder / "vq.safetensors").unlink()
    rc, out, _ = _doctor(capsys, "--json", "--no-qt-probe", "--model", str(folder))
    assert rc == 1
    status = {f["file"]: f["status"] for f in json.loads(out)["model"]["files"]}
    assert status["gpt.safetensors"] == "MISMATCH" and status["vq.safetensors"] == "MISSING"


def test_model_folder_problems_are_reported(capsys, tmp_path):
    rc, out, _ = _doctor(capsys, "--json", "--no-qt-probe", "--model", str(tmp_path / "nowhere"))
    assert rc == 1 and "does not exist" in json.loads(out)["model"]["error"]
    (tmp_path / "empty").mkdir()
    rc, out, _ = _doctor(capsys, "--json", "--no-qt-probe", "--model", str(tmp_path / "empty"))
    assert rc == 1 and "no model.json" in json.loads(out)["model"]["error"]
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "model.json").write_text("{not json")
    rc, out, _ = _doctor(capsys, "--json", "--no-qt-probe", "--model", str(bad))
    assert rc == 1 and "unreadable" in json.loads(out)["model"]["error"]


def test_a_bundled_model_is_named_and_a_name_outside_them_is_not_a_folder(capsys, tmp_path, monkeypatch):
    """--model emoji-64-v5 checks the bundled preview; a name no bundled model has, or a path dressed as one
    (../emoji-64), is reported as not a folder rather than looked for under resources/."""
    rc, out, _ = _doctor(capsys, "--json", "--no-qt-probe", "--no-hash", "--model", "emoji-64-v5")
    model = json.loads(out)["model"]
    assert model["model"] == "emoji-64-v5 (bundled)" and model["folder"].endswith("models/emoji-64-v5")
    monkeypatch.chdir(tmp_path)
    for spec in ("emoji-64-v9", "../emoji-64"):
        rc, out, _ = _doctor(capsys, "--json", "--no-qt-probe", "--model", spec)
        model = json.loads(out)["model"]
        assert rc == 1 and model["model"] == f"{spec} (not a folder)" and "does not exist" in model["error"]


def test_a_failing_probe_is_reported_not_raised(capsys, monkeypatch, tiny_folder):
    def boom():
        raise RuntimeError("driver exploded")

    monkeypatch.setattr(doctor, "probe_torch", boom)
    monkeypatch.setattr(doctor, "probe_devices", lambda: 1 / 0)
    rc, out, _ = _doctor(capsys, "--no-qt-probe", "--model", str(tiny_folder))
    assert rc == 0
    assert "RuntimeError: driver exploded" in out and "ZeroDivisionError" in out
    assert "[qt]" in out and "[model]" in out  # the rest still ran
    rc, out, _ = _doctor(capsys, "--json", "--no-qt-probe", "--model", str(tiny_folder))
    r = json.loads(out)
    assert r["torch"] == {"error": "RuntimeError: driver exploded"} and r["model"]["ok"] is True


def test_no_hash_lists_files_without_reading_them(capsys, tiny_folder):
    rc, out, _ = _doctor(capsys, "--json", "--no-qt-probe", "--no-hash", "--model", str(tiny_folder))
    assert rc == 0
    assert all(f["status"] == "NOT CHECKED" and "sha256" not in f for f in json.loads(out)["model"]["files"])


def test_cuda_devices_are_listed(monkeypatch, capsys):
    """No GPU here: a fake CUDA device checks the report's CUDA branch (names, memory, capability)."""
    import types

    import torch

    props = types.SimpleNamespace(name="NVIDIA Fake 80GB", total_memory=80 * 2**30, major=9, minor=0)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: props)
    d = doctor.probe_devices()
    assert d["cuda"]["devices"] == [{"index": 0, "name": "NVIDIA Fake 80GB", "memory_bytes": 80 * 2**30,
                                     "memory": "80.0 GB", "capability": "9.0"}]
    text = doctor.render_text({"devices": d})
    assert "cuda:0" in text and "NVIDIA Fake 80GB, 80.0 GB, sm 9.0" in text


MISSING = ["libxcb-icccm.so.4", "libxcb-keysyms.so.1"]


def _studio_on(monkeypatch, capsys, tmp_path, display: str, missing: list) -> tuple:
    """The studio command in-process on ``DISPLAY=display`` with the xcb plugin's libraries stated (``missing``
    stands in for ldd's answer): → (rc, stderr lines). The GUI must not start and nothing may be written."""
    import lantern_studio.gui.app as gui_app

    monkeypatch.setenv("DISPLAY", display)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("QT_QPA_PLATFORM", raising=False)
    monkeypatch.setattr(doctor, "_missing_libraries", lambda path: list(missing))
    monkeypatch.setattr(gui_app, "main", lambda **kw: pytest.fail("the GUI must not start"))
    monkeypatch.chdir(tmp_path)
    rc = main([])
    assert list(tmp_path.iterdir()) == []  # no window, no sample: nothing written
    return rc, capsys.readouterr().err.splitlines()


@pytest.fixture
def _linux_only():
    import sys

    if not sys.platform.startswith("linux"):
        pytest.skip("the xcb and X display checks are Linux-only")


@pytest.fixture
def no_x_on_99(_linux_only):
    if doctor.x_display_unreachable({"DISPLAY": ":99"}) != ":99":
        pytest.skip("something answers on display :99 here")


@pytest.mark.parametrize("missing", [[], MISSING], ids=["libraries present", "libraries missing"])
def test_the_studio_command_names_every_start_up_problem_in_order(monkeypatch, tmp_path, capsys, no_x_on_99,
                                                                  missing):
    """DISPLAY=:99 with no X server there, with and without the xcb plugin's system libraries: every problem
    that applies, one line each, the display first and the libraries second, then exit 1 before Qt starts
    (the library line used to come alone and hide the display's)."""
    rc, lines = _studio_on(monkeypatch, capsys, tmp_path, ":99", missing)
    assert rc == 1
    assert len(lines) == 1 + bool(missing), lines
    assert lines[0].startswith("lantern-studio: ") and "DISPLAY=:99 cannot be reached" in lines[0]
    assert "missing" not in lines[0]
    if missing:
        assert lines[1].startswith("lantern-studio: ") and "needs system libraries that are missing" in lines[1]
        assert all(lib in lines[1] for lib in MISSING) and "apt-get install libxcb-cursor0" in lines[1]


@contextlib.contextmanager
def _answering_display():
    """A display name that answers: a listening socket on loopback stands in for an X server."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        if port < 6000:
            pytest.skip("the free port is below X's range")
        yield f"127.0.0.1:{port - 6000}"


def test_missing_qt_libraries_alone_are_named_in_one_line(monkeypatch, tmp_path, capsys, _linux_only):
    """A display that answers (a listening socket on loopback stands in for an X server) but no xcb libraries:
    the library line alone, with the apt line, and exit 1 (Qt itself would abort the process)."""
    with _answering_display() as display:
        rc, lines = _studio_on(monkeypatch, capsys, tmp_path, display, ["libxcb-cursor.so.0"])
    assert rc == 1 and len(lines) == 1, lines
    assert lines[0].startswith("lantern-studio: ") and "libxcb-cursor.so.0" in lines[0]
    assert "apt-get install libxcb-cursor0" in lines[0]
    # with the libraries present, or on another platform plugin, nothing is said
    monkeypatch.setattr(doctor, "_missing_libraries", lambda path: [])
    assert doctor.qt_platform_problem() is None
    assert doctor.qt_platform_problem({"DISPLAY": ":99", "QT_QPA_PLATFORM": "offscreen"}) is None


def test_an_unreachable_display_is_named_in_one_line_and_exits_1(tmp_path, no_x_on_99):
    """DISPLAY=:99 with no X server there: Qt would abort (rc 134) advising to reinstall xcb-cursor; instead the
    studio command (a real subprocess) names the display and what to do in its first line and exits 1, before
    Qt. Whatever system libraries this machine has: where the xcb plugin misses some, one more line says which."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env["DISPLAY"] = ":99"
    done = subprocess.run([sys.executable, "-m", "lantern_studio", "gui"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert 1 <= len(lines) <= 2 and all(line.startswith("lantern-studio: ") for line in lines), lines
    assert "DISPLAY=:99 cannot be reached" in lines[0] and "xcb-cursor" not in lines[0]
    assert all("needs system libraries that are missing" in line for line in lines[1:]), lines
    assert list(tmp_path.iterdir()) == []  # no window, no sample: nothing written
    with _answering_display() as display:  # a display that answers is reachable
        assert doctor.x_display_unreachable({"DISPLAY": display}) is None
    assert doctor.x_display_unreachable({"DISPLAY": ":0", "QT_QPA_PLATFORM": "offscreen"}) is None


def test_env_flags_and_the_nearest_existing_folder(tmp_path, monkeypatch):
    """One helper each, shared by the doctor's probes and the Hub code (they had a copy each)."""
    from lantern_studio import paths

    assert [paths.env_flag(v) for v in ("1", " yes ", "TRUE", "on")] == [True] * 4
    assert [paths.env_flag(v) for v in (None, "", "0", "off", "no", "2")] == [False] * 6
    deep = tmp_path / "a" / "b" / "c.bin"
    assert paths.existing_parent(deep) == tmp_path
    (tmp_path / "a").mkdir()
    assert paths.existing_parent(deep) == tmp_path / "a"
    monkeypatch.chdir(tmp_path)
    assert paths.existing_parent("a/b") == tmp_path / "a"  # relative paths resolve from the working folder


# --------------------------------------------------------------------------- Qt asked in a child process


def test_the_doctor_asks_qt_in_a_child_what_the_gui_says_in_process(monkeypatch, tmp_path):
    """doctor.qt_facts (a child process: the doctor never imports Qt) answers what gui/qt_info.py says in
    this process: the versions, the platform plugins folder, and the user-data folder as the studio names it."""
    from lantern_studio.gui import qt_info

    monkeypatch.setenv("LANTERN_STUDIO_DATA", str(tmp_path / "studio-data"))
    assert doctor.qt_facts() == qt_info.facts()
    assert doctor.qt_facts()["app_data"] == str(tmp_path / "studio-data")
    monkeypatch.delenv("LANTERN_STUDIO_DATA")
    assert doctor.qt_facts()["app_data"] == qt_info.facts()["app_data"]  # where Qt places it
    assert not (tmp_path / "studio-data").exists()  # named, not created


def test_a_child_that_cannot_answer_is_one_error_and_the_rest_still_report(monkeypatch, capsys, tiny_folder):
    """When the child cannot tell (Qt broken, say: here a module that does not exist), qt_facts is one
    error; the qt section and the user-data folder say so and every other section still reports."""
    monkeypatch.setattr(doctor, "QT_FACTS_MODULE", "lantern_studio.gui.no_such_module")
    facts = doctor.qt_facts()
    assert set(facts) == {"error"} and "no_such_module" in facts["error"] and "\n" not in facts["error"]
    assert doctor.qt_platform_problem({"DISPLAY": ":0"}) is None  # cannot tell: says nothing
    rc, out, _ = _doctor(capsys, "--json", "--model", str(tiny_folder), "--no-qt-probe", "--no-hash")
    report = json.loads(out)
    assert rc == 0 and set(report) == SECTIONS
    assert "Qt could not be asked" in report["qt"]["error"]
    assert "Qt could not be asked" in report["paths"]["app_data"]["error"]
    assert report["paths"]["cache"] and report["model"]["ok"]


@pytest.mark.parametrize("env, linux_answer", [
    ({}, False),
    ({"DISPLAY": ":0"}, True),
    ({"WAYLAND_DISPLAY": "wayland-0"}, True),
    ({"QT_QPA_PLATFORM": "offscreen"}, True),
    ({"QT_QPA_PLATFORM": "xcb"}, False),
])
def test_one_display_probe(env, linux_answer, monkeypatch):
    """The one display probe (the studio command and the report both ask it): on Linux a display or a
    platform that needs none; elsewhere always."""
    monkeypatch.setattr(doctor.sys, "platform", "linux")
    assert doctor.display_available(env) is linux_answer
    for var in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        monkeypatch.delenv(var, raising=False)
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    assert doctor.probe_display()["available"] is linux_answer
    monkeypatch.setattr(doctor.sys, "platform", "darwin")
    assert doctor.display_available(env) is True
