"""The history on disk: finished images as PNGs (with their record embedded by
``save_png``) and one SQLite row each in ``history.sqlite``.

A row is written only after its PNG is complete (``save_png`` writes to a
temporary file and renames), and a failed insert removes the PNG again, so a
failure never leaves half an entry. Only finished generations are added.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

import numpy as np

from ..export import save_png

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
        self.db = sqlite3.connect(str(self.db_path))
        # WAL without a sync per commit: a commit no longer blocks the GUI on fsync (tens of ms);
        # an app crash still cannot corrupt the file, only a power cut can lose the last rows.
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute(SCHEMA)
        self.db.commit()

    def close(self) -> None:
        self.db.close()

    def _new_path(self, prompt: str) -> Path:
        from .canvas import slug

        stamp = time.strftime("%Y%m%d-%H%M%S")
        base = f"{stamp}-{slug(prompt, 32)}"
        path, i = self.images / f"{base}.png", 1
        while path.exists():
            i += 1
            path = self.images / f"{base}-{i}.png"
        return path

    def add(self, image: np.ndarray, record: dict, decisions: Optional[np.ndarray] = None) -> Entry:
        record = json.loads(json.dumps(record, default=str))
        path = save_png(self._new_path(record.get("prompt", "")), image, record)
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

    def _entry(self, row) -> Entry:
        id_, created, prompt, model, name, record, blob = row
        dec = np.frombuffer(blob, dtype=np.uint8).copy() if blob else None
        return Entry(id_, created, prompt, model or "", self.images / name, json.loads(record), dec)

    def entries(self, search: str = "", limit: int = 1000) -> List[Entry]:
        q = "SELECT id, created, prompt, model, path, record, decisions FROM entries"
        args: tuple = ()
        if search.strip():
            esc = search.strip().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            q += " WHERE prompt LIKE ? ESCAPE '\\'"
            args = (f"%{esc}%",)
        q += " ORDER BY id DESC LIMIT ?"
        return [self._entry(r) for r in self.db.execute(q, args + (limit,))]

    def get(self, entry_id: int) -> Optional[Entry]:
        row = self.db.execute("SELECT id, created, prompt, model, path, record, decisions FROM entries WHERE id = ?",
                              (entry_id,)).fetchone()
        return self._entry(row) if row else None

    def delete(self, entry_id: int) -> None:
        e = self.get(entry_id)
        with self.db:
            self.db.execute("DELETE FROM entries WHERE id = ?", (entry_id,))
        if e is not None:
            e.path.unlink(missing_ok=True)

    def count(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM entries").fetchone()[0])
