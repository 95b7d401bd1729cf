"""A damaged history never stops the studio: bad databases are moved aside (and kept),
bad rows skipped, temp files of killed writes swept, orphan PNGs re-linked."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

import numpy as np
import pytest

from lantern_studio.export import save_png
from lantern_studio.studio.history_store import HistoryStore

IMG = np.full((64, 64, 3), 200, np.uint8)


def _record(prompt="red heart"):
    return {"prompt": prompt, "model": "tiny", "settings": {"seed": 1}, "stats": {"tokens": 16}}


def _filled(folder: Path, n=3) -> None:
    store = HistoryStore(folder)
    for i in range(n):
        store.add(IMG, _record(f"prompt {i}"))
    store.close()


def _age(folder: Path, seconds: float = 3600) -> None:
    """Make the history's PNGs look written ``seconds`` ago: the sweep leaves a younger PNG without a row
    alone (another studio may be between writing it and adding its row)."""
    old = time.time() - seconds
    for png in (folder / "images").glob("*.png"):
        if not png.name.startswith("."):  # temporary files keep their own times
            os.utime(png, (old, old))


def _kept(folder: Path) -> list:
    return sorted(p.name for p in folder.glob("history.sqlite.corrupt-*") if not p.name.endswith(("-wal", "-shm")))


@pytest.mark.parametrize("damage", ["random bytes", "garbage pages", "wrong schema"])
def test_damaged_database_is_moved_aside_and_a_fresh_one_starts(tmp_path, damage):
    _filled(tmp_path)
    db = tmp_path / "history.sqlite"
    if damage == "random bytes":
        db.write_bytes(os.urandom(8192))
    elif damage == "garbage pages":
        data = bytearray(db.read_bytes())
        data[100:4096] = os.urandom(4096 - 100)  # the header survives, the schema page does not
        db.write_bytes(bytes(data))
    else:
        db.unlink()
        con = sqlite3.connect(str(db))
        con.execute("CREATE TABLE entries (id INTEGER PRIMARY KEY, foo TEXT)")
        con.commit()
        con.close()
    before = db.read_bytes()
    _age(tmp_path)
    store = HistoryStore(tmp_path)
    kept = _kept(tmp_path)
    assert len(kept) == 1 and (tmp_path / kept[0]).read_bytes() == before  # the bad file is kept, unchanged
    assert any("moved aside" in n for n in store.notices)
    # The images are still there and come back into the fresh history from their embedded records.
    assert sorted(e.prompt for e in store.entries()) == ["prompt 0", "prompt 1", "prompt 2"]
    store.add(IMG, _record("after"))
    assert store.count() == 4
    store.close()


def test_one_bad_row_is_skipped_not_fatal(tmp_path):
    _filled(tmp_path)
    con = sqlite3.connect(str(tmp_path / "history.sqlite"))
    con.execute("UPDATE entries SET record = '{not json' WHERE prompt = 'prompt 1'")
    con.commit()
    con.close()
    store = HistoryStore(tmp_path)
    assert [e.prompt for e in store.entries()] == ["prompt 2", "prompt 0"]
    assert store.skipped_rows == 1 and not _kept(tmp_path)
    store.close()


def test_stale_temps_swept_and_orphans_relinked_never_deleted(tmp_path):
    _filled(tmp_path, 1)
    images = tmp_path / "images"
    stale = images / ".export-abc.png"
    stale.write_bytes(b"")
    old = time.time() - 3600
    os.utime(stale, (old, old))
    fresh = images / ".export-new.png"  # a write in flight (another studio): left alone
    fresh.write_bytes(b"")
    orphan = save_png(images / "20260101-000000-orphan.png", IMG, _record("orphan"))  # PNG written, row not
    foreign = images / "holiday.png"
    from PIL import Image

    Image.fromarray(IMG).save(foreign)  # not a studio image: listed, kept
    young = save_png(images / "20260101-000001-young.png", IMG, _record("young"))  # another writer's, row on its way
    _age(tmp_path)
    now = time.time()
    os.utime(young, (now, now))
    store = HistoryStore(tmp_path)
    assert not stale.exists() and fresh.exists() and foreign.exists() and orphan.exists() and young.exists()
    assert sorted(e.prompt for e in store.entries()) == ["orphan", "prompt 0"]  # not "young", not yet
    assert any("added back" in n for n in store.notices) and any("holiday.png" in n for n in store.notices)
    store.close()
    young.unlink()
    again = HistoryStore(tmp_path)  # nothing left to repair: no duplicate rows
    assert again.count() == 2 and not any("added back" in n for n in again.notices)
    again.close()


def test_studio_starts_with_a_corrupt_history_and_says_so(qtbot, tmp_path):
    pytest.importorskip("pytestqt")
    from lantern_studio.gui.app import create_main_window
    from lantern_studio.gui.storage import app_data_dir
    from lantern_studio.models.tiny import build_tiny_model_dir

    folder = build_tiny_model_dir(tmp_path / "tiny", grid=4)
    data = app_data_dir()
    data.mkdir(parents=True, exist_ok=True)
    (data / "history.sqlite").write_bytes(b"this is not a database" * 100)
    w = create_main_window(str(folder))
    qtbot.addWidget(w)
    w.show()
    qtbot.waitUntil(lambda: w.model_info is not None, timeout=30000)
    assert "moved aside" in w.banner.text()
    assert _kept(data)


WRITER = """
import sys, numpy as np
from lantern_studio.studio.history_store import HistoryStore
store = HistoryStore(sys.argv[1])
img = np.random.default_rng(0).integers(0, 255, (256, 256, 3), dtype=np.uint8)
print("ready", flush=True)
i = 0
while True:
    store.add(img, {"prompt": f"p{i}", "model": "tiny", "settings": {}, "stats": {}})
    i += 1
"""


@pytest.mark.slow
def test_kill_9_during_history_writes_loses_nothing(tmp_path):
    """30 writers killed with SIGKILL at random moments: afterwards the history opens,
    no temp file is left once stale, and every PNG has its row."""
    import random
    import signal
    import subprocess
    import sys

    import lantern_studio.studio.history_store as hs

    rng = random.Random(0)
    for run in range(30):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path)], stdout=subprocess.PIPE)
        assert proc.stdout.readline().strip() == b"ready"
        time.sleep(rng.uniform(0.05, 0.4))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    old = time.time() - 3600
    for tmp in (tmp_path / "images").glob(".export-*"):
        os.utime(tmp, (old, old))  # as if the studio restarted much later
    store = HistoryStore(tmp_path)
    pngs = sorted(p.name for p in (tmp_path / "images").glob("*.png"))
    rows = sorted(e.path.name for e in store.entries(limit=100000))
    assert pngs == rows and len(rows) > 30
    assert not list((tmp_path / "images").glob(".export-*"))
    assert not _kept(tmp_path) and store.skipped_rows == 0
    store.close()
    assert hs.STALE_TEMP_SECONDS > 0
