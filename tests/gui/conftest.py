import gc

import pytest


@pytest.fixture(autouse=True)
def _collect_qt_garbage_on_the_gui_thread():
    """A closed test window leaves reference cycles holding Qt wrappers (signal lambdas, the window and its
    panels). Collected later, the garbage collector may run on a worker thread of the next test (a model load)
    and destroy Qt objects there, which crashed the suite once (segfault in `Garbage-collecting` on the worker).
    Collect them here, on the GUI thread, after every test."""
    yield
    gc.collect()
