"""A hub that misbehaves, and a disk that does (issue 43, "Hub downloads"): the fake hub on 127.0.0.1
(support/hub.py) sends hostile headers, loops, stalls, drips and drops; the cache is a file, read-only
or full. Each case: refused in one line naming what was wrong, nothing written outside the cache,
no other model's file touched, cancel within a second."""

from __future__ import annotations

import errno
import hashlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from lantern_studio.cli import main
from lantern_studio.models import catalogue, hub, hub_cache
from lantern_studio.models.hub import (CacheUnusable, ConnectionDropped, DownloadCancelled, HubFile, HubRefused,
                                       HubTimeout, IntegrityError, NotEnoughSpace)
from support.hub import C2I_REPO, tiny_files

REPO_ROOT = Path(__file__).resolve().parents[2]


def _file(name, repo=C2I_REPO, pinned=True):
    data = tiny_files()[(repo, name)]
    return HubFile(repo, name, size=len(data), size_exact=True,
                   sha256=hashlib.sha256(data).hexdigest() if pinned else None)


def _everything(root: Path, but: Path) -> set:
    """Every path under ``root`` except those under ``but`` (the cache)."""
    return {p for p in root.rglob("*") if not hub_cache.inside(p, but)}


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


# --------------------------------------------------------------------------- 1. where a file goes


@pytest.mark.parametrize("header, value", [
    ("ETag", '"../../../../outside/etag-escape.bin"'),
    ("ETag", '"/tmp/absolute-etag.bin"'),
    ("X-Linked-Etag", "../../../../outside/linked.bin"),
    ("X-Repo-Commit", "../../../../outside/commit"),
    ("X-Repo-Commit", "/etc"),
    ("X-Linked-Size", "-300"),
    ("X-Linked-Size", "1e9"),
])
@pytest.mark.parametrize("pinned", [True, False])
def test_a_header_that_names_a_path_decides_nothing(hub_server, hub_env, tmp_path, header, value, pinned):
    f = _file("vq_tiny.pt", pinned=pinned)
    hub_server.headers[(f.repo_id, f.filename)] = {header: value}
    before = _everything(tmp_path, hub_env)
    with pytest.raises(HubRefused) as err:
        hub.download_files([f])
    header_named = {"X-Linked-Etag": "ETag", "X-Linked-Size": "size"}.get(header, header)
    assert header_named in str(err.value) and "refused" in str(err.value) and "\n" not in str(err.value)
    assert _everything(tmp_path, hub_env) == before  # not a byte, not a .lock outside the cache
    assert not (tmp_path / "outside").exists()
    assert hub.cached_path(f) is None and hub_server.gets() == []  # refused on the HEAD: nothing fetched


def test_the_cli_refuses_a_path_etag_in_one_line(hub_server, hub_env, tiny_catalogue, tmp_path, capsys):
    c2i, _ = tiny_catalogue
    hub_server.headers[(c2i.vq.repo_id, c2i.vq.filename)] = {"ETag": '"../../../../outside/etag-escape.bin"'}
    assert main(["models", "download", c2i.name, "--yes"]) == 1
    line = _one_error_line(capsys)
    assert "vq_tiny.pt" in line and "ETag" in line and "not a content hash" in line
    assert not (tmp_path / "outside").exists()
    assert [p for p in tmp_path.rglob("*.lock") if not hub_cache.inside(p, hub_env)] == []


def test_a_link_planted_in_the_cache_is_not_followed(hub_server, hub_env, tmp_path):
    """A blobs folder that is a link to somewhere else: refused by name, nothing written there."""
    f = _file("vq_tiny.pt")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    repo = hub_cache.repo_dir(hub_env, f.repo_id)
    repo.mkdir(parents=True)
    (repo / "blobs").symlink_to(elsewhere)
    with pytest.raises(HubRefused, match="outside the Hugging Face cache"):
        hub.download_files([f])
    assert list(elsewhere.iterdir()) == []


# --------------------------------------------------------------------------- 2. checked against the pin


def test_a_non_hash_etag_with_wrong_bytes_is_refused(hub_server, hub_env):
    for pinned in (True, False):
        f = _file("vq_tiny.pt", pinned=pinned)
        hub_server.headers[(f.repo_id, f.filename)] = {"ETag": 'W/"abc"'}
        hub_server.faults[(f.repo_id, f.filename)] = "corrupt"
        with pytest.raises(HubRefused, match="ETag 'W/\"abc\"' is not a content hash"):
            hub.download_files([f])
        assert hub.cached_path(f) is None


