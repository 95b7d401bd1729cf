"""Plain data passed between the GUI and the engine worker.

Everything here is either immutable or a fresh copy made by the sender, so an
object handed across threads is never mutated by the other side — except
``Job.cancel_event``, a ``threading.Event`` that is the one piece of state both
threads touch (the GUI sets it, the decode loop polls it between steps).
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .. import fidelity
from ..engine.decode_method import DecodeMethod
from ..engine.settings import GenerationSettings
from .compiled_steps import EAGER_STEPS, StepsVerdict

UNFILLED = 255  # decision value of a token not fixed yet
RECOGNISED_KEY = "recognised"  # a record's verdict of the recogniser (studio/verdict.py reads it)
LOAD_KEY = "load_average"  # a record's [1-minute load average, CPUs] when its decode ended

_ids = itertools.count(1)


@dataclass
class Job:
    prompt: str
    settings: GenerationSettings
    model: Optional[str] = None  # model spec (models.resolve_spec): None = bundled, a folder, "tiny-demo", a Hub name
    role: str = "single"  # "single" | "compare-vanilla" | "compare-current" | "variation" (Generate ×4) | "sweep"
    group: Optional[int] = None  # compare pair id, or the Generate ×4 set's
    steps: Optional[str] = None  # "compiled" | "eager": decode on that path (a replayed record's); None: the choice
    warm: bool = False  # warm its decode path with a few untimed steps before the clock starts (a Compare's halves)
    id: int = field(default_factory=lambda: next(_ids))
    cancel_event: threading.Event = field(default_factory=threading.Event, repr=False, compare=False)

    def cancel(self) -> None:
        self.cancel_event.set()

    @property
    def cancel_requested(self) -> bool:
        return self.cancel_event.is_set()

    def label(self) -> str:
        text = self.prompt if len(self.prompt) <= 40 else self.prompt[:39] + "…"
        s = self.settings
        method = DecodeMethod.of(s)
        how = "vanilla" if s.drafter == "none" else f"{s.drafter}"
        if method.relaxed:
            how += f", {method.label}, k={s.k}, " + (f"λ={s.lam:g}" if method.kind == "lantern++" else f"δ={s.delta:g}")
        elif s.drafter != "none":
            how += ", exact"
        tag = {"compare-vanilla": " [compare: vanilla]", "compare-current": " [compare: current]",
               "variation": " [×4]", "sweep": " [sweep]"}.get(self.role, "")
        return f"#{self.id} “{text}” (seed {s.seed}, {how}){tag}"


@dataclass
class ModelInfo:
    spec: Optional[str]
    name: str
    grid: int
    vocab_size: int
    drafters: tuple
    defaults: GenerationSettings
    has_score: bool
    folder: Optional[str] = None
    precision: str = "fp32"  # what the decode path runs in (engine/precision.py; 'auto' chose it)
    class_names: Optional[tuple] = None  # a class-conditional model's classes (the prompt is one of them)
    # a model that snaps prompts to emoji identities (engine/snap.py): its matcher, called in the match
    # line's own thread as matcher(prompt, style, seed, alternatives) → a Match; its styles and their previews
    matcher: Optional[object] = field(default=None, compare=False, repr=False)
    styles: tuple = ()
    default_style: str = ""
    style_previews: Optional[dict] = None  # style → preview PNG path
    # how decode steps run: eager, compiled, eager because compiling failed, or per family as measured
    steps: StepsVerdict = EAGER_STEPS
    # the model's measured LANTERN profile (models/lantern_profile.py: where the sliders break its pictures),
    # or None; ``profile_problem``: why a damaged lantern_profile.json was left out
    profile: Optional[object] = field(default=None, compare=False, repr=False)
    profile_problem: str = ""

    def steps_text(self, doing: str = "") -> str:
        """The status line's end for how steps run: "" (eager), " · compiled", " · eager (compiling
        failed)", the measured verdict (" · eager (faster here than compiled)"), or what the background
        compile is doing (``doing``: "compiling decode steps… 1/2")."""
        if doing:
            return f" · {doing}"
        return f" · {self.steps.short}" if self.steps.short else ""

    def status_text(self, doing: str = "") -> str:
        """The status line's model part: name, tokens, codebook, precision and how steps run."""
        return (f"{self.name} · {self.grid}×{self.grid} tokens · V={self.vocab_size} · {self.precision}"
                + self.steps_text(doing))

    def status_tip(self) -> str:
        """The status line's tooltip: what the precision and the steps' path mean."""
        steps = self.steps
        path = "compiled where faster" if steps.measured else steps.path
        why = f"\n{steps.why}" if steps.why else ""
        return (f"Weights and KV caches in {self.precision} (chosen automatically: bf16 where the CPU or GPU "
                "multiplies bf16 natively, fp32 elsewhere); decode steps "
                f"{path} (Generate ▸ Compiled decoding){why}")


@dataclass
class Frame:
    """A snapshot of a running job: the partial image and how far it got."""

    job_id: int
    image: np.ndarray  # (H, W, 3) uint8, a private copy
    decisions: np.ndarray  # (N,) uint8, UNFILLED where not fixed yet; a private copy
    n_fixed: int
    total: int
    target_forwards: int
    drafter_forwards: int
    elapsed: float
    final: bool = False

    @property
    def tokens_per_second(self) -> Optional[float]:
        return self.n_fixed / self.elapsed if self.elapsed > 0 else None

    @property
    def mean_accepted_length(self) -> float:
        # as DecodeStats: tokens per target forward, the prefill's forward included
        return self.n_fixed / max(1, self.target_forwards + 1)


@dataclass
class JobResult:
    job: Job
    image: np.ndarray
    tokens: np.ndarray  # (N,) int64
    decisions: np.ndarray  # (N,) uint8
    stats: dict
    note: str
    model_name: str
    score: Optional[float] = None
    warning: Optional[str] = None
    recording: Optional[object] = None  # replay.Recording of the steps
    warm_seconds: Optional[float] = None  # the untimed warm-up before the clock started (Job.warm), else None
    verdict: Optional[dict] = None  # what the recogniser saw (models/quality.PromptScorer.verdict), else None
    load: Optional[tuple] = None  # (1-minute load average, CPUs) when the decode ended; None where unknown

    def record(self) -> dict:
        """The JSON-ready record embedded in PNGs and stored in the history."""
        stats = {k: v for k, v in self.stats.items() if k != "settings"}
        h, w = int(self.image.shape[0]), int(self.image.shape[1])
        rec = {
            "prompt": self.job.prompt,
            "understood_as": self.note,
            "model": self.model_name,
            "settings": self.job.settings.to_dict(),
            "stats": stats,
            "size": [h, w],
            # which path decoded it: a compiled bf16 step may sample differently from the eager one near a
            # tie, so a seed redraws this picture only on the same path (Job.steps asks for it again)
            "compiled": int(self.stats.get("compiled_forwards") or 0) > 0,
        }
        if self.score is not None:
            rec[fidelity.KEY] = float(self.score)
        if self.recording is not None:
            rec["replay"] = self.recording.to_dict()
        if self.verdict is not None:
            rec[RECOGNISED_KEY] = dict(self.verdict)
        if self.load is not None:
            rec[LOAD_KEY] = [float(self.load[0]), int(self.load[1])]
        return rec
