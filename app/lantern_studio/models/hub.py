"""Downloads from the Hugging Face Hub into the standard HF cache.

Everything goes through ``huggingface_hub`` (``hf_hub_download``), so files land
where every other tool expects them (``$HF_HUB_CACHE`` or ``$HF_HOME/hub``)
and are shared with them. What this module adds on top:

* **sizes first** — :func:`prepare` asks the hub (HEAD requests only) for the
  exact size and hash of every missing file before anything is written;
* **free-space check** — refuses to start when the cache's disk can't hold the
  download, naming the folder and both sizes;
* **progress and cancel** — a callable gets a :class:`DownloadProgress` after
  every chunk (the GUI's hook; the CLI wraps a tqdm bar around it); a callable
  or a ``threading.Event`` cancels between chunks (:class:`DownloadCancelled`);
* **resume** — a dropped connection is resumed with an HTTP ``Range`` request by
  the hub client itself (it retries a few times from the byte it had reached).
  A cancelled or killed download leaves no partial file (the hub client writes
  to a process-unique temporary file and removes it), so it restarts the file;
* **integrity** — after each file: its size, and its sha256 when the hub's ETag
  is one (LFS files; git-stored files get the git blob sha1 check). A bad file
  is removed from the cache and reported (:class:`IntegrityError`);
* **offline** — ``HF_HUB_OFFLINE=1`` (or ``local_files_only=True``) uses only the
  cache and says which files are missing (:class:`NotDownloaded`);
* **clear errors** — an unreachable hub becomes :class:`HubUnavailable`.

``HF_ENDPOINT``, ``HF_HOME`` and ``HF_HUB_CACHE`` are read at call time (the
hub library reads them once at import), so a mirror or a test server can be
chosen after import.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Optional, Sequence, Union

from ..paths import env_flag, existing_parent

__all__ = [
    "HubFile", "RemoteFile", "DownloadPlan", "DownloadProgress",
    "HubError", "HubUnavailable", "HubOffline", "NotDownloaded", "NotEnoughSpace", "IntegrityError", "DownloadCancelled",
    "hf_cache_dir", "hub_endpoint", "is_offline", "cached_path", "missing", "is_installed",
    "prepare", "download", "download_files", "verify_file", "verify_cached", "remove_files",
    "check_free_space", "format_size",
]


# --------------------------------------------------------------------------- errors


class HubError(RuntimeError):
    """A download problem, worded for the person who asked for it."""


class HubUnavailable(HubError):
    """The hub could not be reached (no network, DNS, proxy, firewall, wrong HF_ENDPOINT)."""


class NotDownloaded(HubError):
    """Files are missing from the local cache and offline mode forbids fetching them."""


class HubOffline(HubError):
    """Offline mode is on (``HF_HUB_OFFLINE``): the hub is not asked at all."""


class NotEnoughSpace(HubError):
    """The cache's disk can't hold the download."""


class IntegrityError(HubError):
    """A downloaded file has the wrong size or hash; it was removed from the cache."""


class DownloadCancelled(HubError):
    """The caller cancelled the download."""


# --------------------------------------------------------------------------- files


@dataclass(frozen=True)
class HubFile:
    """One file of a Hub repository. ``size`` is what the catalogue expects
    (bytes; approximate unless ``size_exact``), shown before asking the hub."""

    repo_id: str
    filename: str
    size: int = 0
    revision: str = "main"
    role: str = ""  # gpt | vq | text-encoder | ...
    size_exact: bool = False

    @property
    def label(self) -> str:
        return f"{self.repo_id}/{self.filename}"


@dataclass(frozen=True)
class RemoteFile:
    """What the hub says about a file (HEAD request)."""

    file: HubFile
    size: Optional[int]
    etag: Optional[str]
    commit: Optional[str]


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
    """Handed to the progress callable after every chunk (from the download thread)."""

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
        return self.bytes_done / self.bytes_total if self.bytes_total else 1.0


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


def _network_errors() -> tuple:
    errs = []
    for mod, name in (("httpx2", "TransportError"), ("httpx", "TransportError"),
                      ("requests.exceptions", "ConnectionError"), ("requests.exceptions", "Timeout")):
        try:
            m = __import__(mod, fromlist=[name])
            errs.append(getattr(m, name))
        except (ImportError, AttributeError):
            pass
    return tuple(errs) or (ConnectionError,)


def _unavailable(cause: BaseException) -> HubUnavailable:
    e = HubUnavailable(
        f"could not reach the model hub ({hub_endpoint()}: {type(cause).__name__}): check the network or set "
        "HF_ENDPOINT; offline mode uses only the local cache"
    )
    e.__cause__ = cause
    return e


def check_reachable(timeout: float = 3.0) -> None:
    """Raise :class:`HubOffline` when offline mode is on and :class:`HubUnavailable` when the hub's endpoint
    does not answer within ``timeout`` seconds; return when it answers at all (any HTTP status: a server that
    says 404 to its root still serves files). Cheap enough to ask when a window opens, before any download."""
    if is_offline():
        raise HubOffline("offline mode is on (HF_HUB_OFFLINE): models already in the cache load; "
                         "unset it to download")
    from huggingface_hub import get_session  # noqa: PLC0415 - huggingface_hub: slow import

    try:
        get_session().head(hub_endpoint() + "/", timeout=timeout)
    except _network_errors() as e:
        raise _unavailable(e) from None


# --------------------------------------------------------------------------- the cache


def cached_path(f: HubFile, cache_dir: Optional[Path] = None) -> Optional[Path]:
    """Path of the file in the local cache, or None. Never touches the network."""
    from huggingface_hub import try_to_load_from_cache  # noqa: PLC0415 - huggingface_hub: slow import

    p = try_to_load_from_cache(f.repo_id, f.filename, cache_dir=str(cache_dir or hf_cache_dir()), revision=f.revision)
    if isinstance(p, str) and os.path.isfile(p):
        return Path(p)
    return None


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
        return  # can't tell; the hub client warns on its own
    if free < needed * 1.02:
        raise NotEnoughSpace(
            f"not enough free disk space in {folder}: {what} needs {format_size(needed)}, only "
            f"{format_size(free)} is free there. Free some space, or point HF_HOME (or HF_HUB_CACHE) at a "
            "folder on a bigger disk."
        )


# --------------------------------------------------------------------------- metadata


def remote_info(f: HubFile, timeout: float = 10.0) -> RemoteFile:
    """HEAD the file on the hub: exact size, ETag (sha256 for LFS files), commit."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_url  # noqa: PLC0415 - huggingface_hub: slow import
    from huggingface_hub.errors import (  # noqa: PLC0415 - huggingface_hub: slow import
        EntryNotFoundError, HfHubHTTPError, OfflineModeIsEnabled, RepositoryNotFoundError, RevisionNotFoundError)

    ep = hub_endpoint()
    url = hf_hub_url(f.repo_id, f.filename, revision=f.revision, endpoint=ep)
    try:
        meta = get_hf_file_metadata(url, timeout=timeout, endpoint=ep)
    except OfflineModeIsEnabled:
        raise NotDownloaded(
            f"{f.label} is not in the local cache and offline mode is on (HF_HUB_OFFLINE); unset it to download"
        ) from None
    except (RepositoryNotFoundError, RevisionNotFoundError, EntryNotFoundError):
        raise HubError(f"{f.label} (revision {f.revision}) was not found on the model hub at {ep}") from None
    except HfHubHTTPError as e:
        status = getattr(getattr(e, "response", None), "status_code", "?")
        if isinstance(status, int) and status >= 500:
            raise _unavailable(e) from None
        raise HubError(f"the model hub refused {f.label} (HTTP {status}): {e}") from None
    except _network_errors() as e:
        raise _unavailable(e) from None
    return RemoteFile(f, meta.size, meta.etag, meta.commit_hash)