def test_a_file_other_than_the_pinned_one_is_refused_before_a_byte(hub_server, hub_env):
    """The server is consistent with itself (its ETag is the hash of what it sends) but that is not the
    file the catalogue pins: refused on the HEAD."""
    f = _file("vq_tiny.pt")
    other = tiny_files()[(C2I_REPO, "c2i_tiny.pt")]
    hub_server.files[(f.repo_id, f.filename)] = other[: f.size] + b"\0" * max(0, f.size - len(other))
    hub_server.headers[(f.repo_id, f.filename)] = {
        "ETag": f'"{hashlib.sha256(hub_server.files[(f.repo_id, f.filename)]).hexdigest()}"'}
    with pytest.raises(HubRefused, match="the catalogue pins"):
        hub.download_files([f])
    assert hub_server.gets() == []


def test_wrong_bytes_under_the_pinned_etag_are_not_kept(hub_server, hub_env):
    f = _file("vq_tiny.pt")
    hub_server.faults[(f.repo_id, f.filename)] = "corrupt"
    with pytest.raises(IntegrityError, match="sha256"):
        hub.download_files([f])
    assert hub.cached_path(f) is None
    assert [p for p in hub_env.rglob("*") if p.is_file() and "blobs" in p.parts] == []


# --------------------------------------------------------------------------- 3. another model's files


def _install_b(hub_env):
    b = _file("vq_tiny.pt")
    path = hub.download_files([b])[b]
    blob = Path(os.path.realpath(path))
    return b, blob, blob.read_bytes(), blob.stat().st_ino


@pytest.mark.parametrize("how", ["second HEAD", "every answer, unpinned", "every answer, pinned"])
def test_a_failed_download_never_touches_another_models_blob(hub_server, hub_env, how):
    b, blob, data, inode = _install_b(hub_env)
    pinned = how != "every answer, unpinned"
    lf = _file("c2i_tiny.pt", pinned=pinned)
    names_b = {"ETag": f'"{b.sha256}"'}
    if how == "second HEAD":
        hub_server.later_head_headers[(lf.repo_id, lf.filename)] = names_b
    else:
        hub_server.headers[(lf.repo_id, lf.filename)] = names_b
    try:
        hub.download_files([lf])
    except (HubRefused, IntegrityError) as e:
        assert how != "second HEAD" and "c2i_tiny.pt" in str(e)
    else:
        assert how == "second HEAD"  # one HEAD per file: the second is never asked
        assert hub.verify_cached([lf]) == []
    assert blob.read_bytes() == data and blob.stat().st_ino == inode  # B's blob untouched
    assert hub.cached_path(b) is not None and hub.verify_cached([b]) == []


# --------------------------------------------------------------------------- 4. one line each


