"""The prompt box of a class-conditional model: an ImageNet class name, with type-ahead.

Each class is offered once, as its first name with its id ("golden retriever ·
207"); choosing one puts the plain name in the box (or "#id" where another class
answers to the same name, as ImageNet's two "crane"s do). Anything typed still goes
to the model's class matcher, which accepts any synonym, an id, or a close
spelling and names its suggestions when nothing matches.
"""

from __future__ import annotations

from typing import Optional, Sequence

from PySide6.QtCore import QStringListModel, Qt, Signal
from PySide6.QtWidgets import QCompleter, QLineEdit


def primary_names(names: Sequence[str]) -> list:
    """What the box shows for each class: its first synonym, or '#id' where any other class
    also answers to that name (ImageNet's two "crane"s; "partridge" is also a grouse's synonym)."""
    owners: dict = {}
    for i, n in enumerate(names):
        for alias in {a.strip().lower() for a in n.split(",")}:
            owners.setdefault(alias, set()).add(i)
    first = [n.split(",")[0].strip() for n in names]
    return [f if owners.get(f.lower()) == {i} else f"#{i}" for i, f in enumerate(first)]


class ClassPicker(QLineEdit):
    class_chosen = Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.names: tuple = ()
        self._shown: list = []
        self._model = QStringListModel(self)
        self.completer_ = QCompleter(self._model, self)
        self.completer_.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.completer_.setFilterMode(Qt.MatchFlag.MatchContains)
        self.completer_.setMaxVisibleItems(12)
        self.completer_.activated[str].connect(self._picked)
        self.setCompleter(self.completer_)
        self.setPlaceholderText("type a class name, e.g. golden retriever")
        self.setClearButtonEnabled(True)

    def set_names(self, names: Optional[Sequence[str]]) -> None:
        self.names = tuple(names or ())
        self._shown = primary_names(self.names)
        full = [f"{n.split(',')[0].strip()} · {i}" + (f"  ({', '.join(s.strip() for s in n.split(',')[1:3])})"
                                                      if "," in n else "")
                for i, n in enumerate(self.names)]
        self._model.setStringList(full)
        self.setToolTip(f"{len(self.names)} classes: type part of a name and pick one; an id (#207) works too")

    def _picked(self, text: str) -> None:
        try:
            i = int(text.split(" · ", 1)[1].split()[0])
        except (IndexError, ValueError):
            return
        self.setText(self._shown[i])
        self.class_chosen.emit(i)
