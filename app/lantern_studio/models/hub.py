"""Downloads from the Hugging Face Hub into the standard HF cache.

Files land where every other tool expects them (``$HF_HUB_CACHE`` or
``$HF_HOME/hub``, the layout in :mod:`models.hub_cache`) and are shared with
them. The transfer is our own (:mod:`models.hub_http`, which says why not
``hf_hub_download``). What this module promises:

* **the catalogue decides where a file goes** — paths are built from the
  catalogue's repository, file name and revision and from hashes checked to be
  hex digits; a server's ETag or commit header that names a path, or is not a
  hash, is refused by name (:class:`HubRefused`), and every path is resolved and
  checked to lie inside the cache before anything is written;
* **sizes first** — :func:`prepare` asks the hub (HEAD requests only) for the
  exact size and hash of every missing file before anything is written; a size
  or hash other than the one the catalogue pins is refused there;
* **free-space check** — refuses to start when the cache's disk can't hold the
  download, naming the folder and both sizes; a disk that fills up anyway is one
  line too (:class:`NotEnoughSpace`);
* **progress and cancel** — a callable gets a :class:`DownloadProgress` as bytes
  arrive (the GUI's hook; the CLI wraps a tqdm bar around it); a callable or a
  ``threading.Event`` cancels within a fraction of a second, even while the
  server sends nothing (:class:`DownloadCancelled`);
* **resume** — bytes go to ``blobs/<hash>.incomplete``. A dropped connection
  is resumed with an HTTP ``Range`` request from the byte reached; a cancelled,
  failed or killed download leaves that file, and the next download of the same
  file resumes from its bytes. The hub library's own leftovers of that file
  (``<hash>.<id>.incomplete``) are removed when it starts;
* **integrity** — every file is checked before it is moved into place: its
  size, and its sha256 against the catalogue's pin (``HubFile.sha256``) or,
  for a file without a pin, against the hub's ETag (sha256, or the git blob
  sha1 of a small git-stored file). Bad bytes are discarded
  (:class:`IntegrityError`); a blob already in the cache is only ever replaced
  by checked bytes of the same hash, so a failed download never deletes or
  alters another model's files;
* **offline** — ``HF_HUB_OFFLINE=1`` (or ``local_files_only=True``) uses only the
  cache and says which files are missing (:class:`NotDownloaded`);
* **one line per failure** — an unreachable hub, a timeout, a dropped
  connection, a redirect loop, a cache folder that is a file or read-only: each
  a :class:`HubError` subclass (:mod:`models.hub_errors`); the hub library's
  log records go to the application's logging, never straight to the terminal.

``HF_ENDPOINT``, ``HF_HOME``, ``HF_HUB_CACHE`` and ``HF_HUB_DOWNLOAD_TIMEOUT``
are read at call time (the hub library reads them once at import), so a mirror
or a test server can be chosen after import.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import threading
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Optional, Sequence, Union

import filelock

from ..paths import env_flag, existing_parent
from . import hub_cache, hub_http
from .hub_cache import HEX40, HEX64, cache_error, is_commit, is_hash
from .hub_errors import (CacheUnusable, ConnectionDropped, DownloadCancelled, HubError, HubOffline, HubRefused,
                         HubTimeout, HubUnavailable, IntegrityError, NotDownloaded, NotEnoughSpace, shown)

__all__ = [
    "HubFile", "RemoteFile", "DownloadPlan", "DownloadProgress",
    "HubError", "HubUnavailable", "HubOffline", "NotDownloaded", "NotEnoughSpace", "IntegrityError", "DownloadCancelled",
    "HubRefused", "HubTimeout", "ConnectionDropped", "CacheUnusable",
    "hf_cache_dir", "hub_endpoint", "is_offline", "cached_path", "missing", "is_installed",
    "prepare", "download", "download_files", "verify_file", "verify_cached", "remove_files",
    "check_free_space", "format_size", "check_reachable",
]

PROGRESS_EVERY_S = 0.05  # the progress callable is called at most this often (and at every file's end)


# --------------------------------------------------------------------------- files


@dataclass(frozen=True)
class HubFile:
    """One file of a Hub repository. ``size`` is what the catalogue expects (bytes; approximate unless
    ``size_exact``), shown before asking the hub. ``sha256``: the catalogue's pin of the file's content
    (hex); when given the file must have exactly that hash (and ``size``, when exact)."""

    repo_id: str
    filename: str
    size: int = 0
    revision: str = "main"
    role: str = ""  # gpt | vq | text-encoder | ...
    size_exact: bool = False
    sha256: Optional[str] = None

    @property
    def label(self) -> str:
        return f"{self.repo_id}/{self.filename}"


@dataclass(frozen=True)
class RemoteFile:
    """What the hub says about a file (HEAD request), checked: ``etag`` is a hash (64 or 40 hex digits),
    ``commit`` a 40-hex commit, ``size`` the exact size."""

    file: HubFile
    size: Optional[int]
    etag: Optional[str]
    commit: Optional[str]

    @property
    def blob_name(self) -> str:
        """The blob's name in the cache: the pinned sha256, else the hub's hash for it."""
        return self.file.sha256 or self.etag


@dataclass
class DownloadPlan:
    cache_dir: Path
    cached: list  # [(HubFile, Path)]
    fetch: list  # [RemoteFile]

    @property
    def total_bytes(self) -> int:
        return sum(r.size or r.file.size for r in self.fetch)

    @property
    def nothing_to_do(self) -> bool:
        return not self.fetch


@dataclass
class DownloadProgress:
    """Handed to the progress callable as bytes arrive (from the download thread)."""

    filename: str
    file_index: int  # 0-based among the files being fetched
    file_count: int
    file_bytes: int
    file_total: int
    bytes_done: int
    bytes_total: int
    finished: bool = False

    @property
    def fraction(self) -> float:
        return min(1.0, self.bytes_done / self.bytes_total) if self.bytes_total else 1.0


ProgressFn = Callable[[DownloadProgress], None]
CancelLike = Union[None, threading.Event, Callable[[], bool]]


# --------------------------------------------------------------------------- environment


def hf_cache_dir() -> Path:
    """The HF hub cache, resolved now: $HF_HUB_CACHE, else $HF_HOME/hub, else the hub's default."""
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(var):
            return Path(os.environ[var]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    from huggingface_hub import constants  # noqa: PLC0415 - huggingface_hub: slow import

    return Path(constants.HF_HUB_CACHE).expanduser()


def hub_endpoint() -> str:
    """$HF_ENDPOINT now (a mirror, or a local test server), else the hub library's endpoint."""
    from huggingface_hub import constants  # noqa: PLC0415 - huggingface_hub: slow import

    return (os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")


def is_offline() -> bool:
    """HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) as set now, or as the hub library read it at import."""
    from huggingface_hub import constants  # noqa: PLC0415 - huggingface_hub: slow import

    env = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE")
    return env_flag(env) or bool(getattr(constants, "HF_HUB_OFFLINE", False))


def format_size(n: Optional[int]) -> str:
    if n is None:
        return "unknown size"
    size = float(n)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if size < 1000 or unit == "TB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{n} B"  # pragma: no cover


_ROUTED = False
_LIBRARY_LOGGERS = ("huggingface_hub", "httpx2", "httpcore2", "filelock")


def route_library_logs() -> None:
    """The hub library writes its warnings to stderr through its own handler; send them (and the HTTP
    client's records) to the application's logging instead, so nothing but our one line reaches the
    terminal unless logging was set up to show them."""
    global _ROUTED
    if _ROUTED:
        return
    for name in _LIBRARY_LOGGERS:
        log = logging.getLogger(name)
        for h in list(log.handlers):
            if type(h) is logging.StreamHandler:
                log.removeHandler(h)
        if not any(isinstance(h, logging.NullHandler) for h in log.handlers):
            log.addHandler(logging.NullHandler())
        log.propagate = True
    _ROUTED = True


def check_reachable(timeout: float = 3.0) -> None:
    """Raise :class:`HubOffline` when offline mode is on and :class:`HubUnavailable` when the hub's endpoint
    does not answer within ``timeout`` seconds; return when it answers at all (any HTTP status: a server that
    says 404 to its root still serves files). Cheap enough to ask when a window opens, before any download."""
    if is_offline():
        raise HubOffline("offline mode is on (HF_HUB_OFFLINE): models already in the cache load; "
                         "unset it to download")
    route_library_logs()
    hub_http.ping(hub_endpoint() + "/", timeout)


# --------------------------------------------------------------------------- the cache


def _fits_pin(f: HubFile, path: Path) -> bool:
    """What a lookup can tell without reading the file: its size (when exact) and its blob's name (when
    pinned and the blob is named by a sha256) agree with the catalogue."""
    blob = hub_cache.blob_of(path)
    try:
        size = blob.stat().st_size
    except OSError:
        return False
    if f.size_exact and size != f.size:
        return False
    if f.sha256 and HEX64.fullmatch(blob.name) and blob.name != f.sha256:
        return False
    return True


def cached_path(f: HubFile, cache_dir: Optional[Path] = None) -> Optional[Path]:
    """Path of the file in the local cache (inside it, the catalogue's size and hash name), or None.
    Never touches the network."""
    p = hub_cache.lookup(Path(cache_dir or hf_cache_dir()), f.repo_id, f.filename, f.revision)
    return p if p is not None and _fits_pin(f, p) else None


def missing(files: Iterable[HubFile], cache_dir: Optional[Path] = None) -> list:
    return [f for f in files if cached_path(f, cache_dir) is None]


def is_installed(files: Iterable[HubFile], cache_dir: Optional[Path] = None) -> bool:
    return not missing(files, cache_dir)


def check_free_space(folder: Path, needed: int, what: str = "the download") -> None:
    """Raise NotEnoughSpace unless ``folder``'s disk has ``needed`` bytes (+2% headroom) free."""
    if needed <= 0:
        return
    where = existing_parent(folder)
    try:
        free = shutil.disk_usage(where).free
    except OSError:
        return  # can't tell; a disk that fills up during the transfer is reported then
    if free < needed * 1.02:
        raise NotEnoughSpace(
            f"not enough free disk space in {folder}: {what} needs {format_size(needed)}, only "
            f"{format_size(free)} is free there. Free some space, or point HF_HOME (or HF_HUB_CACHE) at a "
            "folder on a bigger disk."
        )


# --------------------------------------------------------------------------- metadata


def _normal_etag(raw: Optional[str]) -> str:
    tag = (raw or "").strip()
    if tag.startswith("W/"):
        tag = tag[2:]
    return tag.strip('"').lower()


def file_url(f: HubFile, revision: str) -> str:
    """{endpoint}/{repo}/resolve/{revision}/{file}, every part checked and quoted."""
    hub_cache.check_repo_id(f.repo_id)
    hub_cache.check_filename(f.filename)
    hub_cache.check_revision(revision)
    return (f"{hub_endpoint()}/{f.repo_id}/resolve/{urllib.parse.quote(revision, safe='')}/"
            f"{urllib.parse.quote(f.filename)}")


def check_metadata(f: HubFile, meta: hub_http.Metadata) -> RemoteFile:
    """The hub's answer for ``f``, refused by name unless every part is what it must be."""
    tag = _normal_etag(meta.etag)
    if not is_hash(tag):
        raise HubRefused(f"{f.label}: the model hub's ETag {shown(meta.etag)} is not a content hash; refused "
                         "(a mirror that does not serve the Hub's files?)")
    if f.sha256 and HEX64.fullmatch(tag) and tag != f.sha256:
        raise HubRefused(f"{f.label}: the model hub serves a file with sha256 {tag[:16]}…, not the "
                         f"{f.sha256[:16]}… the catalogue pins; refused")
    commit = (meta.commit or "").strip()
    if not commit and is_commit(f.revision):
        commit = f.revision
    if not is_commit(commit):
        raise HubRefused(f"{f.label}: the model hub's commit header X-Repo-Commit {shown(meta.commit)} is not a "
                         "commit hash; refused")
    try:
        size = int(str(meta.size).strip())
    except ValueError:
        size = -1
    if size < 0 or str(meta.size).strip() != str(size):
        raise HubRefused(f"{f.label}: the model hub's size {shown(meta.size)} is not a number of bytes; refused")
    if f.size_exact and size != f.size:
        raise HubRefused(f"{f.label}: the model hub's file is {size:,} bytes, the catalogue pins {f.size:,}; "
                         "refused")
    return RemoteFile(f, size, tag, commit)


def remote_info(f: HubFile, timeout: float = 10.0) -> RemoteFile:
    """HEAD the file on the hub: exact size, hash, commit — checked (see :func:`check_metadata`)."""
    if is_offline():
        raise NotDownloaded(
            f"{f.label} is not in the local cache and offline mode is on (HF_HUB_OFFLINE); unset it to download"
        )
    url = file_url(f, f.revision)
    return check_metadata(f, hub_http.head(url, f.label, timeout))


# --------------------------------------------------------------------------- integrity


class _Digest:
    """sha256 of the content, or the git blob sha1 (``blob <size>\\0`` + content) for a 40-hex hash."""

    def __init__(self, expected: str, size: int):
        self.expected, self.size = expected, size
        self.reset()

    def reset(self) -> None:
        if HEX40.fullmatch(self.expected):
            self.h = hashlib.sha1(b"blob %d\0" % self.size)
        else:
            self.h = hashlib.sha256()

    def update(self, data: bytes) -> None:
        self.h.update(data)

    @property
    def kind(self) -> str:
        return "git sha1" if HEX40.fullmatch(self.expected) else "sha256"

    def problem(self) -> Optional[str]:
        got = self.h.hexdigest()
        return None if got == self.expected else f"{self.kind} {got[:16]}… where {self.expected[:16]}… was expected"


def _hash_file(path: Path, expected: str, size: int) -> Optional[str]:
    """None when the file has ``size`` bytes and the ``expected`` hash; else what is wrong."""
    real = hub_cache.blob_of(path)
    actual = real.stat().st_size
    if actual != size:
        return f"size {actual:,} bytes, expected {size:,}"
    d = _Digest(expected, size)
    with open(real, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            d.update(block)
    return d.problem()


def _check_content(path: Path, size: Optional[int], etag: Optional[str]) -> Optional[str]:
    """None if the file matches; else what is wrong (``etag``: a hash, or anything else: size only)."""
    real = hub_cache.blob_of(path)
    actual = real.stat().st_size
    if size is not None and actual != size:
        return f"size {actual} bytes, expected {size}"
    tag = _normal_etag(etag)
    if is_hash(tag):
        return _hash_file(real, tag, actual)
    return None


def verify_file(path: Path, size: Optional[int], etag: Optional[str], label: str = "") -> None:
    """Raise IntegrityError if the file doesn't match (nothing is removed: it may be another model's blob)."""
    problem = _check_content(Path(path), size, etag)
    if problem:
        raise IntegrityError(f"{label or Path(path).name}: the file is corrupt or incomplete ({problem})")


def is_checkable(etag: str) -> bool:
    """Whether a cache blob name is a hash the content can be checked against."""
    return is_hash(_normal_etag(etag))


def verify_cached(files: Iterable[HubFile], cache_dir: Optional[Path] = None, unchecked: Optional[list] = None) -> list:
    """Offline check of cached files: re-hash each against the catalogue's pin, or, without one, against
    its blob's name (the hub's hash for it).

    Returns a list of problems (strings); missing files are reported too. Nothing is removed.
    Files with neither a pin nor a hash for a name are appended to ``unchecked`` (when given)
    rather than counted as matching.
    """
    problems = []
    for f in files:
        p = hub_cache.lookup(Path(cache_dir or hf_cache_dir()), f.repo_id, f.filename, f.revision)
        if p is None:
            problems.append(f"{f.label}: not downloaded")
            continue
        blob = hub_cache.blob_of(p)
        try:
            if f.sha256:
                bad = _hash_file(blob, f.sha256, f.size if f.size_exact else blob.stat().st_size)
            elif is_checkable(blob.name):
                bad = _check_content(blob, f.size if f.size_exact else None, blob.name)
            else:
                if unchecked is not None:
                    unchecked.append(f"{f.label}: its cache name {blob.name!r} is not a hash and the catalogue "
                                     "pins none, so it cannot be checked")
                continue
        except OSError as e:
            bad = f"could not be read ({e.strerror or e})"
        if bad:
            problems.append(f"{f.label}: {bad}")
    return problems


# --------------------------------------------------------------------------- download


def prepare(files: Sequence[HubFile], local_files_only: Optional[bool] = None, check_space: bool = True,
            timeout: float = 10.0) -> DownloadPlan:
    """What a download would do: cached files, and the exact size of each missing one.

    Offline: raises NotDownloaded when something is missing. Online: HEAD requests only,
    then the free-space check. Raises HubUnavailable / HubRefused / HubError / NotEnoughSpace.
    """
    route_library_logs()
    cache = hf_cache_dir()
    cached, todo = [], []
    for f in dict.fromkeys(files):  # de-duplicated, order kept
        p = cached_path(f, cache)
        (cached.append((f, p)) if p is not None else todo.append(f))
    offline = is_offline() if local_files_only is None else local_files_only
    if todo and offline:
        names = ", ".join(f.label for f in todo[:3]) + (" …" if len(todo) > 3 else "")
        raise NotDownloaded(
            f"{len(todo)} file(s) are not in the local cache ({cache}) and offline mode is on "
            f"(HF_HUB_OFFLINE): {names}. Unset HF_HUB_OFFLINE and run the download again."
        )
    plan = DownloadPlan(cache, cached, [remote_info(f, timeout) for f in todo])
    if check_space:
        check_free_space(cache, plan.total_bytes)
    return plan


def _cancel_check(cancel: CancelLike) -> Callable[[], bool]:
    if cancel is None:
        return lambda: False
    if isinstance(cancel, threading.Event) or hasattr(cancel, "is_set"):
        return cancel.is_set
    return lambda: bool(cancel())


class _State:
    def __init__(self, plan: DownloadPlan, progress: Optional[ProgressFn]):
        self.plan, self.progress = plan, progress
        self.total = plan.total_bytes
        self.before = 0  # bytes of the files already done
        self.index = 0
        self.file_bytes = 0
        self.current: Optional[RemoteFile] = None
        self.last = 0.0
        self.last_bytes = 0

    def report(self, finished: bool = False) -> None:
        """Hand the progress on: a file's first bytes, its end, and otherwise every PROGRESS_EVERY_S or MiB."""
        if self.progress is None or self.current is None:
            return
        now = time.monotonic()
        first = self.file_bytes > 0 and self.last_bytes == 0
        if not (finished or first or now - self.last >= PROGRESS_EVERY_S or self.file_bytes - self.last_bytes >= 1 << 20):
            return
        self.last, self.last_bytes = now, self.file_bytes
        r = self.current
        self.progress(DownloadProgress(r.file.filename, self.index, len(self.plan.fetch), self.file_bytes,
                                       r.size or r.file.size, self.before + self.file_bytes, self.total, finished))


def _lock(cache: Path, r: RemoteFile, cancelled: Callable[[], bool]) -> filelock.BaseFileLock:
    """The blob's lock (the hub library's own lock path, so its downloads and ours take turns); waiting
    for it checks the cancel."""
    folder = cache / ".locks" / hub_cache.repo_dir(cache, r.file.repo_id).name
    hub_cache.make_dirs(cache, folder)
    lock = filelock.FileLock(str(folder / f"{r.blob_name}.lock"))
    while True:
        if cancelled():
            raise DownloadCancelled("download cancelled")
        try:
            lock.acquire(timeout=0.1)
            return lock
        except filelock.Timeout:
            continue
        except OSError as e:
            raise cache_error(e, folder) from None


def _fetch_one(cache: Path, r: RemoteFile, state: _State, cancelled: Callable[[], bool]) -> Path:
    """One file into the cache: a checked blob (fetched, resumed, or already there), its snapshot link, its ref."""
    f = r.file
    repo = hub_cache.repo_dir(cache, f.repo_id)
    blobs = repo / "blobs"
    hub_cache.make_dirs(cache, blobs)
    blob = blobs / r.blob_name
    expected = f.sha256 or r.etag
    lock = _lock(cache, r, cancelled)
    try:
        partial = blob.with_name(blob.name + hub_cache.PARTIAL)
        hub_cache.clean_orphans(blobs, r.blob_name, keep=partial)
        have = blob.is_file() and not blob.is_symlink() and _hash_file(blob, expected, r.size) is None
        if not have:
            _transfer(r, partial, expected, state, cancelled)
            hub_cache.install_blob(partial, blob)
        link = hub_cache.link_snapshot(cache, repo, r.commit, f.filename, blob)
        hub_cache.write_ref(cache, repo, f.revision, r.commit)
    finally:
        lock.release()
    return link


def _transfer(r: RemoteFile, partial: Path, expected: str, state: _State, cancelled: Callable[[], bool]) -> None:
    """Fetch (or resume) ``partial`` and check it; bad bytes are removed, anything else is kept to resume."""
    f = r.file
    digest = _Digest(expected, r.size)
    if partial.is_symlink():
        hub_cache.remove_quietly(partial)
    fh, have = hub_cache.open_partial(partial)
    try:
        if have > r.size:
            fh.truncate(0)
            have = 0
        hub_cache.read_partial(partial, digest.update, have)
        state.file_bytes = have
        state.report()

        def sink(offset: int, data: bytes) -> None:
            if offset == 0 and fh.tell() != 0:  # starting again
                fh.truncate(0)
                fh.seek(0)
                digest.reset()
            fh.write(data)
            digest.update(data)
            state.file_bytes = offset + len(data)
            state.report()

        if have < r.size:
            hub_http.fetch(file_url(f, r.commit), f.label, r.size, have, sink, cancelled)
        fh.flush()
        os.fsync(fh.fileno())
    finally:
        fh.close()
        if r.size and partial.is_file() and partial.stat().st_size == 0:
            hub_cache.remove_quietly(partial)  # nothing to resume from
    problem = digest.problem() if partial.stat().st_size == r.size else \
        f"size {partial.stat().st_size:,} bytes, expected {r.size:,}"
    if problem:
        hub_cache.remove_quietly(partial)
        raise IntegrityError(f"{f.label}: the downloaded file is corrupt ({problem}); it was not kept — run the "
                             "download again")


def download(plan: DownloadPlan, progress: Optional[ProgressFn] = None, cancel: CancelLike = None,
             verify: bool = True) -> dict:
    """Fetch what ``plan`` lists (see :func:`prepare`); returns {HubFile: local path} for every
    file in the plan. Every file is checked before it is moved into place (``verify`` is kept for
    callers; there is no unchecked path). Raises HubUnavailable (and its ConnectionDropped,
    HubTimeout), HubRefused, IntegrityError, NotEnoughSpace, CacheUnusable, DownloadCancelled."""
    route_library_logs()
    cancelled = _cancel_check(cancel)
    state = _State(plan, progress)
    paths = {f: p for f, p in plan.cached}
    cache = Path(plan.cache_dir)
    for i, r in enumerate(plan.fetch):
        if cancelled():
            raise DownloadCancelled("download cancelled")
        state.index, state.current, state.file_bytes, state.last_bytes = i, r, 0, 0
        try:
            paths[r.file] = _fetch_one(cache, r, state, cancelled)
        except OSError as e:
            raise cache_error(e, cache, f"the download of {r.file.label}") from None
        state.file_bytes = r.size
        state.report(finished=True)
        state.before += r.size
    return paths


def download_files(files: Sequence[HubFile], progress: Optional[ProgressFn] = None, cancel: CancelLike = None,
                   local_files_only: Optional[bool] = None, verify: bool = True) -> dict:
    """prepare + download in one call; returns {HubFile: local path}."""
    plan = prepare(files, local_files_only=local_files_only)
    return download(plan, progress, cancel, verify)


# --------------------------------------------------------------------------- removal


def remove_files(files: Iterable[HubFile], keep: Iterable[HubFile] = (), dry_run: bool = False) -> int:
    """Delete cached files (all cached revisions of each) with huggingface_hub's cache tools;
    files also listed in ``keep`` survive, and so does anything a link resolves to outside the cache.
    Returns the bytes freed (expected, when dry_run)."""
    from huggingface_hub import scan_cache_dir  # noqa: PLC0415 - huggingface_hub: slow import
    from huggingface_hub.errors import CacheNotFound  # noqa: PLC0415 - huggingface_hub: slow import

    cache = hf_cache_dir()
    try:
        info = scan_cache_dir(cache)
    except (CacheNotFound, OSError):
        return 0
    kept = {(k.repo_id, k.filename) for k in keep}
    wanted = {(f.repo_id, f.filename) for f in files} - kept
    selected = [cf for repo in info.repos if repo.repo_type == "model"
                for rev in repo.revisions for cf in rev.files
                if ((repo.repo_id, cf.file_name) in wanted or (repo.repo_id, _rel(cf, rev)) in wanted)
                and hub_cache.inside(cf.blob_path, cache)]
    if not selected:
        return 0
    strategy = info.delete_files(*selected)
    if not dry_run:
        strategy.execute()
    return int(strategy.expected_freed_size)


def _rel(cf, rev) -> str:
    try:
        return Path(cf.file_path).relative_to(rev.snapshot_path).as_posix()
    except ValueError:
        return cf.file_name