def test_one_line_for_each_hostile_server(hub_server, hub_env, tiny_catalogue, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_DOWNLOAD_TIMEOUT", "1")
    c2i, _ = tiny_catalogue
    key = (c2i.vq.repo_id, c2i.vq.filename)
    cases = [
        ("fault", "redirect_loop", "redirect loop"),
        ("fault", "redirect_loop_get", "redirect loop"),
        ("headers", {"X-Repo-Commit": "../../../../outside"}, "X-Repo-Commit '../../../../outside' is not a commit"),
        ("fault", "stall", "sent nothing for 1 s (timed out)"),
        ("fault", "stall_headers", "sent nothing for 1 s (timed out)"),
        ("fault", "drop_always", "connection to the model hub (http://127.0.0.1"),
    ]
    for kind, what, said in cases:
        hub_server.faults.pop(key, None)
        hub_server.headers.pop(key, None)
        getattr(hub_server, kind + "s" if kind == "fault" else kind)[key] = what
        t0 = time.monotonic()
        assert main(["models", "download", c2i.name, "--yes"]) == 1, what
        line = _one_error_line(capsys)
        assert said in line, (what, line)
        assert "could not reach" not in line or "drop" not in what
        assert time.monotonic() - t0 < 10, what
    assert "dropped" in line


def test_a_dropped_connection_is_named_as_such(hub_server, hub_env):
    f = _file("vq_tiny.pt")
    hub_server.faults[(f.repo_id, f.filename)] = "drop_always"
    with pytest.raises(ConnectionDropped) as err:
        hub.download_files([f])
    assert "dropped" in str(err.value) and "could not reach" not in str(err.value)


def test_a_stall_is_a_timeout_and_its_bytes_are_kept(hub_server, hub_env, monkeypatch):
    monkeypatch.setenv("HF_HUB_DOWNLOAD_TIMEOUT", "1")
    f = _file("vq_tiny.pt")
    hub_server.faults[(f.repo_id, f.filename)] = "stall"
    t0 = time.monotonic()
    with pytest.raises(HubTimeout, match=r"sent nothing for 1 s \(timed out\).*bytes kept"):
        hub.download_files([f])
    assert time.monotonic() - t0 < 8  # a few silences of 1 s, resumed in between, then given up
    assert 0 < next(hub_env.rglob("*.incomplete")).stat().st_size < f.size


def test_a_proxy_setting_that_cannot_be_used(hub_server, hub_env, tiny_catalogue, monkeypatch, capsys):
    c2i, _ = tiny_catalogue
    monkeypatch.setenv("ALL_PROXY", "ftp://127.0.0.1:9")  # not a proxy scheme httpx speaks
    monkeypatch.setenv("NO_PROXY", "")
    assert main(["models", "download", c2i.name, "--yes"]) == 1
    assert "proxy" in _one_error_line(capsys)


def test_hf_home_that_is_a_file(hub_server, tiny_catalogue, tmp_path, monkeypatch, capsys):
    c2i, _ = tiny_catalogue
    home = tmp_path / "not-a-folder"
    home.write_text("a file")
    monkeypatch.setenv("HF_HOME", str(home))
    with pytest.raises(CacheUnusable, match="is a file, not a folder"):
        hub.download_files([_file("vq_tiny.pt")])
    assert main(["models", "download", c2i.name, "--yes"]) == 1
    assert "is a file, not a folder" in _one_error_line(capsys)
    assert home.read_text() == "a file"


def test_a_read_only_cache(hub_server, hub_env, tiny_catalogue, monkeypatch, capsys):
    """Root ignores file modes, so the read-only disk is the file system's answer, mocked: EROFS for
    anything created inside the cache."""
    c2i, _ = tiny_catalogue
    real_mkdir, real_open = os.mkdir, os.open

    def mkdir(path, *a, **k):
        if hub_cache.inside(path, hub_env) or str(path).startswith(str(hub_env)):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real_mkdir(path, *a, **k)

    def open_(path, flags, *a, **k):
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT) and str(path).startswith(str(hub_env)):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real_open(path, flags, *a, **k)

    monkeypatch.setattr(os, "mkdir", mkdir)
    monkeypatch.setattr(os, "open", open_)
    assert main(["models", "download", c2i.name, "--yes"]) == 1
    line = _one_error_line(capsys)
    assert "read-only" in line and str(hub_env) in line


def test_the_disk_filling_up_during_the_transfer(hub_server, hub_env, tiny_catalogue, monkeypatch, capsys):
    c2i, _ = tiny_catalogue
    real = hub_cache.open_partial

    class Full:
        def __init__(self, fh):
            self.fh, self.written = fh, 0

        def write(self, data):
            if self.written + len(data) > 100_000:
                raise OSError(errno.ENOSPC, "No space left on device")
            self.written += len(data)
            return self.fh.write(data)

        def __getattr__(self, name):
            return getattr(self.fh, name)

    def open_partial(path):
        fh, have = real(path)
        return Full(fh), have

    monkeypatch.setattr(hub_cache, "open_partial", open_partial)
    assert main(["models", "download", c2i.name, "--yes"]) == 1
    line = _one_error_line(capsys)
    assert "filled up" in line and str(hub_env) in line
    with pytest.raises(NotEnoughSpace):
        hub.download_files([c2i.gpt])
    monkeypatch.setattr(hub_cache, "open_partial", real)
    assert main(["models", "download", c2i.name, "--yes"]) == 0  # space freed: it resumes and completes
    assert hub.verify_cached(c2i.files) == []


# --------------------------------------------------------------------------- 5. cancel within a second


def _cancel_during(hub_server, fault, wait_for_bytes):
    f = _file("vq_tiny.pt")
    hub_server.faults[(f.repo_id, f.filename)] = fault
    stop, got, out = threading.Event(), threading.Event(), {}

    def progress(p):
        if p.file_bytes:
            got.set()

    def run():
        try:
            hub.download_files([f], progress=progress, cancel=stop)
        except BaseException as e:  # noqa: BLE001 - handed to the test thread
            out["error"] = e
        out["end"] = time.monotonic()

    t = threading.Thread(target=run)
    t.start()
    if wait_for_bytes:
        assert got.wait(10), "no bytes arrived"
    else:
        time.sleep(0.5)
    t0 = time.monotonic()
    stop.set()
    t.join(5)
    assert not t.is_alive()
    assert isinstance(out.get("error"), DownloadCancelled), out
    return out["end"] - t0, f


