"""The Hugging Face cache layout, written and read so that only the catalogue decides where a file goes.

The layout is the one every Hugging Face tool shares::

    <cache>/models--<org>--<name>/blobs/<hash>                 the bytes, named by their hash
    <cache>/models--<org>--<name>/blobs/<hash>.incomplete      a transfer in progress (resumable)
    <cache>/models--<org>--<name>/snapshots/<commit>/<file>    a relative link to ../../blobs/<hash>
    <cache>/models--<org>--<name>/refs/<revision>              the commit a branch name pointed at
    <cache>/.locks/models--<org>--<name>/<hash>.lock           held while <hash> is being fetched

Every name in a path comes from the catalogue (repository, file name, revision)
or is a hash/commit checked to be 64 or 40 hex digits; nothing else a server
says (an ETag, a commit header) is ever joined to a path. Every path is resolved
and checked to lie inside the cache before it is opened, and links are never
followed when writing. A blob is only ever replaced by bytes already checked
against its own name (so a failed download cannot damage another model's file).
"""

from __future__ import annotations

import errno
import os
import re
import shutil
from pathlib import Path
from typing import Optional

from .hub_errors import CacheUnusable, HubRefused, NotEnoughSpace, shown

HEX40 = re.compile(r"[0-9a-f]{40}")
HEX64 = re.compile(r"[0-9a-f]{64}")
_REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}")
_REVISION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}")

PARTIAL = ".incomplete"


def is_hash(text) -> bool:
    return isinstance(text, str) and bool(HEX64.fullmatch(text) or HEX40.fullmatch(text))


def is_commit(text) -> bool:
    return isinstance(text, str) and bool(HEX40.fullmatch(text))


def check_repo_id(repo_id: str) -> str:
    if not isinstance(repo_id, str) or not _REPO.fullmatch(repo_id) or ".." in repo_id:
        raise HubRefused(f"{shown(repo_id)} is not a Hub repository name (owner/name)")
    return repo_id


def check_revision(revision: str) -> str:
    if not isinstance(revision, str) or not _REVISION.fullmatch(revision) or ".." in revision:
        raise HubRefused(f"{shown(revision)} is not a revision name (a branch, tag or commit)")
    return revision


def check_filename(filename: str) -> str:
    """A file name inside a repository: relative, '/'-separated, no '..', '.', empty part or backslash."""
    parts = filename.split("/") if isinstance(filename, str) else [""]
    if (not parts or any(p in ("", ".", "..") for p in parts) or "\\" in filename or "\0" in filename
            or filename.startswith("/") or len(filename) > 255):
        raise HubRefused(f"{shown(filename)} is not a file name inside a repository")
    return filename


def repo_dir(cache: Path, repo_id: str) -> Path:
    return Path(cache) / "--".join(["models", *check_repo_id(repo_id).split("/")])


def inside(path, root) -> bool:
    """Whether ``path``, all links resolved, lies inside ``root`` (resolved too)."""
    real, top = os.path.realpath(path), os.path.realpath(root)
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def _ensure_inside(path: Path, cache: Path) -> Path:
    if not inside(path, cache):
        raise HubRefused(f"{path} resolves to {os.path.realpath(path)}, outside the Hugging Face cache {cache}: "
                         "refused (a link planted in the cache?)")
    return path


# --------------------------------------------------------------------------- reading


def read_ref(repo: Path, revision: str) -> Optional[str]:
    """The commit refs/<revision> holds, or None (missing, unreadable, or not a commit hash)."""
    if is_commit(revision):
        return revision
    try:
        text = (repo / "refs" / check_revision(revision)).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError, HubRefused):
        return None
    return text if is_commit(text) else None


def lookup(cache: Path, repo_id: str, filename: str, revision: str) -> Optional[Path]:
    """snapshots/<commit>/<filename> when it is a regular file inside the cache, else None. No network."""
    try:
        repo = repo_dir(cache, repo_id)
        check_filename(filename)
    except HubRefused:
        return None
    commit = read_ref(repo, revision)
    if commit is None:
        return None
    p = repo / "snapshots" / commit / filename
    try:
        if not inside(p, cache) or not os.path.isfile(p):
            return None
    except OSError:
        return None
    return p


def blob_of(path: Path) -> Path:
    return Path(os.path.realpath(path))


# --------------------------------------------------------------------------- writing


