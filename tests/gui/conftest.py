import gc

import pytest

from lantern_studio.models.tiny import build_tiny_model_dir


@pytest.fixture(autouse=True)
def _collect_qt_garbage_on_the_gui_thread():
    """A closed test window leaves reference cycles holding Qt wrappers (signal lambdas, the window and its
    panels). Collected later, the garbage collector may run on a worker thread of the next test (a model load)
    and destroy Qt objects there, which crashed the suite once (segfault in `Garbage-collecting` on the worker).
    Collect them here, on the GUI thread, after every test."""
    yield
    gc.collect()


@pytest.fixture(autouse=True)
def _compiled_decoding_off_unless_asked(request, monkeypatch):
    """Generate ▸ Compiled decoding ships on: every window opened on a fresh home would compile its model's
    decode steps in the background (seconds of CPU each, and a C++ compiler). GUI tests start with it off,
    as a person who unticked it would; a test about the shipped default asks for ``shipped_compiled_default``."""
    if "shipped_compiled_default" not in request.fixturenames:
        from lantern_studio.studio import preferences

        monkeypatch.setattr(preferences, "COMPILED_DECODING_DEFAULT", False)
    yield


@pytest.fixture
def shipped_compiled_default():
    """Generate ▸ Compiled decoding as the studio ships it, for this test (prefs empty: a fresh home)."""
    from lantern_studio.studio import preferences

    return preferences.COMPILED_DECODING_DEFAULT


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny random model folder, built once per module: every GUI test module's ``tiny`` (a module that
    needs another size builds it under its own name, as test_gui.py's ``slow``)."""
    return build_tiny_model_dir(tmp_path_factory.mktemp("models") / "tiny")
