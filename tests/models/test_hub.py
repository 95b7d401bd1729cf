"""Downloads, for real, from a local HTTP server that speaks the hub's file protocol."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import pytest

from lantern_studio.models import hub
from lantern_studio.models.hub import (DownloadCancelled, HubError, HubFile, HubUnavailable, IntegrityError,
                                       NotDownloaded, NotEnoughSpace)
from support.hub import C2I_REPO, free_port, go_offline, tiny_files


def _files(*names, repo=C2I_REPO):
    data = tiny_files()
    return [HubFile(repo, n, size=len(data[(repo, n)]), size_exact=True) for n in names]


def test_download_reports_progress_and_lands_in_the_hf_cache(hub_server, hub_env):
    files = _files("c2i_tiny.pt", "vq_tiny.pt")
    events = []
    paths = hub.download_files(files, progress=events.append)
    total = sum(f.size for f in files)
    for f in files:
        p = paths[f]
        assert Path(p).read_bytes() == tiny_files()[(f.repo_id, f.filename)]
        assert str(hub_env) in str(p) and "models--test-org--tiny-llamagen" in str(p)
        assert hub.cached_path(f) == Path(p)  # found again by branch name ("main"), offline lookup
    assert events, "no progress reported"
    done = [e.bytes_done for e in events]
    assert done == sorted(done) and done[-1] == total and events[-1].bytes_total == total
    assert [e.filename for e in events if e.finished] == ["c2i_tiny.pt", "vq_tiny.pt"]
    assert all(0.0 <= e.fraction <= 1.0 for e in events)
    # already there: nothing fetched again
    n_get = len(hub_server.gets())
    plan = hub.prepare(files)
    assert plan.nothing_to_do and len(plan.cached) == 2
    assert hub.download_files(files) == paths
    assert len(hub_server.gets()) == n_get


def test_dropped_connection_resumes_with_a_range_request(hub_server):
    key = (C2I_REPO, "c2i_tiny.pt")
    hub_server.faults[key] = "drop_once"
    (f,) = _files("c2i_tiny.pt")
    events = []
    paths = hub.download_files([f], progress=events.append)
    assert Path(paths[f]).read_bytes() == tiny_files()[key]
    ranges = [r for (_, _, r) in hub_server.gets("c2i_tiny.pt")]
    assert ranges[0] is None and any(r and r.startswith("bytes=") and r != "bytes=0-" for r in ranges[1:]), ranges
    assert events[-1].bytes_done == f.size  # resumed bytes were not counted twice


def test_truncated_transfer_is_detected_and_not_installed(hub_server):
    hub_server.faults[(C2I_REPO, "vq_tiny.pt")] = "truncate"
    (f,) = _files("vq_tiny.pt")
    with pytest.raises(IntegrityError, match="incomplete"):
        hub.download_files([f])
    assert hub.cached_path(f) is None


def test_corrupted_file_is_detected_by_hash_and_removed(hub_server, hub_env):
    hub_server.faults[(C2I_REPO, "vq_tiny.pt")] = "corrupt"
    (f,) = _files("vq_tiny.pt")
    with pytest.raises(IntegrityError, match="sha256"):
        hub.download_files([f])
    assert hub.cached_path(f) is None
    blobs = list(hub_env.glob("models--*/blobs/*"))
    assert not [b for b in blobs if not b.name.endswith(".lock")], blobs
    # the server is fixed: the next attempt works
    del hub_server.faults[(C2I_REPO, "vq_tiny.pt")]
    assert Path(hub.download_files([f])[f]).read_bytes() == tiny_files()[(C2I_REPO, "vq_tiny.pt")]


def test_offline_mode_uses_the_cache_and_names_what_is_missing(hub_server, monkeypatch):
    have = _files("vq_tiny.pt")
    paths = hub.download_files(have)
    go_offline(monkeypatch)
    hub_server.log.clear()
    assert hub.download_files(have) == paths
    with pytest.raises(NotDownloaded, match="offline") as err:
        hub.download_files(_files("vq_tiny.pt", "c2i_tiny.pt"))
    assert "c2i_tiny.pt" in str(err.value)
    with pytest.raises(hub.HubOffline, match="HF_HUB_OFFLINE"):  # offline is said as such, not "not downloaded"
        hub.check_reachable()
    assert hub_server.log == []  # not a single request
    # local_files_only=True works the same without the environment variable
    monkeypatch.delenv("HF_HUB_OFFLINE")
    with pytest.raises(NotDownloaded):
        hub.download_files(_files("c2i_tiny.pt"), local_files_only=True)


def test_unreachable_hub_gives_a_clear_message(hub_env, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{free_port()}")
    with pytest.raises(HubUnavailable) as err:
        hub.download_files(_files("vq_tiny.pt"))
    msg = str(err.value)
    assert msg.startswith("could not reach the model hub (http://127.0.0.1:")
    assert "check the network or set HF_ENDPOINT; offline mode uses only the local cache" in msg


def test_missing_file_on_the_hub(hub_server):
    with pytest.raises(HubError, match="not found"):
        hub.download_files([HubFile(C2I_REPO, "no_such.pt", size=10)])


def test_free_space_is_checked_before_starting(hub_server, hub_env, monkeypatch):
    import collections

    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(hub.shutil, "disk_usage", lambda p: usage(1000, 990, 10))
    files = _files("c2i_tiny.pt", "vq_tiny.pt")
    with pytest.raises(NotEnoughSpace) as err:
        hub.download_files(files)
    msg = str(err.value)
    assert str(hub_env) in msg and hub.format_size(sum(f.size for f in files)) in msg and "10 B" in msg
    assert hub_server.gets() == []  # sizes came from HEAD requests only


def test_cancel_with_an_event_or_a_callable_and_the_next_download_resumes(hub_server, hub_env):
    files = _files("c2i_tiny.pt", "vq_tiny.pt")
    hub_server.faults[(C2I_REPO, "c2i_tiny.pt")] = "drip"  # a slow server, so a cancel falls mid-file
    stop = threading.Event()
    with pytest.raises(DownloadCancelled):
        hub.download_files(files, progress=lambda p: p.file_bytes > 300 and stop.set(), cancel=stop)
    del hub_server.faults[(C2I_REPO, "c2i_tiny.pt")]
    assert hub.missing(files) == files
    partials = [p for p in hub_env.rglob("*") if p.is_file() and p.name.endswith(".incomplete")]
    assert len(partials) == 1 and 0 < partials[0].stat().st_size < files[0].size  # kept: the next run resumes
    kept = partials[0].stat().st_size
    with pytest.raises(DownloadCancelled):
        hub.download_files(files, cancel=lambda: True)
    assert hub.missing(files) == files
    hub_server.log.clear()
    paths = hub.download_files(files)
    assert Path(paths[files[0]]).read_bytes() == tiny_files()[(C2I_REPO, "c2i_tiny.pt")]
    assert [r for (_, _, r) in hub_server.gets("c2i_tiny.pt")] == [f"bytes={kept}-"]  # from its bytes
    assert [p for p in hub_env.rglob("*") if p.name.endswith(".incomplete")] == []


def test_verify_cached_rehashes_blobs(hub_server):
    files = _files("c2i_tiny.pt", "vq_tiny.pt")
    paths = hub.download_files(files)
    assert hub.verify_cached(files) == []
    blob = Path(os.path.realpath(paths[files[1]]))
    data = bytearray(blob.read_bytes())
    data[10] ^= 0xFF
    blob.chmod(0o644)
    blob.write_bytes(bytes(data))
    problems = hub.verify_cached(files)
    assert len(problems) == 1 and "vq_tiny.pt" in problems[0] and "sha256" in problems[0]
    assert hashlib.sha256(bytes(data)).hexdigest()[:16] in problems[0]


def test_remove_keeps_files_other_installed_models_use(hub_server, tiny_catalogue):
    from lantern_studio.models import catalogue

    c2i, _ = tiny_catalogue
    other = catalogue.Entry(**{**c2i.__dict__, "name": "tiny-c2i-twin", "gpt": _files("c2i_tiny.pt")[0]})
    with catalogue.temporary_entry(other):
        catalogue.download(c2i.name)
        assert catalogue.status(c2i.name)["state"] == "installed"
        assert catalogue.status(other.name)["state"] == "installed"  # same files
        freed = catalogue.remove(c2i.name)
        assert freed == 0  # every file is shared with the installed twin
        assert catalogue.status(other.name)["state"] == "installed"
    freed = catalogue.remove(c2i.name)
    assert freed == c2i.download_size
    assert catalogue.status(c2i.name)["state"] == "missing"


def test_cli_list_download_verify_remove(hub_server, tiny_catalogue, capsys):
    from lantern_studio.cli import main

    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out
    assert "llamagen-c2i-b-256" in out and "fetchable" in out and "tiny-c2i" in out
    assert main(["models", "download", "tiny-c2i", "--yes"]) == 0
    out = capsys.readouterr().out
    assert "total" in out and "downloaded tiny-c2i" in out
    assert main(["models", "list"]) == 0
    line = [ln for ln in capsys.readouterr().out.splitlines() if "tiny-c2i " in ln][0]
    assert "✓ installed" in line
    assert main(["models", "verify", "tiny-c2i"]) == 0
    assert main(["models", "info", "tiny-c2i"]) == 0
    assert "memory" in capsys.readouterr().out
    assert main(["models", "remove", "tiny-c2i"]) == 1  # asks; no terminal in tests → no
    assert main(["models", "remove", "tiny-c2i", "--yes"]) == 0
    assert "removed tiny-c2i" in capsys.readouterr().out
    assert main(["models", "download", "no-such-model", "--yes"]) == 2
    assert "no catalogue model named" in capsys.readouterr().err


def test_cli_download_unreachable(hub_env, tiny_catalogue, monkeypatch, capsys):
    from lantern_studio.cli import main

    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{free_port()}")
    assert main(["models", "download", "tiny-c2i", "--yes"]) == 1
    assert "could not reach the model hub" in capsys.readouterr().err


def test_verify_says_what_it_could_not_check_and_fails(hub_server, tiny_catalogue, capsys, monkeypatch):
    """A file with no pinned hash whose blob name is not a hash is reported as unchecked, not as
    matching; the command fails when any file could not be checked, not only when none could."""
    from lantern_studio.cli import main
    from lantern_studio.models import catalogue

    c2i, _ = tiny_catalogue
    unpin = lambda f: HubFile(f.repo_id, f.filename, f.size, f.revision, f.role, f.size_exact)  # noqa: E731
    loose = catalogue.Entry(**{**c2i.__dict__, "name": "tiny-c2i-unpinned", "gpt": unpin(c2i.gpt),
                               "vq": unpin(c2i.vq)})
    with catalogue.temporary_entry(loose):
        assert main(["models", "download", loose.name, "--yes"]) == 0
        assert main(["models", "verify", loose.name]) == 0  # blob names are the hub's sha256: checked
        capsys.readouterr()
        monkeypatch.setattr(hub, "is_checkable", lambda tag: False)
        assert main(["models", "verify", loose.name]) != 0
        err = capsys.readouterr().err
        assert "cannot be checked" in err and "none of its" in err and "match the hub" not in err
        calls = []  # only the first file unchecked: the rest are checked and match — still a failure
        monkeypatch.setattr(hub, "is_checkable", lambda tag: calls.append(tag) or len(calls) > 1)
        assert main(["models", "verify", loose.name]) != 0
        cap = capsys.readouterr()
        assert "1 of 2 files could not be checked" in cap.err and "cannot be checked" in cap.err
    monkeypatch.setattr(hub, "is_checkable", lambda tag: False)  # pinned files are checked against the pin
    assert main(["models", "verify", c2i.name]) == 0
    assert "match the catalogue's pinned sha256" in capsys.readouterr().out


def test_server_speaks_the_hub_protocol(hub_server):
    """The fake hub answers like the real file endpoints (sanity for every other test)."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_url

    url = hf_hub_url(C2I_REPO, "vq_tiny.pt", endpoint=hub_server.url)
    meta = get_hf_file_metadata(url, endpoint=hub_server.url)
    data = tiny_files()[(C2I_REPO, "vq_tiny.pt")]
    assert meta.size == len(data)
    assert meta.etag == hashlib.sha256(data).hexdigest()
    assert meta.commit_hash == hub_server.commits[C2I_REPO]
