"""What the studio session tells its views, as typed events delivered to subscribers.

A view subscribes to the event types it draws (``session.events.subscribe(JobFinished, fn)``) and is
called, in subscription order, after the session has updated its own state for that event: a view never
has to be told "changed" by hand, and never reads a state the session is still changing.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Type

from .compare import ComparePair
from .display import Target
from .history_store import Entry
from .jobs import Frame, Job, JobResult, ModelInfo


@dataclass(frozen=True)
class ModelLoading:
    spec: Optional[str]
    message: str  # "loading model…", then what the load is doing ("loading text encoder…")
    started: bool = False  # the load has just started (then its steps follow)


@dataclass(frozen=True)
class ModelReady:
    info: ModelInfo
    changed: bool  # another model than the one before (the chart starts over)
    switched: bool = False  # the person moved from one loaded model to another: the controls take its defaults


@dataclass(frozen=True)
class ModelFailed:
    spec: Optional[str]
    message: str


@dataclass(frozen=True)
class StepsChanged:
    info: ModelInfo  # with its new ``steps``
    doing: str  # what the background compile is doing now ("" when nothing)
    compiled_now: bool  # steps just became compiled


@dataclass(frozen=True)
class QueueChanged:
    pass


@dataclass(frozen=True)
class JobQueued:
    jobs: tuple  # the request's jobs (one, a Compare's two, a ×4's four, a Sweep's)
    waiting_for: Optional[str]  # what the model load is doing, when the jobs wait for it


@dataclass(frozen=True)
class JobStarted:
    job: Job
    target: Target


@dataclass(frozen=True)
class FrameShown:
    frame: Frame
    target: Target


@dataclass(frozen=True)
class JobFinished:
    result: JobResult
    record: dict  # JSON-ready, as the history and the PNG store it
    entry: Optional[Entry]  # its history row (None: the history could not take it; a Notice says why)
    cell: Optional[int]  # its cell in the ×4 grid
    pair: Optional[ComparePair]  # the Compare it completed
    on_lane: bool  # drawn in a race lane
    followed: bool  # the job whose numbers the stats show


@dataclass(frozen=True)
class JobStopped:
    job: Job
    how: str  # "Cancelled" | "Failed"
    message: str
    cell: Optional[int]
    pair: Optional[ComparePair]
    on_lane: bool


@dataclass(frozen=True)
class Notice:
    """Something a person must read: an error, a warning or information, about ``topic`` (input, model,
    history, export, job, score); ``actions`` offered beside it as (label, callable)."""

    text: str
    topic: str = ""
    level: str = "error"
    actions: tuple = ()


@dataclass(frozen=True)
class Said:
    """A status-line message (``ms``: how long it stays, 0 until the next)."""

    text: str
    ms: int = 0
    queued: bool = False  # wait its turn behind the messages showing (else shown at once)


class Events:
    def __init__(self) -> None:
        self._subscribers: Dict[type, List[Callable]] = defaultdict(list)

    def subscribe(self, kind: Type, fn: Callable) -> None:
        self._subscribers[kind].append(fn)

    def publish(self, event) -> None:
        for fn in list(self._subscribers[type(event)]):
            fn(event)
