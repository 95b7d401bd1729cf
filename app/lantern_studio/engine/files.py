"""Files: writing one so that nobody ever reads half of it (the one helper every
writer in the project uses: weights, tokenizers, datasets, PNG exports,
neighbour tables, reports, desktop entries) and hashing one. Stdlib only, so
anything may import it (docs/architecture.md, "Where each concern lives").
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Callable, Optional


def give_usual_mode(path) -> None:
    """mkstemp makes 0600 files; give them the usual umask-based mode instead.

    The umask is read from /proc (Linux) rather than by os.umask(), which would
    briefly change it for every thread of the process; elsewhere 022 is assumed.
    """
    mask = 0o022
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    mask = int(line.split()[1], 8)
                    break
    except (OSError, ValueError):
        pass
    try:
        os.chmod(path, 0o666 & ~mask)
    except OSError:
        pass


def atomic_write(path, write: Callable[[str], object], *, durable: bool = False,
                 temp_prefix: Optional[str] = None, exclusive: bool = False) -> Path:
    """Call ``write(tmp_path)``, then rename the temporary file over ``path``.

    Readers see the old file or the new one, never half of one; if ``write``
    raises (or the process is interrupted) the temporary file is removed and
    ``path`` is left as it was. The temporary file sits in ``path``'s folder
    (created if missing), is hidden (its name starts with a dot, or with
    ``temp_prefix``) and ends with ``path``'s suffix, so writers that pick a
    format from the extension (``np.save``, Pillow) write the right one. The
    result gets the usual umask-based mode, not mkstemp's 0600. ``durable``
    also flushes the file to disk before the rename (it then survives a power
    cut, at the cost of a disk flush). ``exclusive``: never replace an existing
    ``path`` — the finished file is hard-linked into place, which fails with
    FileExistsError when another writer got there first (two writers cannot
    both win one name). → ``path``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    prefix = temp_prefix if temp_prefix is not None else f".{path.name}."
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=f".tmp{path.suffix}", dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        if durable:
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
        give_usual_mode(tmp)
        if exclusive:
            os.link(tmp, path)
            os.unlink(tmp)
        else:
            os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def sha256_file(path) -> str:
    """Hex sha256 of a file's bytes, read 1 MiB at a time."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