# --------------------------------------------------------------------------- integrity


def _hash_file(path: Path, algo: str, prefix: bytes = b"") -> str:
    h = hashlib.new(algo)
    h.update(prefix)
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _check_content(path: Path, size: Optional[int], etag: Optional[str]) -> Optional[str]:
    """None if the file matches; else what is wrong."""
    real = Path(os.path.realpath(path))
    actual = real.stat().st_size
    if size is not None and actual != size:
        return f"size {actual} bytes, expected {size}"
    tag = (etag or "").strip('"').lower()
    if re.fullmatch(r"[0-9a-f]{64}", tag):  # LFS file: the ETag is its sha256
        got = _hash_file(real, "sha256")
        if got != tag:
            return f"sha256 {got[:16]}… does not match the hub's {tag[:16]}…"
    elif re.fullmatch(r"[0-9a-f]{40}", tag):  # git-stored file: the ETag is its git blob sha1
        got = _hash_file(real, "sha1", b"blob %d\0" % actual)
        if got != tag:
            return f"git sha1 {got[:16]}… does not match the hub's {tag[:16]}…"
    return None


def _remove_cached(path: Path) -> None:
    real = Path(os.path.realpath(path))
    for p in (Path(path), real):
        try:
            if p.is_symlink() or p.exists():
                p.unlink()
        except OSError:
            pass


