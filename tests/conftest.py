import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
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
