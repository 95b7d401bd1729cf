"""One Generate traced from the button to the model's forward, as a newcomer would follow it by reading.

Run as a script (offscreen, a tiny random model, a fresh data folder)::

    QT_QPA_PLATFORM=offscreen python -m support.generate_hops --handoff JobQueue._dispatch

It clicks the window's Generate button and records, with a profiler on every thread, the project's own
frames (``lantern_studio`` functions; Qt, torch and the standard library are not counted):

* in the GUI thread, the stack at the call of ``--handoff`` (the function that hands the job to the engine
  thread) during the click;
* in the thread that decodes, the stack at the first call of the target's forward (``Runner.prefill`` /
  ``step``, or a bare ``Transformer``'s ``forward``), with that call.

A hop is one of those frames; it prints both chains and the totals (hops, distinct files) as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

PACKAGE = os.sep + "lantern_studio" + os.sep


def _ours(frame) -> bool:
    return PACKAGE in frame.f_code.co_filename


def _where(frame) -> str:
    path = frame.f_code.co_filename
    rel = path[path.rindex(PACKAGE) + len(PACKAGE):]
    return f"{rel}:{frame.f_code.co_qualname}"


def _chain(frame) -> list:
    out = []
    while frame is not None:
        if _ours(frame):
            out.append(_where(frame))
        frame = frame.f_back
    return out[::-1]


FORWARDS = {"engine.runner": ("prefill", "step"), "engine.model": ("forward", "forward_cached")}


def _wrap_forwards(seen) -> None:
    """The target's forward, as the decode loop calls it (the fast path's ``Runner.prefill`` / ``step``, or a
    bare ``Transformer``'s ``forward``): each calls ``seen(its caller's frame, "file:its name")`` first."""
    import functools  # noqa: PLC0415 - a script's helper
    import importlib  # noqa: PLC0415

    def wrapped(fn):
        @functools.wraps(fn)
        def call(*args, **kwargs):
            seen(sys._getframe(1), f"{fn.__module__.split('.', 1)[1].replace('.', '/')}.py:{fn.__qualname__}")
            return fn(*args, **kwargs)
        return call

    for module_name, names in FORWARDS.items():
        module = importlib.import_module(f"lantern_studio.{module_name}")
        for cls in vars(module).values():
            if isinstance(cls, type) and cls.__module__ == module.__name__:
                for name in names:
                    if name in vars(cls):
                        setattr(cls, name, wrapped(vars(cls)[name]))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--handoff", required=True, help="qualified name of the function that hands the job over")
    a = p.parse_args(argv)
    data = Path(tempfile.mkdtemp(prefix="hops-"))
    os.environ["LANTERN_STUDIO_DATA"] = str(data / "data")
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is fetched: the tiny model is local
    from PySide6.QtWidgets import QApplication  # noqa: PLC0415

    from lantern_studio.gui import main_window  # noqa: PLC0415
    from lantern_studio.models.tiny import build_tiny_model_dir  # noqa: PLC0415

    from lantern_studio.studio import preferences  # noqa: PLC0415

    preferences.COMPILED_DECODING_DEFAULT = False
    app = QApplication.instance() or QApplication([])
    folder = build_tiny_model_dir(data / "tiny")
    w = main_window.MainWindow(model=str(folder))
    w.show()
    found: dict = {}
    gui = threading.get_ident()

    def wait(ms: int) -> None:  # QTest.qWait keeps the GIL while it sleeps: the engine thread would starve
        end = time.monotonic() + ms / 1000
        while time.monotonic() < end:
            app.processEvents()
            time.sleep(0.005)

    armed = threading.Event()

    def profile(frame, event, _arg):
        if event != "call" or not armed.is_set() or not _ours(frame):
            return
        if threading.get_ident() == gui and "gui" not in found and frame.f_code.co_qualname == a.handoff:
            found["gui"] = _chain(frame)

    deadline = 240_000
    waited = 0
    while w.model_info is None and waited < deadline:  # the model loads in the worker thread
        wait(50)
        waited += 50
    if w.model_info is None:
        print(json.dumps({"error": "the model did not load", "status": w.status_model.text()}))
        return 1
    # the thread that decodes is a QThread: a profiler set there does not outlive one call into Python, so the
    # forward is caught by wrapping it instead (it records its caller's stack)
    _wrap_forwards(lambda frame, callee: found.setdefault("engine", _chain(frame) + [callee])
                   if armed.is_set() else None)
    sys.setprofile(profile)
    armed.set()
    w.controls.set_prompt("a red heart")
    w.controls.generate_button.click()
    waited = 0
    while "engine" not in found and waited < deadline:
        wait(20)
        waited += 20
    sys.setprofile(None)
    w.close()
    app.processEvents()
    gui_chain, engine_chain = found.get("gui", []), found.get("engine", [])
    chain = gui_chain + engine_chain
    files = sorted({c.split(":", 1)[0] for c in chain})
    print(json.dumps({"gui": gui_chain, "engine": engine_chain, "hops": len(chain), "files": len(files),
                      "file_list": files}, indent=1))
    return 0 if gui_chain and engine_chain else 1


if __name__ == "__main__":
    sys.exit(main())