def verify_file(path: Path, size: Optional[int], etag: Optional[str], label: str = "") -> None:
    """Raise IntegrityError (after removing the file from the cache) if it doesn't match."""
    problem = _check_content(Path(path), size, etag)
    if problem:
        _remove_cached(Path(path))
        raise IntegrityError(
            f"{label or Path(path).name}: the downloaded file is corrupt or incomplete ({problem}); it was "
            "removed from the cache — run the download again"
        )


def is_checkable(etag: str) -> bool:
    """Whether a cache blob name is a hash the content can be checked against."""
    tag = (etag or "").strip('"').lower()
    return bool(re.fullmatch(r"[0-9a-f]{64}|[0-9a-f]{40}", tag))


def verify_cached(files: Iterable[HubFile], cache_dir: Optional[Path] = None, unchecked: Optional[list] = None) -> list:
    """Offline check of cached files: each blob's name is its ETag, so re-hash and compare.

    Returns a list of problems (strings); missing files are reported too. Nothing is removed.
    Files whose blob name is not a hash (so nothing to compare with) are appended to
    ``unchecked`` (when given) rather than counted as matching.
    """
    problems = []
    for f in files:
        p = cached_path(f, cache_dir)
        if p is None:
            problems.append(f"{f.label}: not downloaded")
            continue
        blob = Path(os.path.realpath(p))
        if not is_checkable(blob.name):
            if unchecked is not None:
                unchecked.append(f"{f.label}: its cache name {blob.name!r} is not a hash, so it cannot be checked")
            continue
        bad = _check_content(p, None, blob.name)
        if bad:
            problems.append(f"{f.label}: {bad}")
    return problems


# --------------------------------------------------------------------------- download


def prepare(files: Sequence[HubFile], local_files_only: Optional[bool] = None, check_space: bool = True,
            timeout: float = 10.0) -> DownloadPlan:
    """What a download would do: cached files, and the exact size of each missing one.

    Offline: raises NotDownloaded when something is missing. Online: HEAD requests only,
    then the free-space check. Raises HubUnavailable / HubError / NotEnoughSpace.
    """
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


def _cancelled(cancel: CancelLike) -> bool:
    if cancel is None:
        return False
    if isinstance(cancel, threading.Event) or hasattr(cancel, "is_set"):
        return cancel.is_set()
    return bool(cancel())


class _State:
    def __init__(self, plan: DownloadPlan, progress: Optional[ProgressFn], cancel: CancelLike):
        self.plan, self.progress, self.cancel = plan, progress, cancel
        self.total = plan.total_bytes
        self.done = 0
        self.index = 0
        self.file_bytes = 0
        self.current: Optional[RemoteFile] = None

    def report(self, finished: bool = False):
        if self.progress is None or self.current is None:
            return
        r = self.current
        self.progress(DownloadProgress(r.file.filename, self.index, len(self.plan.fetch), self.file_bytes,
                                       r.size or r.file.size, self.done, self.total, finished))


