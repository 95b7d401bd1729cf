"""The history gallery: thumbnails of every finished image, searchable by
prompt. Clicking one restores its prompt and settings; deleting asks first
(``confirm`` is injectable so tests can answer for the user)."""

from __future__ import annotations

import time
from typing import Callable, Dict, Optional

from PySide6.QtCore import QModelIndex, QSize, Qt, Signal
from PySide6.QtGui import QAction, QIcon, QImage, QKeySequence, QPixmap, QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (
    QHBoxLayout, QLabel, QLineEdit, QListView, QMessageBox, QPushButton, QVBoxLayout, QWidget,
)

from . import aio
from ..studio.history_store import Entry, HistoryStore

THUMB = 64  # the bundled model's pictures at their own size (larger ones are scaled down)
CELL_WIDTH = 136  # a thumbnail's cell: wide enough for its caption line, "a red he… · 1234567890"
CAPTION_PAD = 6  # the cell's room around its thumbnail and caption
THUMB_BATCH = 16  # thumbnails read per executor job; the gallery fills in as each batch lands


def read_thumbnails(paths) -> list:
    """Scaled QImages of PNG files (None where unreadable); safe off the GUI thread (QImage, not QPixmap)."""
    out = []
    for path in paths:
        img = QImage(str(path))
        out.append(None if img.isNull() else img.scaled(THUMB, THUMB, Qt.AspectRatioMode.KeepAspectRatio,
                                                         Qt.TransformationMode.FastTransformation))
    return out
ID_ROLE = Qt.ItemDataRole.UserRole + 1


def ask_user(parent, title: str, text: str) -> bool:
    answer = QMessageBox.question(parent, title, text, QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                                  QMessageBox.StandardButton.No)
    return answer == QMessageBox.StandardButton.Yes


def caption(e: Entry, metrics, width: int) -> str:
    """A thumbnail's caption line: the prompt, ending in "…" where it does not fit, and the seed."""
    s = e.settings if isinstance(e.settings, dict) else {}
    seed = s.get("seed")
    tail = f" · {seed}" if isinstance(seed, int) and not isinstance(seed, bool) else ""
    room = max(0, width - metrics.horizontalAdvance(tail))
    prompt = " ".join(str(e.prompt).split())
    return metrics.elidedText(prompt, Qt.TextElideMode.ElideRight, room) + tail


def cell_height(metrics) -> int:
    """A thumbnail's cell: the picture, one caption line, padding."""
    return THUMB + metrics.height() + CAPTION_PAD


def describe(e: Entry) -> str:
    """The entry's tooltip; any record (a settings or stats field of any type) gives text, never an error."""
    s = e.settings if isinstance(e.settings, dict) else {}
    st = e.stats if isinstance(e.stats, dict) else {}
    how = "vanilla" if s.get("drafter") == "none" else str(s.get("drafter", "?"))[:20]
    if s.get("drafter") != "none" and s.get("k", 0):
        how += f", k={s.get('k')}, " + (f"λ={s['lam']}" if s.get("lam") is not None else f"δ={s.get('delta')}")
    try:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(e.created))
    except (OverflowError, OSError, ValueError):
        when = "?"
    secs = st.get("wall_seconds")
    secs = secs if isinstance(secs, (int, float)) and not isinstance(secs, bool) and abs(secs) < 1e9 else None
    return (f"{e.prompt}\nseed {s.get('seed')} · {how}\n{e.model} · {when}"
            + (f" · {secs:.2f} s" if isinstance(secs, (int, float)) else ""))


