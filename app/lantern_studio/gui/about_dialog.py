"""Help → About: the version, what the studio does and the licences of what ships
(:func:`lantern_studio.about.about_text`), rendered from Markdown, scrollable, with the icon."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from PySide6.QtCore import Qt
from PySide6.QtGui import QIcon, QPixmap
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QHBoxLayout, QLabel, QTextBrowser, QVBoxLayout, QWidget

from ..about import about_text
from ..paths import resources_dir

ICON_SIZES = (16, 32, 48, 64, 128, 256)


def icons_dir() -> Optional[Path]:
    try:
        d = resources_dir() / "icons"
        return d if d.is_dir() else None
    except Exception:  # noqa: BLE001
        return None


def app_icon() -> QIcon:
    """The lantern icon at every shipped size (empty QIcon if the files are missing).
    Also suitable for ``QApplication.setWindowIcon``."""
    icon = QIcon()
    d = icons_dir()
    if d is None:
        return icon
    for px in ICON_SIZES:
        f = d / f"lantern-studio-{px}.png"
        if f.is_file():
            icon.addFile(str(f))
    svg = d / "lantern-studio.svg"
    if icon.isNull() and svg.is_file():
        icon.addFile(str(svg))
    return icon


class AboutDialog(QDialog):
    def __init__(self, parent: Optional[QWidget] = None, card: Optional[Path] = None):
        super().__init__(parent)
        self.setWindowTitle("About Lantern Studio")
        self.setObjectName("aboutDialog")
        icon = app_icon()
        if not icon.isNull():
            self.setWindowIcon(icon)

        self.icon_label = QLabel()
        self.icon_label.setObjectName("aboutIcon")
        pix: QPixmap = icon.pixmap(96, 96) if not icon.isNull() else QPixmap()
        if not pix.isNull():
            self.icon_label.setPixmap(pix)
        self.icon_label.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignHCenter)
        self.icon_label.setFixedWidth(112)

        self.text = QTextBrowser()
        self.text.setObjectName("aboutText")
        self.text.setOpenExternalLinks(True)
        self.text.setMarkdown(about_text(card))
        self.text.setMinimumSize(520, 380)

        top = QHBoxLayout()
        top.addWidget(self.icon_label)
        top.addWidget(self.text, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        buttons.accepted.connect(self.accept)
        layout = QVBoxLayout(self)
        layout.addLayout(top, 1)
        layout.addWidget(buttons)
        self.resize(720, 520)

    def markdown(self) -> str:
        return self.text.toMarkdown()


def show_about(parent: Optional[QWidget] = None) -> AboutDialog:
    """Open the About box (modal to ``parent``) and return it."""
    dlg = AboutDialog(parent)
    dlg.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dlg.open()
    return dlg
