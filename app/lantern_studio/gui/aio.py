"""The studio's asyncio loop (qasync: asyncio running inside Qt's event loop).

Long work the GUI starts that is not decoding — Hub downloads, hash checks,
thumbnail loading — runs as coroutines: they await :func:`in_thread` jobs in a
small executor and report progress through :func:`threadsafe` callbacks, so the
window stays responsive and a Cancel is seen between chunks. Decoding keeps its
own worker thread (gui/worker.py), which owns the model.

``app.main`` runs the window on a qasync loop; when the Qt loop is already
driven by someone else (pytest-qt), :func:`loop` attaches one to it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
from typing import Any, Callable, Coroutine, Optional

import qasync
from PySide6.QtWidgets import QApplication

_loop: Optional[asyncio.AbstractEventLoop] = None
_executor: Optional[concurrent.futures.ThreadPoolExecutor] = None
_tasks: set = set()  # strong references: a task nobody holds could be collected mid-flight


def install(loop: asyncio.AbstractEventLoop) -> None:
    """Use ``loop`` (a qasync.QEventLoop the caller runs) for the studio's coroutines."""
    global _loop
    _loop = loop


def loop() -> asyncio.AbstractEventLoop:
    """The studio's loop; a qasync loop attached to the running Qt loop when none was installed."""
    global _loop
    if _loop is None or _loop.is_closed():
        _loop = qasync.QEventLoop(QApplication.instance(), already_running=True)
    return _loop


def executor() -> concurrent.futures.ThreadPoolExecutor:
    global _executor
    if _executor is None:
        _executor = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="lantern-io")
    return _executor


def start(coro: Coroutine) -> asyncio.Task:
    """Schedule a coroutine on the studio's loop; its exception (if any) is kept on the task."""
    task = asyncio.ensure_future(coro, loop=loop())
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)
    return task


async def in_thread(fn: Callable, *args, **kwargs) -> Any:
    """Run a blocking call in the I/O executor and await its result."""
    return await loop().run_in_executor(executor(), functools.partial(fn, *args, **kwargs))


def threadsafe(callback: Callable) -> Callable:
    """A callable any thread may call: the call runs on the GUI loop."""
    lp = loop()

    def call(*args):
        if not lp.is_closed():
            lp.call_soon_threadsafe(callback, *args)

    return call


def shutdown() -> None:
    """Cancel what still runs (the window is closing) and stop the executor."""
    global _executor
    for task in list(_tasks):
        task.cancel()
    if _executor is not None:
        _executor.shutdown(wait=False, cancel_futures=True)
        _executor = None
