"""The canvas: the image as it forms, a progress bar, zoom, a decision overlay,
and dragging the picture out as a PNG."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Callable, Optional

import numpy as np
from PySide6.QtCore import QMimeData, QPoint, QRect, QSize, Qt, QUrl, Signal
from PySide6.QtGui import QColor, QDrag, QImage, QPainter, QPixmap
from PySide6.QtWidgets import (
    QApplication, QCheckBox, QComboBox, QHBoxLayout, QLabel, QScrollArea, QSizePolicy, QVBoxLayout,
    QWidget,
)

from ..engine.decisions import ACCEPTED_EXACT, ACCEPTED_RELAXED, BY_TARGET, DECISION_NAMES
from ..export import target_forwards
from . import tooltips as tt
from .progress_bar import FittedProgressBar
from ..studio.jobs import UNFILLED, Frame
from ..studio.preferences import ZOOMS

# overlay colours by how the engine decided each token
DECISION_COLOURS = {BY_TARGET: QColor(80, 140, 255, 105), ACCEPTED_EXACT: QColor(60, 200, 120, 105),
                    ACCEPTED_RELAXED: QColor(255, 150, 40, 125)}
LEGEND_TIPS = {BY_TARGET: "sampled by the target model itself", ACCEPTED_EXACT: "drafted and accepted exactly",
               ACCEPTED_RELAXED: "drafted and accepted thanks to LANTERN's relaxation"}
LEGEND_NAMES_WIDTH = 640  # px of canvas: narrower, the legend shows its swatches alone


def to_qimage(image: np.ndarray) -> QImage:
    """(H, W, 3) uint8 → a QImage that owns its pixels."""
    a = np.ascontiguousarray(image, dtype=np.uint8)
    h, w = a.shape[:2]
    return QImage(a.data, w, h, 3 * w, QImage.Format.Format_RGB888).copy()


class ImageView(QWidget):
    """Paints the image at an integer scale with crisp pixels, plus the overlay."""

    painted = Signal()
    drag_started = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.qimage: Optional[QImage] = None
        self.decisions: Optional[np.ndarray] = None
        self.grid = 0
        self.zoom = "fit"
        self.overlay = False
        self._press: Optional[QPoint] = None
        self.make_drag_file: Optional[Callable[[], Optional[Path]]] = None
        self.least = QSize(96, 96)  # its minimum size at zoom "fit"
        self.hint = "Type a prompt and press Enter (or Generate)"  # drawn while there is no picture
        self.setMinimumSize(self.least)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setCursor(Qt.CursorShape.OpenHandCursor)

    def set_image(self, qimage: Optional[QImage], decisions: Optional[np.ndarray], grid: int) -> None:
        resized = self.qimage is None or qimage is None or qimage.size() != self.qimage.size()
        self.qimage, self.decisions, self.grid = qimage, decisions, grid
        if resized:
            self._update_size()
        self.update()

    def scale(self) -> float:
        if self.qimage is None:
            return 1.0
        if self.zoom != "fit":
            return float(self.zoom)
        w, h = self.qimage.width(), self.qimage.height()
        fit = min(self.width() / w, self.height() / h)
        return float(int(fit)) if fit >= 1 else fit  # integer scales keep pixels crisp

    def _update_size(self) -> None:
        if self.qimage is not None and self.zoom != "fit":
            s = int(self.zoom)
            self.setMinimumSize(self.qimage.width() * s, self.qimage.height() * s)
        else:
            self.setMinimumSize(self.least)
        self.updateGeometry()

    def set_zoom(self, zoom) -> None:
        self.zoom = zoom
        self._update_size()
        self.update()

    def target_rect(self) -> QRect:
        s = self.scale()
        w, h = int(self.qimage.width() * s), int(self.qimage.height() * s)
        return QRect((self.width() - w) // 2, (self.height() - h) // 2, w, h)

    def paintEvent(self, event):  # noqa: N802
        p = QPainter(self)
        p.fillRect(self.rect(), self.palette().window())
        if self.qimage is None:
            p.setPen(QColor(150, 150, 160))
            p.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, self.hint)
            p.end()
            return
        p.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform, False)
        r = self.target_rect()
        p.drawImage(r, self.qimage)
        if self.overlay and self.decisions is not None and self.grid:
            cw, ch = r.width() / self.grid, r.height() / self.grid
            p.setPen(Qt.PenStyle.NoPen)
            for idx in np.flatnonzero(self.decisions != UNFILLED):
                colour = DECISION_COLOURS.get(int(self.decisions[idx]))
                if colour is None:
                    continue
                y, x = divmod(int(idx), self.grid)
                x0, y0 = r.x() + round(x * cw), r.y() + round(y * ch)
                p.fillRect(QRect(x0, y0, round((x + 1) * cw) - round(x * cw), round((y + 1) * ch) - round(y * ch)), colour)
        p.end()
        self.painted.emit()

    # ------------------------------------------------------------------ drag out
    def mousePressEvent(self, event):  # noqa: N802
        if event.button() == Qt.MouseButton.LeftButton:
            self._press = event.position().toPoint()
        super().mousePressEvent(event)

    def mouseMoveEvent(self, event):  # noqa: N802
        if self._press is None or self.qimage is None or not (event.buttons() & Qt.MouseButton.LeftButton):
            return
        if (event.position().toPoint() - self._press).manhattanLength() < QApplication.startDragDistance():
            return
        self._press = None
        drag = QDrag(self)
        drag.setMimeData(self.mime_data())
        thumb = QPixmap.fromImage(self.qimage).scaled(96, 96, Qt.AspectRatioMode.KeepAspectRatio,
                                                      Qt.TransformationMode.FastTransformation)
        drag.setPixmap(thumb)
        self.drag_started.emit()
        drag.exec(Qt.DropAction.CopyAction)

    def mouseReleaseEvent(self, event):  # noqa: N802
        self._press = None
        super().mouseReleaseEvent(event)

    def mime_data(self) -> QMimeData:
        data = QMimeData()
        data.setImageData(self.qimage)
        path = self.make_drag_file() if self.make_drag_file else None
        if path is None:
            path = Path(tempfile.mkdtemp(prefix="lantern-drag-")) / "lantern.png"
            self.qimage.save(str(path), "PNG")
        data.setUrls([QUrl.fromLocalFile(str(path))])
        return data


class Canvas(QWidget):
    """Toolbar (zoom, overlay + legend), the image view in a scroll area, progress."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.image: Optional[np.ndarray] = None  # the picture shown, (H, W, 3) uint8
        self.decisions: Optional[np.ndarray] = None
        self.grid = 0
        self.frame_job_id: Optional[int] = None  # the job whose frame is shown (None: an image from elsewhere)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(6)

        bar = QHBoxLayout()
        bar.addWidget(QLabel("Zoom"))
        self.zoom = QComboBox()
        self.zoom.setToolTip(tt.ZOOM)
        for z in ZOOMS:
            self.zoom.addItem("Fit" if z == "fit" else f"{z}×", z)
        self.zoom.currentIndexChanged.connect(lambda i: self.view.set_zoom(self.zoom.itemData(i)))
        bar.addWidget(self.zoom)
        bar.addSpacing(12)
        self.overlay = QCheckBox("Decision overlay")
        self.overlay.setToolTip(tt.OVERLAY)
        self.overlay.toggled.connect(self._set_overlay)
        bar.addWidget(self.overlay)
        self.legend = QWidget()
        leg = QHBoxLayout(self.legend)
        leg.setContentsMargins(6, 0, 0, 0)
        leg.setSpacing(6)
        self.legend_names = []  # hidden in a narrow canvas (the swatches' tooltips name them)
        for d, name in DECISION_NAMES.items():
            c = DECISION_COLOURS[d]
            sw = QLabel()
            sw.setFixedSize(QSize(12, 12))
            sw.setStyleSheet(f"background: rgb({c.red()},{c.green()},{c.blue()}); border-radius: 2px;")
            sw.setToolTip(f"{name}: {LEGEND_TIPS[d]}")
            label = QLabel(name)
            label.setToolTip(sw.toolTip())
            leg.addWidget(sw)
            leg.addWidget(label)
            self.legend_names.append(label)
        bar.addStretch(1)
        self.toolbar = bar
        lay.addLayout(bar)
        # the legend sits beside the progress bar, not in the toolbar: the toolbar stays narrow enough for a
        # narrow window's middle column, and ticking the overlay changes no height. In a narrow canvas it
        # shows its swatches alone (their names crushed the progress text at 900×600): see resizeEvent
        self.legend.setVisible(False)

        self.view = ImageView()
        self.scroll = QScrollArea()
        self.scroll.setObjectName("canvasScroll")
        self.scroll.setWidgetResizable(True)
        self.scroll.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.scroll.setWidget(self.view)
        lay.addWidget(self.scroll, 1)

        self.progress = FittedProgressBar()  # its text fits (abbreviated, elided), whole in its tooltip
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setFormat("idle")
        self.progress.setTextVisible(True)
        bottom = QHBoxLayout()
        bottom.setSpacing(6)
        bottom.addWidget(self.progress, 1)
        bottom.addWidget(self.legend)
        lay.addLayout(bottom)

    def resizeEvent(self, event):  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self._fit_legend()

    def _fit_legend(self) -> None:
        """The legend's names only where the progress text keeps room for all of its words."""
        wide = self.width() >= LEGEND_NAMES_WIDTH
        for label in self.legend_names:
            label.setVisible(wide)

    def _set_overlay(self, on: bool) -> None:
        self.view.overlay = on
        self.legend.setVisible(on)
        self.view.update()

    def set_overlay(self, on: bool) -> None:
        self.overlay.setChecked(on)

    def set_zoom(self, zoom) -> None:
        self.zoom.setCurrentIndex(max(0, self.zoom.findData(zoom)))

    def start(self, total: int, label: str = "") -> None:
        self.progress.setRange(0, max(1, total))
        self.progress.setValue(0)
        self.progress.setFormat(f"{label}starting…")

    def show_frame(self, frame: Frame) -> None:
        self.grid = int(round(len(frame.decisions) ** 0.5))
        self.image, self.decisions, self.frame_job_id = frame.image, frame.decisions, frame.job_id
        self.view.set_image(to_qimage(frame.image), frame.decisions, self.grid)
        self.progress.setRange(0, frame.total)
        self.progress.setValue(frame.n_fixed)
        self.progress.setFormat(f"%v / %m tokens · {target_forwards(frame.target_forwards)} target forwards")

    def show_image(self, image: np.ndarray, decisions: Optional[np.ndarray] = None) -> None:
        n = int(decisions.size) if decisions is not None else 0
        self.grid = int(round(n ** 0.5)) if n else 0
        self.image, self.decisions, self.frame_job_id = image, decisions, None
        self.view.set_image(to_qimage(image), decisions, self.grid)
        if n:
            self.progress.setRange(0, n)
            self.progress.setValue(int((decisions != UNFILLED).sum()))
            self.progress.setFormat("%v / %m tokens")

    def set_status(self, text: str) -> None:
        self.progress.setFormat(text)

    def qimage(self) -> Optional[QImage]:
        return self.view.qimage
