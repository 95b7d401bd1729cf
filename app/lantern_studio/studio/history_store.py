"""The history on disk: finished images as PNGs (with their record embedded by
``save_png``) and one SQLite row each in ``history.sqlite``.

A row is written only after its PNG is complete (``save_png`` writes to a
temporary file and renames), and a failed insert removes the PNG again, so a
failure never leaves half an entry. Only finished generations are added.

Opening never fails on a damaged history: a database that is not SQLite, is
malformed or has another schema is renamed aside (``history.sqlite.corrupt-
<time>``, kept for the user) and a fresh one starts; a row whose record is not
JSON is skipped and counted. At opening, temporary files a killed write left
behind are swept, and PNGs without a row (a kill between the PNG and its row)
are re-linked from the record embedded in them. ``notices`` says what happened.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

import numpy as np

from ..export import ExportError, read_png_record, save_png, slug
from ..records import RecordError, parse_record

COLUMNS = ("id", "created", "prompt", "model", "path", "record", "decisions")
STALE_TEMP_SECONDS = 60.0  # an in-flight export is younger than this (a second studio may be writing)
ORPHAN_MIN_AGE = 5.0  # a PNG without a row younger than this may be another writer's, its row on the way

SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created REAL NOT NULL,
    prompt TEXT NOT NULL,
    model TEXT,
    path TEXT NOT NULL,
    record TEXT NOT NULL,
    decisions BLOB
)
"""


@dataclass
class Entry:
    id: int
    created: float
    prompt: str
    model: str
    path: Path
    record: dict
    decisions: Optional[np.ndarray]

    @property
    def settings(self) -> dict:
        return self.record.get("settings", {})

    @property
    def stats(self) -> dict:
        return self.record.get("stats", {})