@pytest.mark.parametrize("fault, wait_for_bytes", [("stall", True), ("drip", True), ("stall_headers", False)])
def test_cancel_within_a_second_whatever_the_server_does(hub_server, hub_env, fault, wait_for_bytes):
    took, f = _cancel_during(hub_server, fault, wait_for_bytes)
    assert took < 1.0, f"cancel took {took:.2f} s ({fault})"
    assert hub.cached_path(f) is None


def test_a_cancelled_stall_resumes_from_its_bytes(hub_server, hub_env):
    _, f = _cancel_during(hub_server, "stall", True)
    partial = next(hub_env.rglob("*.incomplete"))
    kept = partial.stat().st_size
    assert 0 < kept < f.size
    del hub_server.faults[(f.repo_id, f.filename)]
    hub_server.log.clear()
    path = hub.download_files([f])[f]
    assert Path(path).read_bytes() == tiny_files()[(f.repo_id, f.filename)]
    assert [r for (_, _, r) in hub_server.gets()] == [f"bytes={kept}-"]
    assert list(hub_env.rglob("*.incomplete")) == []


def test_many_downloaders_of_one_file_take_turns(hub_server, hub_env):
    """Threads (a dialog and a CLI, or two windows) fetching the same files into one cache: the blob's
    lock makes them take turns; each gets the checked file, nothing is left half-written."""
    files = [_file("vq_tiny.pt"), _file("c2i_tiny.pt"), _file("config.json", repo="test-org/tiny-t5")]
    for _ in range(5):
        errors, paths = [], []

        def run():
            try:
                paths.append(hub.download_files(files))
            except Exception as e:  # noqa: BLE001 - reported by the test thread
                errors.append(e)

        threads = [threading.Thread(target=run) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert errors == [] and len(paths) == 4 and all(p == paths[0] for p in paths)
        assert hub.verify_cached(files) == []
        assert list(hub_env.rglob("*.incomplete")) == []
        assert sorted(p.name for p in hub_env.rglob("blobs/*")) == sorted(f.sha256 for f in files)
        assert hub.remove_files(files) > 0


def test_an_empty_file_downloads(hub_server, hub_env):
    hub_server.add(C2I_REPO, "empty.txt", b"")
    f = HubFile(C2I_REPO, "empty.txt", size=0, size_exact=True, sha256=hashlib.sha256(b"").hexdigest())
    assert Path(hub.download_files([f])[f]).read_bytes() == b""


# --------------------------------------------------------------------------- 6. killed downloads


_CHILD = """
import sys
from lantern_studio.models import hub
f = hub.HubFile({repo!r}, {name!r}, size={size}, size_exact=True, sha256={sha!r})
hub.download_files([f])
"""


def test_a_killed_download_resumes_from_its_bytes_and_old_leftovers_go(hub_server, hub_env):
    f = _file("vq_tiny.pt")
    hub_server.faults[(f.repo_id, f.filename)] = "drip"
    blobs = hub_cache.repo_dir(hub_env, f.repo_id) / "blobs"
    blobs.mkdir(parents=True)
    orphan = blobs / f"{f.sha256}.0123456789abcdef.incomplete"  # what the hub library left when killed
    orphan.write_bytes(b"x" * 10_000)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "app"), os.environ.get("PYTHONPATH", "")])}
    child = subprocess.Popen([sys.executable, "-c", _CHILD.format(repo=f.repo_id, name=f.filename, size=f.size,
                                                                  sha=f.sha256)], env=env)
    partial = blobs / f"{f.sha256}.incomplete"
    try:
        deadline = time.monotonic() + 60
        while not (partial.is_file() and partial.stat().st_size >= 1024):
            assert time.monotonic() < deadline and child.poll() is None, "the child never started writing"
            time.sleep(0.05)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    kept = partial.stat().st_size
    del hub_server.faults[(f.repo_id, f.filename)]
    hub_server.log.clear()
    path = hub.download_files([f])[f]
    assert Path(path).read_bytes() == tiny_files()[(f.repo_id, f.filename)]
    assert [r for (_, _, r) in hub_server.gets()] == [f"bytes={kept}-"]  # resumed, not from byte 0
    assert list(hub_env.rglob("*.incomplete")) == []  # neither ours nor the old orphan is left


def test_the_module_docstring_promises_what_is_tested():
    doc = " ".join(hub.__doc__.split())
    assert "resumes from its bytes" in doc and "leaves no partial file" not in doc


