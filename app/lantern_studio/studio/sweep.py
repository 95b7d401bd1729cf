"""Sweep δ and Sweep k: the current prompt and seed decoded at a ladder of values of one setting around the
slider's, plus one vanilla run of the same seed (the baseline each rung's speed-up is measured against), one
after the other in the one worker thread; shown as a strip of captioned pictures under the canvas
(``gui/sweep_view.py``) and as one curve on the trade-off chart.

The ladder, around the slider's setting ``v`` (the one definition; the README and the menu's tooltip say it):

* δ: 0, v/2, v, 1.5·v, 2.5·v, clipped to the slider's range [0, 1] and rounded to its 4 decimals, repeats
  dropped (v = 1 gives 0, 0.5, 1). A setting of 0 has no neighbourhood to scale: the ladder is then
  :data:`DELTA_FROM_ZERO`.
* k: v/4, v/2, v, 2·v, 4·v, rounded to whole numbers and clipped to [1, V−1] (V the codebook size), repeats
  dropped. k = 0 (exact) sweeps around :data:`K_FROM_ZERO`.

The vanilla run goes first, so each rung's speed-up (vanilla's wall time over the rung's, same prompt, seed and
sampling) is known the moment the rung ends. As a Compare's halves (``state/compare.py``), every job of a sweep
decodes on one path (``path``: eager or compiled, fixed when the sweep is asked for, so a compile that ends
mid-sweep cannot split it) and first warms that path with a few untimed steps (``Job.warm``): the speed-ups
compare decoding only, never the vanilla path's first-use warm-up (17–28 s on the real studio). A set knows which job is which rung, how far each got, its history
row once saved, the picture a person chose, and the curve's points (the rungs' trade-off points in ladder order;
the vanilla run is a point of its own, not on the curve).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, List, Optional, Sequence

from .. import fidelity
from ..engine.decode_method import VANILLA, DecodeMethod, knobs_of
from ..engine.settings import GenerationSettings
from .jobs import Job
from .compare import COMPILED, EAGER
from .job_cells import JobCell, JobCells, progress_text
from .tradeoff import TradeoffPoint, point_of

ROLE = "sweep"  # Job.role of every job of a sweep, its vanilla run included
DELTA, K = "delta", "k"
AXES = (DELTA, K)
SYMBOL = {DELTA: "δ", K: "k"}
DELTA_RANGE = (0.0, 1.0)  # the δ slider's range (and the engine's: engine/settings.py)
DELTA_DECIMALS = 4  # the δ slider's precision
DELTA_STEPS = (0.0, 0.5, 1.0, 1.5, 2.5)  # × the setting
K_STEPS = (0.25, 0.5, 1.0, 2.0, 4.0)  # × the setting
DELTA_FROM_ZERO = (0.0, 0.05, 0.1, 0.2, 0.4)  # the δ ladder when δ is 0
K_FROM_ZERO = 16  # the k ladder's centre when k is 0
# what a caption's speed-up compares: wall times of decoding, warm-ups not in them ("decoding 1.62×"; short, so
# that six captions fit side by side at 1920×1080; the title and the tooltips say "decoding only")
SPEED_WORDS = "decoding"


def delta_ladder(delta: float) -> List[float]:
    """The δ values a Sweep δ decodes around the setting ``delta``, ascending (see the module's docstring)."""
    lo, hi = DELTA_RANGE
    if delta <= 0:
        values = DELTA_FROM_ZERO
    else:
        values = [min(hi, max(lo, round(f * float(delta), DELTA_DECIMALS))) for f in DELTA_STEPS]
    return sorted(set(float(v) for v in values))


def k_ladder(k: int, vocab_size: int) -> List[int]:
    """The k values a Sweep k decodes around the setting ``k`` for a codebook of ``vocab_size``, ascending."""
    top = max(1, int(vocab_size) - 1)
    centre = int(k) if k > 0 else K_FROM_ZERO
    return sorted({min(top, max(1, int(round(f * centre)))) for f in K_STEPS})


def ladder(axis: str, settings: GenerationSettings, vocab_size: Optional[int]) -> list:
    if axis == DELTA:
        return delta_ladder(settings.delta)
    if axis == K:
        if vocab_size is None:
            raise ValueError("the k ladder needs the codebook size")
        return k_ladder(settings.k, vocab_size)
    raise ValueError(f"no such sweep: {axis!r} (one of {', '.join(AXES)})")


def problem(axis: str, settings: GenerationSettings, vocab_size: Optional[int]) -> Optional[str]:
    """Why a sweep of ``axis`` would show nothing with these settings, in one line; None when it can run."""
    name = f"Sweep {SYMBOL.get(axis, axis)}"
    if axis not in AXES:
        return f"There is no sweep of {axis!r}: sweep δ or k."
    method = DecodeMethod.of(settings)  # which family, exact or not: engine/decode_method.py
    if method.family == VANILLA:
        return f"{name} compares drafting against vanilla decoding: pick a drafter first."
    if axis == DELTA and "delta" not in knobs_of(settings.drafter, method.kind):
        return f"{name}: the bound is LANTERN++ (λ), which does not use δ; pick the LANTERN bound, or sweep k."
    if axis == DELTA and settings.k == 0:
        return f"{name} needs k > 0: with k = 0 decoding is exact and δ changes nothing."
    if axis == K and DecodeMethod.of(settings.with_(k=max(1, settings.k))).exact:
        return f"{name} needs a budget (δ > 0, or λ > 1): without one every k decodes exactly."
    if axis == K and vocab_size is None:
        return f"{name} waits for the model: its codebook size bounds k."
    return None


def value_text(axis: str, value) -> str:
    return f"{SYMBOL[axis]} {value:g}"


@dataclass
class Rung(JobCell):
    index: int  # its place in the strip: 0 is the vanilla run, then the ladder ascending
    value: Optional[float]  # the swept setting's value; None for the vanilla run
    job: Job  # state, result, record, entry_id and done: a JobCell's (state/job_cells.py)

    @property
    def vanilla(self) -> bool:
        return self.value is None

    @property
    def wall(self) -> Optional[float]:
        return None if self.result is None else float(self.result.stats["wall_seconds"])

    @property
    def tokens_per_forward(self) -> Optional[float]:
        """Tokens per target forward, the prefill's forward included (as the chart's x and the bench's)."""
        return None if self.result is None else float(self.result.stats["mean_accepted_length"])

    @property
    def score(self) -> Optional[float]:
        return None if self.result is None else self.result.score

    @property
    def warm(self) -> Optional[float]:
        """Seconds its untimed warm-up took before its clock started (None: none ran, or not done)."""
        return None if self.result is None else self.result.warm_seconds

    @property
    def path(self) -> Optional[str]:
        """The path it decoded on, as it ran (compiled steps made some of its forwards, or none)."""
        if self.result is None:
            return None
        return COMPILED if int(self.result.stats.get("compiled_forwards") or 0) > 0 else EAGER


@dataclass
class SweepSet(JobCells):
    group: int  # Job.group of its jobs: Esc stops the running one and takes the waiting ones off
    axis: str  # DELTA | K
    prompt: str
    rungs: List[Rung] = field(default_factory=list)  # the vanilla run first, then the ladder ascending
    quality: bool = False  # the model has a recogniser: captions give its verdict
    chosen: Optional[int] = None  # the rung a person made the current picture
    path: str = EAGER  # the path every job was asked to decode on (Rung.path: the one each ran on)

    @classmethod
    def of(cls, group: int, axis: str, prompt: str, settings: GenerationSettings, values: Sequence,
           model: Optional[str] = None, quality: bool = False, path: str = EAGER) -> "SweepSet":
        """The jobs of a sweep of ``axis`` over ``values``: the vanilla run of ``settings`` (no drafter, the
        same seed and sampling), then one job per value with ``settings`` changed only there; every one on
        ``path`` and warming it untimed before its clock starts (the module's docstring)."""
        cast = float if axis == DELTA else int
        path = COMPILED if path == COMPILED else EAGER

        def job(s: GenerationSettings) -> Job:
            return Job(prompt, s, model, ROLE, group, steps=path, warm=True)

        rungs = [Rung(0, None, job(settings.with_(drafter="none")))]
        for i, v in enumerate(values, 1):
            rungs.append(Rung(i, cast(v), job(settings.with_(**{axis: cast(v)}))))
        return cls(group, axis, prompt, rungs, quality, path=path)

    @property
    def jobs(self) -> List[Job]:
        """Every job of the sweep, in the order they are queued (the vanilla run first)."""
        return [r.job for r in self.rungs]

    @property
    def values(self) -> list:
        return [r.value for r in self.rungs if not r.vanilla]

    @property
    def baseline(self) -> Rung:
        return self.rungs[0]

    @property
    def title(self) -> str:
        return f"Sweep {SYMBOL[self.axis]}"

    def _cells(self) -> List[Rung]:
        return self.rungs

    def rung_of(self, job_id: int) -> Optional[Rung]:
        return self._cell_of(job_id)

    # running, ended, started, finished, stopped, saved and choose: a JobCells' (state/job_cells.py)

    def forget_unqueued(self, queued: Callable[[Job], bool]) -> List[Rung]:
        """The waiting rungs whose jobs left the queue without running (Esc took the group off, Cancel all
        emptied the queue) are cancelled; those rungs."""
        return self._cancel_waiting(queued)

    # ------------------------------------------------------------------ numbers
    def speedup(self, rung: Rung) -> Optional[float]:
        """The vanilla run's wall time over ``rung``'s (1 for the vanilla run itself); None until both are done."""
        base = self.baseline
        if not (rung.done and base.done) or not rung.wall:
            return None
        return base.wall / rung.wall

    def label(self, rung: Rung) -> str:
        return "vanilla" if rung.vanilla else value_text(self.axis, rung.value)

    def row(self, rung: Rung) -> dict:
        """What the strip's caption and the command's table say of a rung: its value, tokens per forward,
        speed-up against the vanilla run and the recogniser's verdict (None where unknown)."""
        return {"value": self.label(rung), "tokens_per_forward": rung.tokens_per_forward,
                "speedup": self.speedup(rung), "fidelity": rung.score}

    def path_words(self) -> str:
        """Which path the sweep's runs decoded on, as its labels say it: "all eager", or "eager and
        compiled" when they differ (a compiled path asked for where compiling failed ran eagerly)."""
        ran = sorted({r.path for r in self.rungs if r.done} or {self.path})
        return f"all {ran[0]}" if len(ran) == 1 else " and ".join(ran)

    def caption(self, rung: Rung, n_fixed: Optional[int] = None, total: Optional[int] = None) -> str:
        """The rung's lines over its picture: its value; then how far it got, or, once done, its tokens per
        forward, its speed-up against the vanilla run (decoding only: warm-ups are not in it) and the
        recogniser's verdict (fidelity)."""
        head = self.label(rung)
        if rung.state == "running":
            return head + "\n" + progress_text(n_fixed, total)
        if not rung.done:
            return f"{head}\n{rung.state}"
        row = self.row(rung)
        speed = ("baseline" if rung.vanilla else
                 "—" if row["speedup"] is None else f"{SPEED_WORDS} {row['speedup']:.2f}×")
        lines = [head, f"{row['tokens_per_forward']:.2f} tok/fwd", speed]
        if self.quality:  # short: a strip picture may be 90 px wide (the tooltip says it in full)
            lines.append(f"fid {fidelity.format_value(row['fidelity'])}")
        return "\n".join(lines)

    def tooltip(self, rung: Rung) -> str:
        """A rung's whole story, for the caption's tooltip."""
        method = DecodeMethod.of(rung.job.settings).label  # δ = 0 in a δ sweep is exact speculative, say so
        lines = [f"{self.title} · {self.label(rung)} ({method}) · seed {rung.job.settings.seed}", f"state: {rung.state}"]
        if rung.done:
            row = self.row(rung)
            lines.append(f"{row['tokens_per_forward']:.2f} tokens per target forward (the prefill's included)")
            lines.append(f"{rung.wall:.2f} s decoding, {rung.path}" + (
                "" if row["speedup"] is None or rung.vanilla else
                f" · {row['speedup']:.2f}× the speed of the vanilla run (decoding only)"))
            if rung.warm is not None:
                lines.append(f"warm-up not counted: {rung.warm:.1f} s of untimed steps before its clock started")
            if self.quality:
                lines.append(f"{fidelity.NAME} {fidelity.format_value(row['fidelity'])}: the recogniser's "
                             "probability that the picture shows what the prompt asks for")
            lines.append("click: make it the current picture")
        return "\n".join(lines)

    def summary(self) -> str:
        """The strip's title line: what is swept, how far the set got, what a click or Esc does now."""
        return (f"{self.title} (seed {self.baseline.job.settings.seed}) · speed-ups: decoding only, "
                f"{self.path_words()} · " + self.progress())

    def curve(self) -> List[TradeoffPoint]:
        """The chart's curve: the finished rungs' trade-off points (from their records, as the chart places
        every run), in ladder order; the vanilla run is not on it (it is its own point)."""
        points = []
        for r in self.rungs:
            if r.vanilla or not r.done or r.record is None:
                continue
            p = point_of(r.record, self.label(r), r.job.settings)
            if p is not None:
                points.append(p)
        return points

    def help(self) -> str:
        return (f"{self.title}: the current prompt and seed decoded at a ladder of {SYMBOL[self.axis]} values around "
                "the slider's, after one vanilla run of the same seed (the baseline of every speed-up). Every run "
                f"decodes {self.path_words()} and first warms its path with a few untimed steps, so a speed-up "
                "compares decoding only (a first-use warm-up is not in it). Each picture says its value, tokens "
                "per target forward, its speed-up against the vanilla run"
                + (" and the recogniser's verdict" if self.quality else "")
                + "; the chart joins the rungs as one curve. Click a finished one to make it the current picture. "
                "Esc stops the running one and the waiting ones.")
