"""Models dialog: the Hub catalogue inside the studio.

One row per catalogue model (name, kind, resolution, download size, what is
already in the local Hugging Face cache). Download asks the hub for exact
sizes, checks free space, fetches with progress, speed and Cancel (a cancelled
or dropped download resumes where it stopped: the hub client keeps its partial
files), checks every file's hash and then asks the window to load the model.
All of it runs as a coroutine on the studio's qasync loop (aio.py) with the
blocking hub calls in the I/O executor; offline mode (HF_HUB_OFFLINE=1) and an
unreachable hub end in one clear line.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Optional

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView, QDialog, QDialogButtonBox, QHBoxLayout, QHeaderView, QLabel, QProgressBar, QPushButton,
    QTableWidget, QTableWidgetItem, QVBoxLayout,
)

from ..models import catalogue, hub
from . import aio

COLUMNS = ("Model", "Kind", "Resolution", "Download", "In cache")
KIND_NAMES = {"c2i": "class → image", "t2i": "text → image"}
STATE_NAMES = {"installed": "yes", "partial": "partly", "missing": "no"}


def speed_text(done: int, started_bytes: int, seconds: float) -> str:
    if seconds <= 0.2 or done <= started_bytes:
        return ""
    return f" · {hub.format_size(int((done - started_bytes) / seconds))}/s"


class ModelsDialog(QDialog):
    model_chosen = Signal(str)  # a catalogue name, downloaded and checked: the window loads it

    def __init__(self, parent=None, entries: Optional[Callable[[], dict]] = None):
        super().__init__(parent)
        self.setWindowTitle("Models from the Hub")
        self.setObjectName("modelsDialog")
        self.resize(760, 420)
        self._entries = entries or (lambda: dict(catalogue.CATALOGUE))
        self.task = None  # the running download coroutine
        self.cancel_event: Optional[threading.Event] = None
        self.last_error: Optional[str] = None
        lay = QVBoxLayout(self)
        intro = QLabel("LlamaGen checkpoints from the Hugging Face Hub. Files go to the standard Hugging Face "
                       "cache and are hash-checked after download; a stopped download resumes.")
        intro.setWordWrap(True)
        intro.setObjectName("muted")
        lay.addWidget(intro)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.table.itemSelectionChanged.connect(self._selection_changed)
        self.table.doubleClicked.connect(lambda *_: self.download_or_load())
        lay.addWidget(self.table, 1)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setValue(0)
        self.progress.setTextVisible(True)
        self.progress.setFormat("")
        lay.addWidget(self.progress)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(self.status)
        row = QHBoxLayout()
        self.download_button = QPushButton("Download and load")
        self.download_button.clicked.connect(self.download_or_load)
        self.cancel_button = QPushButton("Cancel download")
        self.cancel_button.clicked.connect(self.cancel)
        self.cancel_button.setEnabled(False)
        row.addWidget(self.download_button)
        row.addWidget(self.cancel_button)
        row.addStretch(1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        row.addWidget(buttons)
        lay.addLayout(row)
        self.hub_check = None  # the coroutine asking whether the hub answers (each time the dialog is shown)
        self.hub_problem: Optional[str] = None
        self.refresh()

    def showEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().showEvent(event)
        if (self.hub_check is None or self.hub_check.done()) and not self.downloading:
            self.hub_check = aio.start(self._check_hub(self.task))

    async def _check_hub(self, download) -> Optional[str]:
        """Say whether the hub can be reached as the dialog opens, before anyone presses Download. ``download``:
        the download task when the check was asked for; one started since has said something newer."""
        try:
            await aio.in_thread(hub.check_reachable)
            self.hub_problem = None
        except hub.HubError as e:
            self.hub_problem = f"{e}" + ("" if isinstance(e, hub.HubOffline) else
                                         "; models already in the cache still load")
        if self.task is download and not self.downloading and self.isVisible():
            self._say(f"Hub: {self.hub_problem}." if self.hub_problem else "")
            self._selection_changed()
        return self.hub_problem

    # ------------------------------------------------------------------ table
    def refresh(self) -> None:
        entries = self._entries()
        selected = self.selected_name()
        self.table.setRowCount(len(entries))
        for r, (name, e) in enumerate(entries.items()):
            try:
                state = catalogue.status(name)["state"]
            except Exception:  # noqa: BLE001 - a cache we cannot read is shown as "not downloaded"
                state = "missing"
            size = ("≈" if not e.sizes_exact else "") + hub.format_size(e.download_size)
            cells = (e.title, KIND_NAMES.get(e.kind, e.kind), f"{e.image_size}×{e.image_size} px", size,
                     STATE_NAMES.get(state, state))
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setData(Qt.ItemDataRole.UserRole, name)
                item.setToolTip(f"{e.describe()}\n{e.licence}")
                self.table.setItem(r, c, item)
            if name == selected:
                self.table.selectRow(r)
        if self.table.currentRow() < 0 and entries:
            self.table.selectRow(0)
        self._selection_changed()

    def selected_name(self) -> Optional[str]:
        row = self.table.currentRow()
        item = self.table.item(row, 0) if row >= 0 else None
        return item.data(Qt.ItemDataRole.UserRole) if item is not None else None

    def select(self, name: str) -> None:
        for r in range(self.table.rowCount()):
            if self.table.item(r, 0).data(Qt.ItemDataRole.UserRole) == name:
                self.table.selectRow(r)
                return
        raise KeyError(name)

    def _selection_changed(self, busy: Optional[bool] = None) -> None:
        name = self.selected_name()
        busy = self.downloading if busy is None else busy
        installed = False
        if name is not None:
            try:
                installed = catalogue.status(name)["state"] == "installed"
            except Exception:  # noqa: BLE001
                installed = False
        self.download_button.setText("Load" if installed else "Download and load")
        # offline mode: only what is already in the cache can be loaded (the status line says why)
        self.download_button.setEnabled(name is not None and not busy and (installed or not hub.is_offline()))

    # ------------------------------------------------------------------ download
    @property
    def downloading(self) -> bool:
        return self.task is not None and not self.task.done()

    def download_or_load(self):
        name = self.selected_name()
        if name is None or self.downloading:
            return None
        self.cancel_event = threading.Event()
        self.download_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.task = aio.start(self._download(name, self.cancel_event))
        return self.task

    def cancel(self) -> None:
        if self.cancel_event is not None:
            self.cancel_event.set()
            self.status.setText("Cancelling… (the part already downloaded is kept)")

    def _say(self, text: str, error: bool = False) -> None:
        self.status.setText(text)
        self.last_error = text if error else None

    async def _download(self, name: str, cancel: threading.Event) -> Optional[str]:
        entry = self._entries()[name]
        self.progress.setValue(0)
        self._say(f"{entry.title}: asking the hub for file sizes…")
        try:
            plan = await aio.in_thread(hub.prepare, entry.files)
            if plan.nothing_to_do:
                self._say(f"{entry.title}: already downloaded; checking the files…")
            else:
                self._say(f"{entry.title}: downloading {hub.format_size(plan.total_bytes)} "
                          f"({len(plan.fetch)} file(s))…")
            started, first = time.perf_counter(), None

            def on_progress(p: hub.DownloadProgress) -> None:
                nonlocal first
                if first is None:
                    first = p.bytes_done
                self.progress.setValue(int(1000 * p.fraction))
                self.progress.setFormat(f"{hub.format_size(p.bytes_done)} of {hub.format_size(p.bytes_total)}"
                                        f"{speed_text(p.bytes_done, first, time.perf_counter() - started)}"
                                        f" · file {p.file_index + 1}/{p.file_count}: {p.filename}")

            await aio.in_thread(hub.download, plan, aio.threadsafe(on_progress), cancel)
            problems = await aio.in_thread(hub.verify_cached, entry.files)  # what was cached before, too
            if problems:
                self._say(f"{entry.title}: {problems[0]}" + (f" (+{len(problems) - 1} more)" if len(problems) > 1
                                                             else "") + " — download it again", error=True)
                return None
        except hub.DownloadCancelled:
            self._say(f"{entry.title}: download cancelled. What was fetched is kept; Download resumes from there.")
            return None
        except hub.HubError as e:  # offline, unreachable, no space, refused, corrupt: one clear line
            self._say(f"{entry.title}: {e}", error=True)
            return None
        except OSError as e:
            self._say(f"{entry.title}: {e}", error=True)
            return None
        finally:
            self.cancel_button.setEnabled(False)
            self.refresh()
            self._selection_changed(busy=False)  # this coroutine is ending: Download is on offer again
        self.progress.setValue(1000)
        self.progress.setFormat("downloaded and checked")
        self._say(f"{entry.title}: ready — loading it in the studio.")
        self.model_chosen.emit(name)
        return name
