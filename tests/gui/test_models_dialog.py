"""The Models dialog: the Hub catalogue inside the studio, against a local hub server (never the network)."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from lantern_studio.models import catalogue, hub  # noqa: E402
from support.hub import free_port, go_offline, go_online  # noqa: E402
from support.studio import WAIT, open_window  # noqa: E402


def dialog_on(qtbot, name):
    """A studio window and its Models dialog, open, with ``name`` selected."""
    w = open_window(qtbot, None)
    d = w.show_models_dialog()
    d.select(name)
    return w, d


def rows(dialog):
    t = dialog.table
    return {t.item(r, 0).data(0x0100): [t.item(r, c).text() for c in range(t.columnCount())]
            for r in range(t.rowCount())}


def test_download_with_progress_then_load_a_class_model(qtbot, hub_server, tiny_catalogue):
    c2i, t2i = tiny_catalogue
    w = open_window(qtbot, None)
    d = w.show_models_dialog()
    table = rows(d)
    # the catalogue as the user reads it: the official models and the tiny test entries, none cached yet
    assert "llamagen-c2i-b-256" in table and table[c2i.name][1] == "class → image"
    assert table[t2i.name][1] == "text → image" and table[c2i.name][2] == f"{c2i.image_size}×{c2i.image_size} px"
    assert table[c2i.name][3] == hub.format_size(c2i.download_size) and table[c2i.name][4] == "no"
    d.select(c2i.name)
    formats = []
    d.progress.valueChanged.connect(lambda v: formats.append(d.progress.format()))
    task = d.download_or_load()
    assert d.downloading and not d.download_button.isEnabled() and d.cancel_button.isEnabled()
    qtbot.waitUntil(task.done, timeout=WAIT)
    assert task.result() == c2i.name and d.last_error is None, d.status.text()
    assert any(" of " in f and "file " in f for f in formats)  # bytes done of total, which file
    assert d.progress.value() == 1000 and rows(d)[c2i.name][4] == "yes" and d.download_button.text() == "Load"
    assert catalogue.status(c2i.name)["state"] == "installed"
    # the window loads it: a class-conditional model gets the class picker, not the prompt box
    qtbot.waitUntil(lambda: w.model_info is not None and w.model_info.spec == c2i.name, timeout=WAIT)
    c = w.controls
    assert c.class_mode and c.class_picker.isVisible() and not c.prompt.isVisible()
    assert len(c.class_picker.names) == 1000 and c.prompt_group.title().startswith("Class")
    # type-ahead: part of a name finds the class; picking it fills the box with the plain name
    c.class_picker.completer_.setCompletionPrefix("retriev")
    found = [c.class_picker.completer_.completionModel().index(i, 0).data()
             for i in range(c.class_picker.completer_.completionCount())]
    assert any(f.startswith("golden retriever · 207") for f in found)
    c.class_picker._picked(next(f for f in found if f.startswith("golden retriever")))
    assert c.prompt_text() == "golden retriever"
    job = w.generate()
    qtbot.waitUntil(lambda: w.last_result is not None and w.last_result.job.id == job.id, timeout=WAIT)
    assert w.last_result.note == "class 207: golden retriever"
    # back to a text model: the prompt box returns
    d.select(t2i.name)
    task = d.download_or_load()
    qtbot.waitUntil(task.done, timeout=WAIT)
    assert task.result() == t2i.name, d.status.text()
    qtbot.waitUntil(lambda: (w.model_info is not None and w.model_info.spec == t2i.name) or bool(w.banner.text()),
                    timeout=WAIT)
    assert w.model_info is not None and w.model_info.spec == t2i.name, w.banner.text()
    assert not c.class_mode and c.prompt.isVisible()


def test_cancel_then_resume(qtbot, hub_server, tiny_catalogue):
    c2i, _ = tiny_catalogue
    w, d = dialog_on(qtbot, c2i.name)
    task = d.download_or_load()
    d.cancel_button.click()  # before the first byte: the downloader sees it between files
    qtbot.waitUntil(task.done, timeout=WAIT)
    assert task.result() is None and "cancelled" in d.status.text() and d.last_error is None
    assert catalogue.status(c2i.name)["state"] != "installed" and d.download_button.isEnabled()
    task = d.download_or_load()
    qtbot.waitUntil(task.done, timeout=WAIT)
    assert task.result() == c2i.name and catalogue.status(c2i.name)["state"] == "installed"


def test_offline_and_unreachable_hub_say_one_clear_line(qtbot, hub_server, tiny_catalogue, monkeypatch):
    c2i, _ = tiny_catalogue
    w, d = dialog_on(qtbot, c2i.name)
    go_offline(monkeypatch)
    task = d.download_or_load()
    qtbot.waitUntil(task.done, timeout=WAIT)
    assert task.result() is None and "HF_HUB_OFFLINE" in d.last_error and "\n" not in d.last_error
    go_online(monkeypatch)
    hub_server.stop()
    task = d.download_or_load()
    qtbot.waitUntil(task.done, timeout=WAIT)
    assert task.result() is None and d.last_error and "\n" not in d.last_error
    assert w.model_info is None or w.model_info.spec != c2i.name


def test_the_dialog_says_offline_or_unreachable_as_it_opens(qtbot, hub_server, tiny_catalogue, monkeypatch):
    """Before anyone presses Download: nothing said while the hub answers; an unreachable hub and offline mode
    each get one line the moment the dialog is shown, and offline mode offers only what the cache can load."""
    c2i, _ = tiny_catalogue
    w = open_window(qtbot, None)
    d = w.show_models_dialog()
    qtbot.waitUntil(lambda: d.hub_check is not None and d.hub_check.done(), timeout=WAIT)
    assert d.hub_problem is None and d.status.text() == "" and d.task is None
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{free_port()}")  # nobody listens there
    d.hide()
    d = w.show_models_dialog()
    qtbot.waitUntil(lambda: d.hub_check.done(), timeout=WAIT)
    assert d.task is None  # nothing was downloaded or even asked for
    assert "could not reach the model hub" in d.status.text() and "cache" in d.status.text()
    assert "\n" not in d.status.text()
    d.select(c2i.name)
    assert d.download_button.isEnabled()  # the network may come back: Download stays on offer
    go_offline(monkeypatch)
    d.hide()
    d = w.show_models_dialog()
    qtbot.waitUntil(lambda: d.hub_check.done(), timeout=WAIT)
    assert "HF_HUB_OFFLINE" in d.status.text() and d.task is None
    d.select(c2i.name)
    assert not d.download_button.isEnabled()  # not in the cache and offline: nothing to load
    go_online(monkeypatch)


def test_class_picker_names_each_class_once_and_ids_for_shared_names():
    from lantern_studio.gui.class_picker import primary_names

    names = catalogue.imagenet_class_names()
    shown = primary_names(names)
    assert len(set(shown)) == 1000  # every entry picks exactly one class
    assert shown[207] == "golden retriever" and shown[134] == "#134" and shown[517] == "#517"  # the two cranes
    assert shown[86] == "#86"  # "partridge" is also a synonym of class 82 (ruffed grouse)
    from lantern_studio.engine.text import ClassConditioner

    cond = ClassConditioner(names)
    assert [cond.match(s) for s in shown] == list(range(1000))  # what the box holds is what the model draws


def test_a_late_hub_check_does_not_overwrite_a_download_s_error(qtbot, hub_server, tiny_catalogue, monkeypatch):
    """The check started when the dialog opened may answer after a Download has already failed: the failure's
    line stays (it once cleared it, and the full suite caught it)."""
    import threading

    c2i, _ = tiny_catalogue
    gate = threading.Event()
    real = hub.check_reachable
    monkeypatch.setattr(hub, "check_reachable", lambda *a, **k: (gate.wait(30), real(*a, **k))[1])
    w, d = dialog_on(qtbot, c2i.name)
    go_offline(monkeypatch)
    task = d.download_or_load()
    qtbot.waitUntil(task.done, timeout=WAIT)
    error = d.last_error
    assert error and "HF_HUB_OFFLINE" in error
    gate.set()
    qtbot.waitUntil(lambda: d.hub_check.done(), timeout=WAIT)
    assert d.last_error == error and d.status.text() == error
