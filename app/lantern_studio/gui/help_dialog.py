"""Help ▸ How LANTERN works: what the drafter, the target, k and δ do, what the overlay's colours mean and
what "exact" promises, in plain words, beside a small picture of a decided token grid."""

from __future__ import annotations

from typing import Optional

from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QHBoxLayout, QTextBrowser, QVBoxLayout, QWidget

from ..engine.decisions import ACCEPTED_EXACT, ACCEPTED_RELAXED, BY_TARGET, DECISION_NAMES
from .canvas import DECISION_COLOURS

# the picture: a 4×4 grid of image tokens as one decode could have decided them (raster order, left to right)
EXAMPLE_GRID = (
    (BY_TARGET, ACCEPTED_EXACT, ACCEPTED_EXACT, ACCEPTED_RELAXED),
    (ACCEPTED_EXACT, BY_TARGET, ACCEPTED_RELAXED, ACCEPTED_EXACT),
    (ACCEPTED_EXACT, ACCEPTED_EXACT, BY_TARGET, ACCEPTED_EXACT),
    (ACCEPTED_RELAXED, ACCEPTED_EXACT, ACCEPTED_EXACT, BY_TARGET),
)
COLOUR_WORDS = {BY_TARGET: "blue", ACCEPTED_EXACT: "green", ACCEPTED_RELAXED: "orange"}

HOW_IT_WORKS = f"""\
## How LANTERN works

The model draws a picture as a grid of **tokens**: small squares, each one an entry of a **codebook** of
little patches, chosen one after the other from the top left. The **target** is the model itself; its
choice is the real one, but asking it for one token at a time is slow.

A **drafter** guesses the next few tokens cheaply. The target then checks all the guesses at once, in one
*target forward*: it keeps the guesses it agrees with and, at the first one it turns down, picks that
token itself. The fewer target forwards a picture needs, the sooner it is done.

Checking exactly keeps only the guesses the target would have made with the same chances. In a picture
many codebook entries look alike, so a guess is often *almost* right. LANTERN lets look-alikes count:

* **k**: how many look-alike codebook neighbours may stand in for a drafted token. With k = 0 none may.
* **δ**: how much probability may be moved to those neighbours, for each token. With δ = 0 none may:
  decoding is exact.

**The overlay's colours** (View ▸ Decision overlay):

* {COLOUR_WORDS[BY_TARGET]}, *{DECISION_NAMES[BY_TARGET]}*: picked by the target itself (the first token,
  and each place where a guess was turned down);
* {COLOUR_WORDS[ACCEPTED_EXACT]}, *{DECISION_NAMES[ACCEPTED_EXACT]}*: guessed by the drafter and kept by the
  exact check;
* {COLOUR_WORDS[ACCEPTED_RELAXED]}, *{DECISION_NAMES[ACCEPTED_RELAXED]}*: guessed by the drafter and kept only
  because look-alike neighbours stood in for it.

**What "exact" guarantees:**

* δ = 0 or k = 0: the picture comes from exactly the model's own distribution, the same chances as
  drawing it token by token, only sooner.
* A drafted token picked deterministically (Greedy on): each step's output moves at most δ in total
  variation from the model's own; no outcome of the step gains or loses more than δ of probability.
* Sampled drafts (Greedy off): the bound holds per token only: no token becomes likelier than its own
  chance plus the share moved to it, and a whole step can move further than δ. The Step-bounded choice
  keeps every step within δ for sampled drafts too.
"""


class DecisionPicture(QWidget):
    """A small token grid coloured as the canvas's overlay colours it, with a key."""

    CELL = 30

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("decisionPicture")
        n = len(EXAMPLE_GRID)
        self.setFixedSize(QSize(n * self.CELL + 2, n * self.CELL + 2 + 3 * 20 + 8))

    @staticmethod
    def colour(decision: int) -> QColor:
        c = DECISION_COLOURS[decision]
        return QColor(c.red(), c.green(), c.blue())  # opaque: the overlay's hue without the image under it

    def paintEvent(self, _event) -> None:  # noqa: N802 - Qt's name
        p = QPainter(self)
        c = self.CELL
        for row, decisions in enumerate(EXAMPLE_GRID):
            for col, d in enumerate(decisions):
                p.fillRect(QRect(1 + col * c, 1 + row * c, c - 2, c - 2), self.colour(d))
        y = len(EXAMPLE_GRID) * c + 10
        p.setPen(self.palette().text().color())
        for d, name in DECISION_NAMES.items():
            p.fillRect(QRect(1, y + 3, 12, 12), self.colour(d))
            p.drawText(QRect(20, y, self.width() - 20, 18), int(Qt.AlignmentFlag.AlignVCenter), name)
            y += 20
        p.end()


class HowItWorksDialog(QDialog):
    def __init__(self, parent: Optional[QWidget] = None):
        super().__init__(parent)
        self.setWindowTitle("How LANTERN works")
        self.setObjectName("howItWorksDialog")
        self.picture = DecisionPicture()
        self.text = QTextBrowser()
        self.text.setObjectName("howItWorksText")
        self.text.setMarkdown(HOW_IT_WORKS)
        self.text.setMinimumSize(420, 320)
        top = QHBoxLayout()
        top.addWidget(self.picture, 0, Qt.AlignmentFlag.AlignTop)
        top.addWidget(self.text, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(top, 1)
        layout.addWidget(buttons)
        self.resize(680, 560)


def show_how_it_works(parent: Optional[QWidget] = None) -> HowItWorksDialog:
    """Open the explanation (not modal: it can stay open beside the window) and return it."""
    dlg = HowItWorksDialog(parent)
    dlg.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dlg.show()
    return dlg
