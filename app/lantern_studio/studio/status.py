"""The status line's messages, queued instead of overwritten (``gui/status_line.py`` draws them).

At 900×600 a finished job's "Done #3 in 0.81 s" was replaced by the next job's "Generating #4…" before
anyone could read it. Here every message with a time on screen (``seconds`` > 0: a result, a confirmation)
is shown for at least :data:`MIN_SHOW` seconds before another replaces it; messages that arrive meanwhile
wait in order. A message without a time (progress: "Generating #4…", "Getting the model ready: …") stays
until the next one; a newer message replaces a progress message still waiting (only the latest
progress is worth showing, and none once a result came after it).

What a person just did is answered at once (``now=True``): the message on screen, if it has not had its
time, goes back to the front of the queue and is shown again after it, so nothing is lost either way.
The clock is passed in (seconds, any origin), so a test drives time by hand.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Deque, Optional

MIN_SHOW = 1.5  # s: the least time a timed message stays before a waiting one replaces it
MAX_WAITING = 6  # more than this many waiting: the oldest timed ones are dropped (a burst of results)


@dataclass
class Message:
    text: str
    seconds: float  # time on screen; 0: until the next message (progress)
    shown_at: Optional[float] = None

    @property
    def progress(self) -> bool:
        return self.seconds <= 0


@dataclass
class StatusQueue:
    current: Optional[Message] = None
    waiting: Deque[Message] = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.waiting is None:
            self.waiting = deque()

    @property
    def text(self) -> str:
        return "" if self.current is None else self.current.text

    def _free(self, t: float) -> bool:
        """Whether the message on screen may be replaced now."""
        c = self.current
        return c is None or c.progress or t - c.shown_at >= min(MIN_SHOW, c.seconds)

    def _show(self, m: Message, t: float) -> None:
        m.shown_at = t
        self.current = m

    def post(self, text: str, seconds: float, t: float, now: bool = False) -> str:
        """A new message at time ``t``; → the text on screen afterwards."""
        m = Message(str(text), max(0.0, float(seconds)))
        if not m.text:
            return self.text
        if self.current is not None and self.current.text == m.text:  # the same words again: a fresh time
            self.current.seconds, self.current.shown_at = m.seconds, t
            return self.text
        if now:
            c = self.current
            if c is not None and not c.progress and t - c.shown_at < min(MIN_SHOW, c.seconds):
                left = c.seconds - (t - c.shown_at)
                self.waiting.appendleft(Message(c.text, max(MIN_SHOW, left)))  # shown again after this one
            self._show(m, t)
            return self.text
        if self._free(t) and not self.waiting:
            self._show(m, t)
            return self.text
        # only the latest progress is worth showing, and none once a result came after it ("Generating #4…"
        # waiting behind "Done #3" is stale once "Done #4" arrives)
        self.waiting = deque(w for w in self.waiting if not w.progress)
        self.waiting = deque(w for w in self.waiting if w.text != m.text)
        self.waiting.append(m)
        while len(self.waiting) > MAX_WAITING:
            oldest = next((w for w in self.waiting if not w.progress), self.waiting[0])
            self.waiting.remove(oldest)
        return self.tick(t)

    def tick(self, t: float) -> str:
        """Time passed: a timed message past its time goes, the next waiting one shows; → the text on screen."""
        c = self.current
        if self.waiting and self._free(t):
            self._show(self.waiting.popleft(), t)
        elif c is not None and not c.progress and t - c.shown_at >= c.seconds:
            self.current = None
        return self.text

    def clear(self) -> None:
        self.current = None
        self.waiting.clear()

    @property
    def idle(self) -> bool:
        """Nothing waits and nothing on screen will go by itself (no timer needed)."""
        return not self.waiting and (self.current is None or self.current.progress)
