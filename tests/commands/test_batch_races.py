"""Two writers of one ``batch --out`` folder (commands/batch_plan.py ``commit``, ``remove_leftovers``,
``Manifest.locked``): a second run's start-up never deletes the first one's temporary PNG mid-write (only
stale ones: a dead process's, an older version's, one untouched for an hour), and two writers of one image
leave its manifest line in step with the bytes renamed into place last, checked in a loop of two writers."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
import time

import pytest

from lantern_studio.commands import batch_plan
from lantern_studio.commands.batch_plan import (IMAGES, STALE_TEMP_SECONDS, Manifest, WorkItem, commit,
                                                remove_leftovers, temp_owner)

ITEM = WorkItem(key="k" * 64, prompt="red heart", seed=0, settings={"seed": 0}, file=f"{IMAGES}/red-heart-seed0.png")


def _png(tag: str) -> bytes:
    return b"\x89PNG\r\n\x1a\n" + tag.encode() * 64


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _in_step(out, item=ITEM) -> bool:
    """The manifest's (last) line for the item describes the file on disk."""
    entry = Manifest(out).read().entries[item.key]
    data = (out / item.file).read_bytes()
    return entry["sha256"] == _sha(data) and entry["bytes"] == len(data)


def test_a_second_batch_starting_up_leaves_a_write_in_progress_alone(tmp_path, monkeypatch):
    """The second run's start-up clean-up, run while the first one's PNG is written (between its temporary
    file and the rename): the write finishes, its line matches. (Before: the temporary file was deleted and
    the first run ended with 'writing into … failed'.)"""
    out = tmp_path / "out"
    real = batch_plan.atomic_write
    removed = []

    def second_batch_starts_mid_write(path, write, **kw):
        def write_then_clean(tmp):
            write(tmp)
            removed.append(remove_leftovers(out))
        return real(path, write_then_clean, **kw)

    monkeypatch.setattr(batch_plan, "atomic_write", second_batch_starts_mid_write)
    commit(out, Manifest(out), ITEM, _png("a"), {"worker": "first"})
    assert removed == [0]
    assert (out / ITEM.file).read_bytes() == _png("a") and _in_step(out)
    assert not [p for p in (out / IMAGES).iterdir() if p.name.startswith(".")]


def test_only_stale_temporary_files_are_cleaned(tmp_path):
    images = tmp_path / IMAGES
    images.mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)  # a process of this host that has ended
    host = temp_owner().split("-")[0]
    names = {
        f".a.png.{temp_owner()}.abc123.tmp.png": True,  # this live process's write in progress: kept
        f".b.png.{host}-{dead_pid}.abc123.tmp.png": False,  # a dead process's: removed
        ".c.png.abc123.tmp.png": False,  # an older version's name (no owner to ask): removed
        ".d.png.0badf00d-1.abc123.tmp.png": True,  # another host's, fresh: kept
        ".e.png.0badf00d-1.abc123.tmp.png": False,  # another host's, untouched for over an hour: removed
        "f.png": True,  # a finished image
    }
    for name in names:
        (images / name).write_bytes(b"x")
    old = time.time() - STALE_TEMP_SECONDS - 60
    os.utime(images / ".e.png.0badf00d-1.abc123.tmp.png", (old, old))
    assert remove_leftovers(tmp_path) == sum(not keep for keep in names.values())
    assert sorted(p.name for p in images.iterdir()) == sorted(n for n, keep in names.items() if keep)


def test_two_writers_of_one_image_leave_its_line_in_step_with_its_bytes(tmp_path):
    """Two writers commit the same image with different bytes (a CPU and a GPU worker, say), round after
    round, with a third starting up (clean-up) meanwhile; after every round the manifest's last line for
    it hashes to the file on disk. Separate descriptors of the folder's lock exclude each other in one
    process as across processes (flock), so threads stand for two ``batch`` runs here."""
    out = tmp_path / "out"
    rounds = 60
    start, end = threading.Barrier(3), threading.Barrier(3)
    errors: list = []

    def writer(tag: str) -> None:
        manifest = Manifest(out)  # each writer its own, as each run has
        try:
            for r in range(rounds):
                start.wait()
                commit(out, manifest, ITEM, _png(f"{tag}{r}"), {"worker": tag})
                remove_leftovers(out)
                end.wait()
        except BaseException as e:  # noqa: BLE001 - the main thread reports it
            errors.append(e)
            start.abort()
            end.abort()

    threads = [threading.Thread(target=writer, args=(t,)) for t in ("a", "b")]
    for t in threads:
        t.start()
    out_of_step = 0
    try:
        for _ in range(rounds):
            start.wait()
            end.wait()
            out_of_step += not _in_step(out)
    except threading.BrokenBarrierError:
        pass
    for t in threads:
        t.join()
    assert errors == []
    assert out_of_step == 0
    assert Manifest(out).compact_latest().superseded == 2 * rounds - 1
    assert _in_step(out) and len(Manifest(out).read().entries) == 1


def test_a_compaction_while_another_writer_appends_loses_no_line(tmp_path):
    """The end of one run compacts the manifest while another run appends: every image keeps its line."""
    out = tmp_path / "out"
    n = 80
    items = [WorkItem(key=f"{i:064x}", prompt="p", seed=i, settings={"seed": i}, file=f"{IMAGES}/p-{i}.png")
             for i in range(n)]
    done = threading.Event()

    def appender():
        manifest = Manifest(out)
        for it in items:
            commit(out, manifest, it, _png(str(it.seed)), {})
            commit(out, manifest, it, _png(str(it.seed)), {})  # superseded lines: something to compact
        done.set()

    t = threading.Thread(target=appender)
    t.start()
    compactions = 0
    while not done.is_set():
        Manifest(out).compact_latest()
        compactions += 1
    t.join()
    entries = Manifest(out).read().entries
    assert compactions > 1 and sorted(entries) == sorted(it.key for it in items)
    for it in items:
        assert _in_step(out, it)


@pytest.mark.skipif(batch_plan.fcntl is None, reason="no flock on this platform")
def test_the_lock_excludes_another_process(tmp_path):
    """The folder's lock held here keeps another process's commit waiting until it is released."""
    out = tmp_path / "out"
    code = ("import sys, time\nfrom lantern_studio.commands.batch_plan import Manifest\nm = Manifest(sys.argv[1])\n"
            "print('trying', flush=True)\nt = time.time()\nwith m.locked():\n    print(time.time() - t)\n")
    with Manifest(out).locked():
        proc = subprocess.Popen([sys.executable, "-c", code, str(out)], stdout=subprocess.PIPE, text=True,
                                env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
        assert proc.stdout.readline().strip() == "trying"
        time.sleep(1.0)
        assert proc.poll() is None  # still waiting for the lock
    waited = float(proc.communicate(timeout=60)[0])
    assert waited >= 0.9