def cache_error(e: OSError, where, what: str = "the download") -> Exception:
    """An OSError while writing the cache → one line naming the folder and what to do."""
    where = str(where)
    code = getattr(e, "errno", None)
    if code == errno.ENOSPC or code == errno.EDQUOT:
        return NotEnoughSpace(f"the disk holding {where} filled up during {what}: free some space and run the "
                              "download again (it resumes), or point HF_HOME at a folder on a bigger disk")
    if code in (errno.ENOTDIR, errno.EEXIST) or isinstance(e, (NotADirectoryError, FileExistsError)):
        return CacheUnusable(f"the Hugging Face cache {where} cannot be created: part of its path is a file, not "
                             "a folder (check HF_HOME / HF_HUB_CACHE)")
    if code in (errno.EROFS, errno.EACCES, errno.EPERM):
        why = "it is on a read-only disk" if code == errno.EROFS else "permission denied"
        return CacheUnusable(f"cannot write to the Hugging Face cache {where}: {why}; point HF_HOME (or "
                             "HF_HUB_CACHE) at a folder you can write")
    return CacheUnusable(f"cannot write to the Hugging Face cache {where}: {e.strerror or e}")


def make_dirs(cache: Path, *folders: Path) -> None:
    """Create folders of the cache; each must resolve inside it."""
    for d in folders:
        try:
            d.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise cache_error(e, d) from None
        _ensure_inside(d, cache)


def open_partial(path: Path):
    """The partial file for appending (created if missing), never through a link. → (file, bytes already in it)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0), 0o644)
    fh = os.fdopen(fd, "ab")
    return fh, os.fstat(fd).st_size


def read_partial(path: Path, update, upto: int) -> None:
    """Feed the first ``upto`` bytes of a partial file to ``update`` (re-hashing what a resume starts from)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as fh:
        left = upto
        while left > 0:
            block = fh.read(min(1 << 20, left))
            if not block:
                break
            update(block)
            left -= len(block)


def remove_quietly(path: Path) -> None:
    try:
        if path.is_symlink() or path.is_file():
            path.unlink()
    except OSError:
        pass


def clean_orphans(blobs: Path, blob_hash: str, keep: Path) -> int:
    """Remove other transfers' leftovers of this blob (the hub library's ``<hash>.<id>.incomplete``,
    left by a killed process: called with the blob's lock held, so no live download owns them). → count."""
    removed = 0
    try:
        names = os.listdir(blobs)
    except OSError:
        return 0
    for name in names:
        if name.startswith(blob_hash + ".") and name.endswith(PARTIAL) and name != keep.name:
            remove_quietly(blobs / name)
            removed += 1
    return removed


def install_blob(partial: Path, blob: Path) -> None:
    """Move checked bytes into place (atomic; replaces only a blob of the same name, i.e. the same hash)."""
    os.replace(partial, blob)


def link_snapshot(cache: Path, repo: Path, commit: str, filename: str, blob: Path) -> Path:
    """snapshots/<commit>/<filename> → ../../blobs/<hash> (a relative link; a copy where links are not allowed)."""
    if not is_commit(commit):
        raise HubRefused(f"commit {shown(commit)} is not a 40-hex commit hash")
    target = repo / "snapshots" / commit / check_filename(filename)
    make_dirs(cache, target.parent)
    rel = os.path.relpath(blob, target.parent)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.link")
    remove_quietly(tmp)
    try:
        try:
            os.symlink(rel, tmp)
        except (OSError, NotImplementedError):  # no links (Windows without developer mode): a copy
            shutil.copyfile(blob, tmp)
        os.replace(tmp, target)
    except OSError as e:
        remove_quietly(tmp)
        raise cache_error(e, target.parent) from None
    return _ensure_inside(target, cache)


def write_ref(cache: Path, repo: Path, revision: str, commit: str) -> None:
    """refs/<revision> := commit, so the file is found by branch name offline."""
    if is_commit(revision) or not is_commit(commit):
        return
    ref = repo / "refs" / check_revision(revision)
    make_dirs(cache, ref.parent)
    try:
        if ref.is_file() and not ref.is_symlink() and ref.read_text(encoding="ascii").strip() == commit:
            return
        tmp = ref.with_name(f".{ref.name}.{os.getpid()}.tmp")
        tmp.write_text(commit, encoding="ascii")
        os.replace(tmp, ref)
    except (OSError, UnicodeDecodeError) as e:
        raise cache_error(e if isinstance(e, OSError) else OSError(str(e)), ref.parent) from None