# --------------------------------------------------------------------------- 7. foreign weights


class _Payload:
    """Unpickling this would create a marker file; weights_only loading must refuse it."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').write('ran')",))


def _payload_bytes(marker) -> bytes:
    import io

    import torch

    buf = io.BytesIO()
    # big enough to pass the size checks that come before reading (the payload itself must be refused)
    torch.save({"model": {"w": torch.zeros(8192)}, "extra": _Payload(marker)}, buf)
    return buf.getvalue()


def _serve_as(hub_server, f: HubFile, data: bytes) -> HubFile:
    hub_server.files[(f.repo_id, f.filename)] = data
    return HubFile(f.repo_id, f.filename, size=len(data), role=f.role, size_exact=True,
                   sha256=hashlib.sha256(data).hexdigest())


def _assert_one_line_refusal(err: Exception, names: str):
    text = str(err)
    assert "\n" not in text and names in text, text
    assert "weights_only=False" not in text and "Weights only load failed" not in text


def test_a_pickle_payload_in_a_hub_vq_is_refused_in_one_line(hub_server, hub_env, tiny_catalogue, tmp_path):
    c2i, _ = tiny_catalogue
    marker = tmp_path / "payload-ran"
    vq = _serve_as(hub_server, c2i.vq, _payload_bytes(marker))
    entry = catalogue.Entry(**{**c2i.__dict__, "name": "tiny-c2i-payload", "vq": vq})
    with catalogue.temporary_entry(entry):
        catalogue.download(entry.name)
        with pytest.raises(catalogue.CheckpointError) as err:
            catalogue.load_entry(entry.name)
    _assert_one_line_refusal(err.value, "vq_tiny.pt")
    assert not marker.exists()


def _t2i_with(hub_server, t2i, replace: dict, drop=()):
    """The tiny t2i entry with some T5 files' bytes replaced (and pinned as served)."""
    files = []
    for f in t2i.text_encoder.files:
        if f.filename in drop:
            continue
        files.append(_serve_as(hub_server, f, replace[f.filename]) if f.filename in replace else f)
    for name, data in replace.items():
        if name not in {f.filename for f in t2i.text_encoder.files}:
            files.append(_serve_as(hub_server, HubFile(t2i.text_encoder.repo_id, name), data))
    enc = catalogue.TextEncoderSpec(**{**t2i.text_encoder.__dict__, "files": tuple(files)})
    catalogue._T5_CACHE.clear()
    return catalogue.Entry(**{**t2i.__dict__, "name": "tiny-t2i-hostile", "text_encoder": enc})


@pytest.mark.parametrize("case", ["garbled safetensors", "payload bin", "garbage config"])
def test_hostile_t5_files_from_the_hub_are_one_line_through_generate(hub_server, hub_env, tiny_catalogue, tmp_path,
                                                                     case, capsys):
    _, t2i = tiny_catalogue
    marker = tmp_path / "payload-ran"
    if case == "garbled safetensors":
        entry, names = _t2i_with(hub_server, t2i, {"model.safetensors": b"\xff" * 16 + os.urandom(4000)}), \
            "model.safetensors"
    elif case == "payload bin":
        entry, names = _t2i_with(hub_server, t2i, {"pytorch_model.bin": _payload_bytes(marker)},
                                 drop=("model.safetensors",)), "pytorch_model.bin"
    else:
        entry, names = _t2i_with(hub_server, t2i, {"config.json": b"{not json"}), "config.json"
    with catalogue.temporary_entry(entry):
        catalogue.download(entry.name)
        out = tmp_path / "out.png"
        code = main(["generate", "a red heart", "--model", entry.name, "--out", str(out), "--quiet",
                     "--device", "cpu"])
    line = _one_error_line(capsys)
    assert code == 2 and not out.exists()
    assert names in line and "weights_only=False" not in line, line
    assert not marker.exists()
    catalogue._T5_CACHE.clear()


# --------------------------------------------------------------------------- 8. the library's chatter


def test_the_hub_librarys_warnings_do_not_reach_the_terminal(hub_server, hub_env, tiny_catalogue, capfd):
    import logging

    c2i, _ = tiny_catalogue
    hub.route_library_logs()
    logging.getLogger("huggingface_hub").warning("chatter from the hub library")
    logging.getLogger("huggingface_hub.file_download").warning("more chatter")
    hub_server.headers[(c2i.vq.repo_id, c2i.vq.filename)] = {"ETag": 'W/"abc"'}
    assert main(["models", "download", c2i.name, "--yes"]) == 1
    assert "chatter" not in _one_error_line(capfd)