class HistoryGallery(QWidget):
    entry_activated = Signal(object)  # Entry
    entry_deleted = Signal(int)

    def __init__(self, store: HistoryStore, parent=None):
        super().__init__(parent)
        self.store = store
        self.confirm: Callable[[str, str], bool] = lambda title, text: ask_user(self, title, text)
        self._icons: Dict[int, QIcon] = {}
        self._thumb_task = None  # the coroutine filling in thumbnails (aio)
        pm = QPixmap(THUMB, THUMB)
        pm.fill(Qt.GlobalColor.darkGray)
        self._placeholder = QIcon(pm)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(6)
        top = QHBoxLayout()
        title = QLabel("History")
        title.setObjectName("sectionTitle")
        top.addWidget(title)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search prompts…")
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(self.refresh)
        top.addWidget(self.search, 1)
        self.count_label = QLabel()
        self.count_label.setObjectName("muted")
        top.addWidget(self.count_label)
        self.delete_button = QPushButton("Delete")
        self.delete_button.setToolTip("Delete the selected image from the history (asks first). Key: Delete")
        self.delete_button.clicked.connect(self.delete_selected)
        top.addWidget(self.delete_button)
        lay.addLayout(top)

        self.model = QStandardItemModel(self)
        self.view = QListView()
        self.view.setObjectName("gallery")
        self.view.setViewMode(QListView.ViewMode.IconMode)
        self.view.setFlow(QListView.Flow.LeftToRight)
        self.view.setWrapping(True)
        self.view.setResizeMode(QListView.ResizeMode.Adjust)
        self.view.setMovement(QListView.Movement.Static)
        self.view.setUniformItemSizes(True)
        self.view.setIconSize(QSize(THUMB, THUMB))
        self.view.setGridSize(QSize(CELL_WIDTH, cell_height(self.view.fontMetrics())))
        self.view.setSpacing(4)
        self.view.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.view.setWordWrap(False)  # one caption line (elided in refresh: the prompt shortened, the seed whole)
        self.view.setEditTriggers(QListView.EditTrigger.NoEditTriggers)
        self.view.setModel(self.model)
        self.view.clicked.connect(self._clicked)
        self.view.activated.connect(self._clicked)
        delete = QAction("Delete", self.view)
        delete.setShortcut(QKeySequence.StandardKey.Delete)
        delete.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
        delete.triggered.connect(self.delete_selected)
        self.view.addAction(delete)
        self.view.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)
        lay.addWidget(self.view, 1)
        self.header_height = top.sizeHint().height() + lay.spacing()
        self.refresh()

    def least_height(self) -> int:
        """Tall enough for the search row and one row of whole thumbnails with their captions."""
        frame = 2 * self.view.frameWidth()
        return self.header_height + self.view.gridSize().height() + frame + self.view.spacing()

    def refresh(self, *_) -> None:
        """Redraw the thumbnails from the store; the selected entry stays selected (a new image arriving
        must not take the selection from the picture a person picked)."""
        selected = self.selected_id()
        entries = self.store.entries(self.search.text())
        self.model.clear()
        missing = []
        metrics, room = self.view.fontMetrics(), CELL_WIDTH - 8
        for e in entries:
            text = caption(e, metrics, room)
            icon = self._icons.get(e.id)
            item = QStandardItem(icon or self._placeholder, text)
            item.setData(e.id, ID_ROLE)
            item.setToolTip(describe(e))
            self.model.appendRow(item)
            if icon is None:
                missing.append((e.id, e.path))
        if selected is not None:
            self.select(selected)
        total = self.store.count()
        shown = len(entries)
        self.count_label.setText(f"{shown} of {total}" if self.search.text().strip() else f"{total} image" + ("" if total == 1 else "s"))
        if missing:
            if self._thumb_task is not None:
                self._thumb_task.cancel()
            self._thumb_task = aio.start(self._load_thumbnails(missing))

    async def _load_thumbnails(self, missing: list) -> None:
        """Read the thumbnails in the I/O executor, a batch at a time, and put each on its item."""
        for i in range(0, len(missing), THUMB_BATCH):
            batch = missing[i:i + THUMB_BATCH]
            images = await aio.in_thread(read_thumbnails, [path for _, path in batch])
            rows = {self.model.item(r).data(ID_ROLE): r for r in range(self.model.rowCount())}
            for (entry_id, _), img in zip(batch, images):
                icon = self._placeholder if img is None else QIcon(QPixmap.fromImage(img))
                self._icons[entry_id] = icon
                if entry_id in rows:
                    self.model.item(rows[entry_id]).setIcon(icon)

    @property
    def thumbnails_pending(self) -> bool:
        return self._thumb_task is not None and not self._thumb_task.done()

    def entry_at(self, row: int) -> Optional[Entry]:
        item = self.model.item(row)
        return self.store.get(item.data(ID_ROLE)) if item is not None else None

    def _clicked(self, index) -> None:
        e = self.entry_at(index.row())
        if e is not None:
            self.entry_activated.emit(e)

    def selected_id(self) -> Optional[int]:
        idx = self.view.currentIndex()
        return idx.data(ID_ROLE) if idx.isValid() else None

    def select(self, entry_id: int) -> bool:
        """Select (and scroll to) the entry ``entry_id``, as a click would, without opening it; False when it
        is not shown (gone, or filtered out by the search)."""
        for row in range(self.model.rowCount()):
            if self.model.item(row).data(ID_ROLE) == entry_id:
                index = self.model.index(row, 0)
                self.view.setCurrentIndex(index)
                self.view.scrollTo(index)
                return True
        return False

    def clear_selection(self) -> None:
        """No entry highlighted (the picture shown is none of them)."""
        self.view.setCurrentIndex(QModelIndex())
        self.view.clearSelection()

    def selected(self) -> Optional[Entry]:
        idx = self.view.currentIndex()
        return self.entry_at(idx.row()) if idx.isValid() else None

    def delete_selected(self) -> bool:
        e = self.selected()
        if e is None:
            return False
        if not self.confirm("Delete image", f"Delete “{e.prompt}” from the history? Its PNG file is removed too."):
            return False
        self.store.delete(e.id)
        self._icons.pop(e.id, None)
        self.refresh()
        self.entry_deleted.emit(e.id)
        return True