class _Bar:
    """The hub client's progress-bar protocol (a tqdm look-alike) → our state, plus cancel checks."""

    def __init__(self, state: _State, *args, total=None, initial=0, **kwargs):
        self.state = state
        self.n = initial or 0

    def update(self, n=1):
        n = int(n or 0)
        self.n += n
        self.state.file_bytes += n
        self.state.done += n
        self.state.report()
        if _cancelled(self.state.cancel):
            raise DownloadCancelled("download cancelled")

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def download(plan: DownloadPlan, progress: Optional[ProgressFn] = None, cancel: CancelLike = None,
             verify: bool = True) -> list:
    """Fetch what ``plan`` lists (see :func:`prepare`); returns {HubFile: local path} for every
    file in the plan. Raises HubUnavailable, IntegrityError, DownloadCancelled."""
    from huggingface_hub import hf_hub_download  # noqa: PLC0415 - huggingface_hub: slow import
    from huggingface_hub.errors import (  # noqa: PLC0415 - huggingface_hub: slow import
        HfHubHTTPError, LocalEntryNotFoundError, OfflineModeIsEnabled)

    state = _State(plan, progress, cancel)
    paths = {f: p for f, p in plan.cached}
    ep = hub_endpoint()
    for i, r in enumerate(plan.fetch):
        if _cancelled(cancel):
            raise DownloadCancelled("download cancelled")
        state.index, state.current, state.file_bytes = i, r, 0
        before = state.done
        f = r.file
        try:
            path = hf_hub_download(
                f.repo_id, f.filename, revision=r.commit or f.revision, cache_dir=str(plan.cache_dir),
                endpoint=ep, tqdm_class=functools.partial(_Bar, state),
            )
        except DownloadCancelled:
            raise
        except OfflineModeIsEnabled:
            raise NotDownloaded(f"{f.label}: offline mode is on (HF_HUB_OFFLINE); unset it to download") from None
        except LocalEntryNotFoundError as e:
            raise _unavailable(e.__cause__ or e) from None
        except HfHubHTTPError as e:
            status = getattr(getattr(e, "response", None), "status_code", "?")
            raise HubError(f"the model hub refused {f.label} (HTTP {status}): {e}") from None
        except _network_errors() as e:
            raise _unavailable(e) from None
        except OSError as e:
            if "Consistency check failed" in str(e):
                raise IntegrityError(
                    f"{f.label}: the download was incomplete ({str(e).splitlines()[0]}); nothing was kept — "
                    "run the download again"
                ) from None
            raise
        if r.commit and f.revision != r.commit:
            _record_ref(plan.cache_dir, f, r.commit)
        if verify:
            verify_file(Path(path), r.size, r.etag, f.label)
        # a file served without progress (tiny, or already in the blob store) still counts
        state.done = before + (r.size or state.file_bytes)
        state.file_bytes = r.size or state.file_bytes
        state.report(finished=True)
        paths[f] = Path(path)
    return paths


def _record_ref(cache_dir: Path, f: HubFile, commit: str) -> None:
    """We download by commit (so HEAD and GET see the same version); keep refs/<revision> pointing at it
    so later lookups by branch name find the file offline."""
    from huggingface_hub.file_download import repo_folder_name  # noqa: PLC0415 - huggingface_hub: slow import

    ref = Path(cache_dir) / repo_folder_name(repo_id=f.repo_id, repo_type="model") / "refs" / f.revision
    try:
        ref.parent.mkdir(parents=True, exist_ok=True)
        if not ref.is_file() or ref.read_text().strip() != commit:
            ref.write_text(commit)
    except OSError:
        pass


def download_files(files: Sequence[HubFile], progress: Optional[ProgressFn] = None, cancel: CancelLike = None,
                   local_files_only: Optional[bool] = None, verify: bool = True) -> list:
    """prepare + download in one call; returns {HubFile: local path}."""
    plan = prepare(files, local_files_only=local_files_only)
    return download(plan, progress, cancel, verify)


# --------------------------------------------------------------------------- removal


def remove_files(files: Iterable[HubFile], keep: Iterable[HubFile] = (), dry_run: bool = False) -> int:
    """Delete cached files (all cached revisions of each) with huggingface_hub's cache tools;
    files also listed in ``keep`` survive. Returns the bytes freed (expected, when dry_run)."""
    from huggingface_hub import scan_cache_dir  # noqa: PLC0415 - huggingface_hub: slow import
    from huggingface_hub.errors import CacheNotFound  # noqa: PLC0415 - huggingface_hub: slow import

    cache = hf_cache_dir()
    try:
        info = scan_cache_dir(cache)
    except CacheNotFound:
        return 0
    kept = {(k.repo_id, k.filename) for k in keep}
    wanted = {(f.repo_id, f.filename) for f in files} - kept
    selected = [cf for repo in info.repos if repo.repo_type == "model"
                for rev in repo.revisions for cf in rev.files
                if (repo.repo_id, cf.file_name) in wanted or (repo.repo_id, _rel(cf, rev)) in wanted]
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
