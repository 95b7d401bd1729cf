"""Under the prompt box of a model that snaps prompts to emoji identities: what the prompt
matched, the next matches as one-click alternatives, and the art style to draw in.

Matching runs the sentence encoder, so it never runs on the GUI thread: a
:class:`Matcher` QObject in its own thread answers requests, typed text is sent
to it 250 ms after the last key (debounced), and only the answer to the newest
request is shown. The model's matcher arrives with its :class:`~.jobs.ModelInfo`
(an opaque callable; the GUI never sees a tensor).
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from PySide6.QtCore import QObject, QSize, Qt, QThread, QTimer, Signal, Slot
from PySide6.QtGui import QIcon, QPixmap
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

DEBOUNCE_MS = 250
ALTERNATIVES = 3
DEFAULT_STYLE, ANY_STYLE = "", "any"  # engine/snap.py's setting values
LINK_COLOUR, MUTED_COLOUR = "#f0b050", "#9a9cab"  # the studio style sheet's accent and muted text


@dataclass(frozen=True)
class PromptMatch:
    """A match as plain data (made in the matcher's thread from the engine's answer)."""

    request: int
    prompt: str
    note: str
    name: str
    similarity: float
    style: str
    alternatives: tuple  # ((name, similarity), ...)


class Matcher(QObject):
    """Lives in its own thread; ``match(request, prompt, style, seed)`` → ``matched`` or ``failed``."""

    matched = Signal(object)  # PromptMatch
    failed = Signal(int, str)  # request, message

    def __init__(self):
        super().__init__()
        self.fn: Optional[Callable] = None

    @Slot(object)
    def set_function(self, fn) -> None:
        self.fn = fn

    @Slot(int, str, str, int)
    def match(self, request: int, prompt: str, style: str, seed: int) -> None:
        if self.fn is None:
            return
        try:
            m = self.fn(prompt, style, seed, ALTERNATIVES)
        except ValueError as e:  # PromptError / SettingsError: say what is wrong, in the line itself
            self.failed.emit(request, str(e))
            return
        except Exception as e:  # noqa: BLE001 - a broken matcher must not take the studio down
            self.failed.emit(request, f"matching failed: {type(e).__name__}: {e}")
            return
        self.matched.emit(PromptMatch(request, prompt, m.note(), m.name, float(m.similarity), m.style,
                                      tuple((name, float(sim)) for _i, name, sim in m.alternatives)))


class MatchLine(QWidget):
    """The match line, the alternatives and the style selector. ``alternative_chosen`` carries the
    name to put in the prompt box; ``style()`` is the ``style`` setting of the next job."""

    alternative_chosen = Signal(str)
    style_changed = Signal()
    _request = Signal(int, str, str, int)
    _set_fn = Signal(object)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("matchLine")
        v = QVBoxLayout(self)
        v.setContentsMargins(0, 0, 0, 0)
        v.setSpacing(4)
        self.label = QLabel("")
        self.label.setObjectName("matchNote")
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.label.setToolTip("What the model will draw for this prompt: the emoji it matched, the art style, and "
                              "how close the match is (sentence similarity, 0–1)")
        v.addWidget(self.label)
        # the next matches as links in one wrapping line (buttons would not fit a narrow panel)
        self.alternatives = QLabel("")
        self.alternatives.setObjectName("matchAlternatives")
        self.alternatives.setWordWrap(True)
        self.alternatives.setTextFormat(Qt.TextFormat.RichText)
        self.alternatives.setTextInteractionFlags(Qt.TextInteractionFlag.LinksAccessibleByMouse
                                                  | Qt.TextInteractionFlag.LinksAccessibleByKeyboard)
        self.alternatives.linkActivated.connect(self._alternative_link)
        self.alternatives.setToolTip("Other emoji this prompt could mean: click one to draw it instead")
        v.addWidget(self.alternatives)
        self.shown_alternatives: tuple = ()
        style_row = QHBoxLayout()
        style_row.addWidget(QLabel("Style"))
        self.style_box = QComboBox()
        self.style_box.setIconSize(QSize(24, 24))
        self.style_box.setToolTip("The art style to draw in: the model's default, any one (a different one per "
                                  "seed), or a style by name")
        self.style_box.currentIndexChanged.connect(lambda _i: (self.style_changed.emit(), self.request_match()))
        style_row.addWidget(self.style_box, 1)
        v.addLayout(style_row)
        self._show_alternatives(())

        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(DEBOUNCE_MS)
        self._timer.timeout.connect(self._send)
        self._latest = 0
        self._text = ""
        self._seed = 0
        self.thread_ = QThread(self)
        self.thread_.setObjectName("lantern-matcher")
        self.matcher = Matcher()
        self.matcher.moveToThread(self.thread_)
        self._request.connect(self.matcher.match, Qt.ConnectionType.QueuedConnection)
        self._set_fn.connect(self.matcher.set_function, Qt.ConnectionType.QueuedConnection)
        self.matcher.matched.connect(self._matched)
        self.matcher.failed.connect(self._failed)
        self.thread_.start()
        self.setVisible(False)

    # ------------------------------------------------------------------ model
    def set_model(self, fn: Optional[Callable], styles=(), default_style: str = "", previews=None) -> None:
        """A snapping model's matcher and styles (``fn`` None: hide the line — the model takes text as it is)."""
        self._set_fn.emit(fn)
        self.setVisible(fn is not None)
        self.style_box.blockSignals(True)
        keep = self.style()
        self.style_box.clear()
        if fn is not None:
            pretty = ("any design" if default_style == ANY_STYLE else default_style.replace("-", " ")
                      if default_style else "model's choice")
            self.style_box.addItem(f"default ({pretty})", DEFAULT_STYLE)
            self.style_box.addItem("any (one per seed)", ANY_STYLE)
            for s in styles:
                icon = QIcon()
                path = (previews or {}).get(s)
                if path and Path(path).is_file():
                    icon = QIcon(QPixmap(str(path)))
                self.style_box.addItem(icon, s.replace("-", " "), s)
            self.set_style(keep)
        self.style_box.blockSignals(False)
        self.label.setText("")
        self._show_alternatives(())
        if fn is not None:
            self.request_match()

    def shutdown(self) -> None:
        """Stop the matcher's thread (the window is closing); a match in flight finishes first (~10 ms)."""
        self._timer.stop()
        self.thread_.quit()
        self.thread_.wait(2000)

    # ------------------------------------------------------------------ style
    def style(self) -> str:
        data = self.style_box.currentData()
        return data if isinstance(data, str) else DEFAULT_STYLE

    def set_style(self, style: str) -> None:
        i = self.style_box.findData(style or DEFAULT_STYLE)
        self.style_box.setCurrentIndex(max(0, i))

    # ------------------------------------------------------------------ matching
    def prompt_changed(self, text: str, seed: int = 0) -> None:
        self._text, self._seed = text, seed
        if self.isVisibleTo(self.parentWidget()) if self.parentWidget() else self.isVisible():
            self._timer.start()

    def request_match(self) -> None:
        self._timer.start()

    def _send(self) -> None:
        self._latest += 1
        if not self._text.strip():
            self.label.setText("type what to draw; the closest emoji this model knows is shown here")
            self._show_alternatives(())
            return
        self._request.emit(self._latest, self._text, self.style(), int(self._seed))

    def _matched(self, m: PromptMatch) -> None:
        if m.request != self._latest:
            return  # an older request's answer: the text has changed since
        self.label.setText(f"Draws: {m.note}")
        self._show_alternatives(m.alternatives)

    def _failed(self, request: int, message: str) -> None:
        if request == self._latest:
            self.label.setText(message)
            self._show_alternatives(())

    def _show_alternatives(self, alternatives) -> None:
        self.shown_alternatives = tuple(name for name, _sim in alternatives)
        self.alternatives.setVisible(bool(alternatives))
        links = " · ".join(f'<a href="{i}" style="color:{LINK_COLOUR}">{html.escape(name)}</a> '
                           f'<span style="color:{MUTED_COLOUR}">{sim:.2f}</span>'
                           for i, (name, sim) in enumerate(alternatives))
        self.alternatives.setText(f"or: {links}" if alternatives else "")

    def _alternative_link(self, href: str) -> None:
        try:
            self.alternative_chosen.emit(self.shown_alternatives[int(href)])
        except (ValueError, IndexError):
            pass

    def choose_alternative(self, i: int) -> None:
        """As a click on the i-th alternative (keyboard shortcuts and tests)."""
        self._alternative_link(str(i))
