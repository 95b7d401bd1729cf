import os
import sys
from pathlib import Path

import pytest
import torch

from support.hub import HubServer, tiny_entries, tiny_files

sys.path.insert(0, str(Path(__file__).parent))
# GUI tests draw offscreen; an empty value (QT_QPA_PLATFORM= …) would make Qt look for a display and abort
if not os.environ.get("QT_QPA_PLATFORM"):
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """Tiny models decode fastest on one thread, and a busy 2-core machine
    makes torch's spinning thread pool 10-250x slower; tests pin one thread."""
    import torch

    prev = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(prev)


@pytest.fixture(autouse=True)
def _isolated_dirs(tmp_path_factory, monkeypatch):
    """Every test gets its own cache and data folders: nothing touches the user's."""
    root = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("LANTERN_STUDIO_CACHE", str(root / "cache"))
    monkeypatch.setenv("LANTERN_STUDIO_DATA", str(root / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(root / "config"))
    yield


# --------------------------------------------------------------------------- the fake Hub (support/hub.py)


@pytest.fixture(autouse=True, scope="module")
def one_torch_thread():
    """Tiny models: one intra-op thread (with busy cores, more threads make tiny ops ~100× slower)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture
def hub_env(tmp_path, monkeypatch):
    """A private HF cache in tmp_path, online mode, no token, HF_ENDPOINT unset (tests set it)."""
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN",
                "HF_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    return tmp_path / "hf" / "hub"


@pytest.fixture
def hub_server(hub_env, monkeypatch):
    """The local hub with both tiny models, HF_ENDPOINT pointing at it."""
    server = HubServer()
    for (repo, name), data in tiny_files().items():
        server.add(repo, name, data)
    server.start()
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    yield server
    server.stop()


@pytest.fixture
def tiny_catalogue():
    """The tiny entries, registered in the catalogue for one test."""
    from lantern_studio.models.catalogue import temporary_entry

    c2i, t2i = tiny_entries(tiny_files())
    with temporary_entry(c2i), temporary_entry(t2i):
        yield c2i, t2i
