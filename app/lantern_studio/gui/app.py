"""Start the studio: ``main(model)`` for the CLI, ``create_main_window`` for tests."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from typing import Optional

import qasync
from PySide6.QtCore import QTimer
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication

from . import aio, theme
from .about_dialog import app_icon
from .storage import APPLICATION, ORGANISATION, ensure_app_names


def application(argv=None) -> QApplication:
    app = QApplication.instance()
    if app is None:
        QApplication.setOrganizationName(ORGANISATION)
        QApplication.setApplicationName(APPLICATION)
        QApplication.setApplicationDisplayName("Lantern Studio")
        app = QApplication(list(argv) if argv is not None else sys.argv[:1])
    ensure_app_names()
    theme.apply(app)
    QGuiApplication.setDesktopFileName("io.github.lanternstudio.LanternStudio")
    icon = app_icon()
    if icon is not None and not icon.isNull():
        app.setWindowIcon(icon)
    return app


def create_main_window(model: Optional[str] = None):
    """The studio window (not shown yet); needs / creates the QApplication."""
    application()
    # here, not at the top: the window brings the models and torch, which application() alone does not need
    from .main_window import MainWindow  # noqa: PLC0415 - start-up time: the window brings the models and torch

    return MainWindow(model=model)


def _quit_on_signals(app: QApplication) -> None:
    """Ctrl+C / SIGTERM in the terminal close the studio cleanly (preferences saved, worker stopped)."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            signal.signal(sig, lambda *_: app.quit())
        except (ValueError, OSError):  # not the main thread, or not supported here
            return
    timer = QTimer(app)
    timer.timeout.connect(lambda: None)  # let the interpreter run its signal handlers now and then
    timer.start(250)


def main(model: Optional[str] = None) -> int:
    """The studio on a qasync event loop: asyncio coroutines (downloads, hash checks,
    thumbnails; see aio.py) and Qt events share the one GUI thread."""
    app = application()
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    aio.install(loop)
    window = create_main_window(model)
    window.show()
    app.aboutToQuit.connect(window.shutdown)
    _quit_on_signals(app)
    try:
        with loop:
            code = int(loop.run_forever() or 0)
    finally:
        aio.shutdown()
    # Preferences and history are saved and closed (window.shutdown). End the process here rather than let the
    # interpreter wind down: a model load still running cannot be joined, and finalising torch's object graph
    # took 1–2 s after every close (measured: SIGTERM 7.5 s after start, 1.6 s to exit, all of it in the
    # garbage collector).
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
