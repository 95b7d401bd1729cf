"""Export controls under the canvas: upscale factor and filter, Save PNG…
(Ctrl+S) and Copy (Ctrl+C). Saving goes through ``lantern_studio.export.save_png``
so the PNG carries the prompt, settings and stats."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Optional

import numpy as np
from PySide6.QtCore import Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QPushButton, QWidget

from ..export import UPSCALE_FACTORS, save_png, slug, upscale
from ..paths import cache_dir
from .canvas import to_qimage

# until a person picks another: ×8 with crisp pixels (a 64×64 picture becomes a 512×512 file, each pixel an
# 8×8 block), a size that reads in any image viewer; ×1 is the picture's own size
DEFAULT_FACTOR = 8
DEFAULT_METHOD = "nearest"


class ExportBar(QWidget):
    save_requested = Signal()
    copy_requested = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(8)
        lay.addWidget(QLabel("Export"))
        self.factor = QComboBox()
        for f in UPSCALE_FACTORS:
            self.factor.addItem(f"×{f}", f)  # ×1: the original size
        self.factor.setToolTip("Upscale the exported / copied image by an integer factor (×1: the original size)")
        lay.addWidget(self.factor)
        self.method = QComboBox()
        self.method.addItem("crisp", "nearest")
        self.method.addItem("smooth", "lanczos")
        self.method.setToolTip("Upscaling filter: crisp pixels (nearest neighbour) or smooth (Lanczos)")
        lay.addWidget(self.method)
        lay.addStretch(1)
        self.save_button = QPushButton("Save PNG…")
        self.save_button.setToolTip("Save the finished image with its prompt, settings and stats embedded (Ctrl+S)")
        self.save_button.clicked.connect(self.save_requested)
        self.copy_button = QPushButton("Copy")
        self.copy_button.setToolTip("Copy the finished image to the clipboard (Ctrl+C)")
        self.copy_button.clicked.connect(self.copy_requested)
        lay.addWidget(self.save_button)
        lay.addWidget(self.copy_button)
        self.set_choice(DEFAULT_FACTOR, DEFAULT_METHOD)

    def factor_value(self) -> int:
        return int(self.factor.currentData())

    def method_value(self) -> str:
        return str(self.method.currentData())

    def set_choice(self, factor: int, method: str) -> None:
        self.factor.setCurrentIndex(max(0, self.factor.findData(int(factor))))
        self.method.setCurrentIndex(max(0, self.method.findData(method)))

    def copy_to_clipboard(self, image: np.ndarray) -> None:
        scaled = np.asarray(upscale(image, self.factor_value(), self.method_value()).convert("RGB"))
        QGuiApplication.clipboard().setImage(to_qimage(scaled))

    def drag_png(self, image: np.ndarray, record: Optional[dict]) -> Path:
        """A PNG to drag out of the window (a fresh folder under the cache's ``drag/``, emptied at close), scaled
        as Save scales it: with its record, or marked partial."""
        folder = cache_dir() / "drag"
        folder.mkdir(parents=True, exist_ok=True)
        name = slug(record.get("prompt", "lantern")) + ".png" if record else "lantern-partial.png"
        return save_png(Path(tempfile.mkdtemp(prefix="drag-", dir=folder)) / name, image,
                        record if record else {"partial": True}, overwrite=True,
                        factor=self.factor_value(), method=self.method_value())