class HistoryStore:
    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.images = self.folder / "images"
        self.images.mkdir(parents=True, exist_ok=True)
        self.db_path = self.folder / "history.sqlite"
        self.notices: list[str] = []  # what opening had to repair, for the studio's banner
        self.skipped_rows = 0
        try:
            self.db = self._open()
        except sqlite3.DatabaseError as e:
            kept = self._quarantine()
            self.notices.append(f"The history database was damaged ({e}); it was moved aside to {kept.name} "
                                "and a new history started. Your images are still in the images folder.")
            self.db = self._open()
        self._sweep()

    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(str(self.db_path))
        try:
            # Checked read-only first, so a bad file is moved aside exactly as it was found.
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if "entries" in tables:
                cols = {r[1] for r in db.execute("PRAGMA table_info(entries)")}
                if not set(COLUMNS) <= cols:
                    raise sqlite3.DatabaseError(f"the history table has another layout (columns {sorted(cols)})")
            ok = db.execute("PRAGMA quick_check").fetchone()
            if not ok or ok[0] != "ok":
                raise sqlite3.DatabaseError(f"integrity check failed: {ok[0] if ok else 'no answer'}")
            # WAL without a sync per commit: a commit no longer blocks the GUI on fsync (tens of ms);
            # an app crash still cannot corrupt the file, only a power cut can lose the last rows.
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(SCHEMA)
            db.commit()
        except sqlite3.DatabaseError:
            db.close()
            raise
        return db

    def _quarantine(self) -> Path:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        kept = self.db_path.with_name(f"{self.db_path.name}.corrupt-{stamp}")
        i = 1
        while kept.exists():
            i += 1
            kept = self.db_path.with_name(f"{self.db_path.name}.corrupt-{stamp}-{i}")
        os.replace(self.db_path, kept)
        for side in ("-wal", "-shm"):
            extra = self.db_path.with_name(self.db_path.name + side)
            if extra.exists():
                os.replace(extra, kept.with_name(kept.name + side))
        return kept

    def _sweep(self) -> None:
        """Remove temp files of killed writes; re-link PNGs that have no row."""
        now = time.time()
        for tmp in self.images.glob(".export-*.png"):
            try:
                if now - tmp.stat().st_mtime > STALE_TEMP_SECONDS:
                    tmp.unlink()
            except OSError:
                pass
        known = {r[0] for r in self.db.execute("SELECT path FROM entries")}
        relinked, unreadable = 0, []
        for png in sorted(self.images.glob("*.png")):
            if png.name in known or png.name.startswith("."):
                continue
            try:  # another studio may be between writing this PNG and adding its row: leave young files
                if now - png.stat().st_mtime < ORPHAN_MIN_AGE:
                    continue
            except OSError:
                continue
            try:
                record = read_png_record(png)
            except (OSError, RecordError):
                record = None
            if not isinstance(record, dict):
                unreadable.append(png.name)
                continue
            with self.db:
                self.db.execute(
                    "INSERT INTO entries (created, prompt, model, path, record, decisions) VALUES (?, ?, ?, ?, ?, ?)",
                    (png.stat().st_mtime, str(record.get("prompt", "")), str(record.get("model", "")), png.name,
                     json.dumps(record, default=str), None))
            relinked += 1
        if relinked:
            self.notices.append(f"{relinked} image(s) without a history entry (an interrupted save) were added back.")
        if unreadable:
            self.notices.append(f"{len(unreadable)} PNG(s) in {self.images} are not studio images and were left "
                                f"alone: {', '.join(unreadable[:3])}{' …' if len(unreadable) > 3 else ''}")

    def close(self) -> None:
        self.db.close()

    def _new_path(self, prompt: str) -> Path:
        """A name no other writer picks: the time, the prompt, this process and a random part (two
        studios, or a studio and a script, add to one history)."""
        stamp = time.strftime("%Y%m%d-%H%M%S")
        return self.images / f"{stamp}-{slug(prompt, 32)}-{os.getpid()}-{secrets.token_hex(3)}.png"

    def add(self, image: np.ndarray, record: dict, decisions: Optional[np.ndarray] = None) -> Entry:
        record = json.loads(json.dumps(record, default=str))
        for attempt in range(8):
            try:  # an exclusive create: a name taken meanwhile is never overwritten
                path = save_png(self._new_path(record.get("prompt", "")), image, record)
                break
            except ExportError as e:
                if "already exists" not in str(e) or attempt == 7:
                    raise
        blob = None if decisions is None else np.asarray(decisions, dtype=np.uint8).tobytes()
        created = time.time()
        try:
            with self.db:
                cur = self.db.execute(
                    "INSERT INTO entries (created, prompt, model, path, record, decisions) VALUES (?, ?, ?, ?, ?, ?)",
                    (created, record.get("prompt", ""), record.get("model", ""), path.name, json.dumps(record), blob),
                )
        except Exception:
            path.unlink(missing_ok=True)
            raise
        return Entry(cur.lastrowid, created, record.get("prompt", ""), record.get("model", ""), path, record,
                     None if decisions is None else np.asarray(decisions, dtype=np.uint8).copy())

    def _entry(self, row) -> Optional[Entry]:
        """The row as an Entry, or None for a damaged row (counted in ``skipped_rows``)."""
        try:
            id_, created, prompt, model, name, record, blob = row
            if not isinstance(record, str) or not isinstance(name, str) or "/" in name or name.startswith("."):
                raise ValueError("not a history row")
            rec = parse_record(record, f"history row {id_}")
            dec = np.frombuffer(blob, dtype=np.uint8).copy() if blob else None
            return Entry(int(id_), float(created), str(prompt), model or "", self.images / name, rec, dec)
        except (ValueError, TypeError):
            self.skipped_rows += 1
            return None

    def entries(self, search: str = "", limit: int = 1000) -> List[Entry]:
        q = "SELECT id, created, prompt, model, path, record, decisions FROM entries"
        args: tuple = ()
        if search.strip():
            esc = search.strip().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            q += " WHERE prompt LIKE ? ESCAPE '\\'"
            args = (f"%{esc}%",)
        q += " ORDER BY id DESC LIMIT ?"
        out = [self._entry(r) for r in self.db.execute(q, args + (limit,))]
        return [e for e in out if e is not None]

    def get(self, entry_id: int) -> Optional[Entry]:
        row = self.db.execute("SELECT id, created, prompt, model, path, record, decisions FROM entries WHERE id = ?",
                              (entry_id,)).fetchone()
        return self._entry(row) if row else None

    def delete(self, entry_id: int) -> None:
        e = self.get(entry_id)
        with self.db:
            self.db.execute("DELETE FROM entries WHERE id = ?", (entry_id,))
            shared = e is not None and self.db.execute("SELECT COUNT(*) FROM entries WHERE path = ?",
                                                       (e.path.name,)).fetchone()[0]
        if e is not None and not shared:  # another row still shows this image: keep it
            e.path.unlink(missing_ok=True)

    def count(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM entries").fetchone()[0])
