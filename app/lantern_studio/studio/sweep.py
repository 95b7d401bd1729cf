"""Sweep δ and Sweep k: the current prompt decoded at a ladder of values of one setting around the slider's,
plus vanilla runs of the same seeds (the baseline each rung's speed-up is measured against), one after the
other in the one worker thread; shown as a strip of captioned pictures under the canvas
(``gui/sweep_view.py``) and as one curve on the trade-off chart.

Every rung (the vanilla one too) is drawn at several seeds, :data:`SEEDS` by default (``fidelity.SWEEP_SEEDS``:
one picture says nothing of the next, and three are what a person waits for), the seed shown first, then the
ones after it (:func:`sweep_seeds`). The strip shows each rung's first seed's picture; its caption and tooltip
and the chart's curve give the prompt fidelity's mean over the rung's seeds with its 95 % interval
(``fidelity.mean_interval``), and the speed-up is the median over seeds of the vanilla run's wall time over the
rung's, seed by seed. The jobs queue seed by seed (every rung's first seed, then every rung's second, …), so
the strip fills in at the first seed's pace and the numbers firm up as the later seeds end.

The ladder, around the slider's setting ``v`` (the one definition; the README and the menu's tooltip say it):

* δ: 0, v/2, v, 1.5·v, 2.5·v, clipped to the slider's range [0, 1] and rounded to its 4 decimals, repeats
  dropped (v = 1 gives 0, 0.5, 1). A setting of 0 has no neighbourhood to scale: the ladder is then
  :data:`DELTA_FROM_ZERO`.
* k: v/4, v/2, v, 2·v, 4·v, rounded to whole numbers and clipped to [1, V−1] (V the codebook size), repeats
  dropped. k = 0 (exact) sweeps around :data:`K_FROM_ZERO`.

The vanilla run goes first in each seed's round, so each rung's speed-up (vanilla's wall time over the rung's,
same prompt, seed and sampling) is known the moment the rung ends. As a Compare's halves (``state/compare.py``), every job of a sweep
decodes on one path (``path``: eager or compiled, fixed when the sweep is asked for, so a compile that ends
mid-sweep cannot split it) and first warms that path with a few untimed steps (``Job.warm``): the speed-ups
compare decoding only, never the vanilla path's first-use warm-up (17–28 s on the real studio). A set knows
which job is which rung and seed (a :class:`Draw`), how far each got, its history row once saved, the picture a
person chose, and the curve's points (the rungs' trade-off points in ladder order, every seed's: the chart
places a rung's seeds as one point at their mean; the vanilla runs are a point of their own, not on the curve).
"""

from __future__ import annotations

import statistics
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
SEEDS = fidelity.SWEEP_SEEDS  # seeds a value (and the vanilla run) by default
MAX_SEEDS = 16  # a sweep of five values and vanilla at 16 seeds is 96 decodes: more is no sweep to wait for
SEED_TOP = 2**63  # seeds fit in 64 bits (engine/settings.py)


def sweep_seeds(seed: int, n: int) -> List[int]:
    """The ``n`` seeds a sweep draws: ``seed`` first (the one shown), then the ones after it (before it where
    they would pass the largest seed), so the same seed and count always draw the same pictures."""
    if not 1 <= int(n) <= MAX_SEEDS:
        raise ValueError(f"seeds per value must be in [1, {MAX_SEEDS}], got {n}")
    seed = int(seed)
    step = 1 if seed + n <= SEED_TOP else -1
    return [seed + step * i for i in range(int(n))]


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
class Draw(JobCell):
    """One seed of a rung: its job (state, result, record, entry_id and done: a JobCell's, state/job_cells.py)."""

    job: Job

    @property
    def wall(self) -> Optional[float]:
        return None if self.result is None else float(self.result.stats["wall_seconds"])

    @property
    def seed(self) -> int:
        return int(self.job.settings.seed)

    @property
    def path(self) -> Optional[str]:
        """The path it decoded on, as it ran (compiled steps made some of its forwards, or none)."""
        if self.result is None:
            return None
        return COMPILED if int(self.result.stats.get("compiled_forwards") or 0) > 0 else EAGER


@dataclass
class Rung:
    """One value of the ladder (or the vanilla run) at every seed of the sweep; the strip shows its first seed's
    picture (its state, result, record and history row are that draw's)."""

    index: int  # its place in the strip: 0 is the vanilla run, then the ladder ascending
    value: Optional[float]  # the swept setting's value; None for the vanilla run
    draws: List[Draw]  # one per seed, the seed shown first

    @property
    def first(self) -> Draw:
        return self.draws[0]

    @property
    def job(self) -> Job:
        return self.first.job

    @property
    def state(self) -> str:
        return self.first.state

    @property
    def result(self):
        return self.first.result

    @property
    def record(self) -> Optional[dict]:
        return self.first.record

    @property
    def entry_id(self) -> Optional[int]:
        return self.first.entry_id

    @property
    def done(self) -> bool:
        return self.first.done

    @property
    def vanilla(self) -> bool:
        return self.value is None

    @property
    def finished(self) -> List[Draw]:
        """Its draws that are done, in seed order."""
        return [d for d in self.draws if d.done]

    @property
    def wall(self) -> Optional[float]:
        """The first seed's decode seconds."""
        return self.first.wall

    @property
    def tokens_per_forward(self) -> Optional[float]:
        """Tokens per target forward, the prefill's forward included (as the chart's x and the bench's), the
        mean over its finished seeds."""
        values = [float(d.result.stats["mean_accepted_length"]) for d in self.finished]
        return statistics.fmean(values) if values else None

    @property
    def score(self) -> Optional[float]:
        """The first seed's fidelity."""
        return None if self.result is None else self.result.score

    @property
    def fidelity(self) -> Optional[fidelity.Interval]:
        """The mean fidelity over its finished seeds with its 95 % interval (None: none was scored)."""
        return fidelity.mean_interval(d.result.score for d in self.finished)

    @property
    def warm(self) -> Optional[float]:
        """Seconds its first seed's untimed warm-up took before its clock started (None: none ran, or not done)."""
        return None if self.result is None else self.result.warm_seconds

    @property
    def path(self) -> Optional[str]:
        """The path its first seed decoded on, as it ran (compiled steps made some of its forwards, or none)."""
        return self.first.path


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
           model: Optional[str] = None, quality: bool = False, path: str = EAGER, seeds: int = SEEDS) -> "SweepSet":
        """The jobs of a sweep of ``axis`` over ``values`` at ``seeds`` seeds (:func:`sweep_seeds` from the
        settings' seed): the vanilla runs of ``settings`` (no drafter, the same seeds and sampling), then the
        runs of each value with ``settings`` changed only there; every one on ``path`` and warming it untimed
        before its clock starts (the module's docstring)."""
        cast = float if axis == DELTA else int
        path = COMPILED if path == COMPILED else EAGER
        drawn = sweep_seeds(settings.seed, seeds)

        def rung(index: int, value, s: GenerationSettings) -> Rung:
            return Rung(index, value, [Draw(Job(prompt, s.with_(seed=seed), model, ROLE, group, steps=path, warm=True))
                                       for seed in drawn])

        rungs = [rung(0, None, settings.with_(drafter="none"))]
        for i, v in enumerate(values, 1):
            rungs.append(rung(i, cast(v), settings.with_(**{axis: cast(v)})))
        return cls(group, axis, prompt, rungs, quality, path=path)

    @property
    def seeds(self) -> List[int]:
        """The seeds every rung draws, the one shown first."""
        return [d.seed for d in self.baseline.draws]

    @property
    def jobs(self) -> List[Job]:
        """Every job of the sweep, in the order they are queued: seed by seed, each seed's vanilla run first."""
        return [d.job for d in self._cells()]

    @property
    def values(self) -> list:
        return [r.value for r in self.rungs if not r.vanilla]

    @property
    def baseline(self) -> Rung:
        return self.rungs[0]

    @property
    def title(self) -> str:
        return f"Sweep {SYMBOL[self.axis]}"

    def _cells(self) -> List[Draw]:
        """Every draw, seed by seed (each seed's round: the vanilla run, then the ladder)."""
        return [r.draws[i] for i in range(len(self.baseline.draws)) for r in self.rungs]

    def rung_of(self, job_id: int) -> Optional[Rung]:
        """The rung whose draws hold job ``job_id`` (None: not this sweep's)."""
        return next((r for r in self.rungs if any(d.job.id == job_id for d in r.draws)), None)

    def _rung_of_draw(self, draw: Optional[Draw]) -> Optional[Rung]:
        return None if draw is None else self.rung_of(draw.job.id)

    # the worker's answers change a draw (a JobCells' bookkeeping, state/job_cells.py); they answer its rung
    def started(self, job: Job) -> Optional[Rung]:
        return self._rung_of_draw(super().started(job))

    def finished(self, result, record: dict) -> Optional[Rung]:
        return self._rung_of_draw(super().finished(result, record))

    def stopped(self, job: Job, how: str) -> Optional[Rung]:
        return self._rung_of_draw(super().stopped(job, how))

    @property
    def running(self) -> Optional[Rung]:
        return self._rung_of_draw(super().running)

    def choose(self, index: int) -> Optional[Rung]:
        """A person clicked rung ``index``: it becomes the chosen one when its first seed is done (its picture
        is the strip's); None (and nothing changes) when that is still decoding, stopped, or not a rung."""
        if not 0 <= index < len(self.rungs) or not self.rungs[index].done:
            return None
        self.chosen = index
        return self.rungs[index]

    def forget_unqueued(self, queued: Callable[[Job], bool]) -> List[Rung]:
        """The waiting draws whose jobs left the queue without running (Esc took the group off, Cancel all
        emptied the queue) are cancelled; the rungs they were of, in strip order."""
        gone = {id(d) for d in self._cancel_waiting(queued)}
        return [r for r in self.rungs if any(id(d) in gone for d in r.draws)]

    # ------------------------------------------------------------------ numbers
    def speedup(self, rung: Rung) -> Optional[float]:
        """The median over seeds of the vanilla run's wall time over ``rung``'s, seed by seed (1 for the vanilla
        run itself); None until both the vanilla run and the rung are done at one seed."""
        ratios = [v.wall / d.wall for v, d in zip(self.baseline.draws, rung.draws)
                  if v.done and d.done and d.wall]
        return statistics.median(ratios) if ratios else None

    def label(self, rung: Rung) -> str:
        return "vanilla" if rung.vanilla else value_text(self.axis, rung.value)

    def row(self, rung: Rung) -> dict:
        """What the strip's caption says of a rung: its value, tokens per forward, speed-up against the vanilla
        runs and the prompt fidelity over its finished seeds (``fidelity`` the mean, ``fidelity_low`` and
        ``fidelity_high`` its 95 % interval, ``fidelity_n`` the seeds; None where unknown), as the command's
        report names them."""
        iv = rung.fidelity
        return {"value": self.label(rung), "tokens_per_forward": rung.tokens_per_forward,
                "speedup": self.speedup(rung), "fidelity": None if iv is None else iv.mean,
                "fidelity_low": None if iv is None else iv.low, "fidelity_high": None if iv is None else iv.high,
                "fidelity_n": 0 if iv is None else iv.n}

    def path_words(self) -> str:
        """Which path the sweep's runs decoded on, as its labels say it: "all eager", or "eager and
        compiled" when they differ (a compiled path asked for where compiling failed ran eagerly)."""
        ran = sorted({d.path for d in self._cells() if d.done} or {self.path})
        return f"all {ran[0]}" if len(ran) == 1 else " and ".join(ran)

    def seeds_words(self) -> str:
        """"seed 1234", or "seeds 1234–1236" (the seed shown first)."""
        seeds = self.seeds
        return f"seed {seeds[0]}" if len(seeds) == 1 else f"seeds {seeds[0]}–{seeds[-1]}"

    def caption(self, rung: Rung, n_fixed: Optional[int] = None, total: Optional[int] = None) -> str:
        """The rung's lines over its picture (its first seed's): its value; then how far that got, or, once
        done, the tokens per forward, the speed-up against the vanilla runs (decoding only: warm-ups are not in
        it) and the prompt fidelity over its finished seeds: the mean on one line, its 95 % interval and seeds
        on the next (``fidelity.format_interval``, split to fit a 90-px picture)."""
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
            mean, _, spread = fidelity.format_interval(rung.fidelity).partition(" (")
            lines.append(f"fid {mean}")
            if spread:
                lines.append(spread.rstrip(")"))
        return "\n".join(lines)

    def tooltip(self, rung: Rung) -> str:
        """A rung's whole story, for the caption's tooltip."""
        method = DecodeMethod.of(rung.job.settings).label  # δ = 0 in a δ sweep is exact speculative, say so
        n = len(rung.draws)
        lines = [f"{self.title} · {self.label(rung)} ({method}) · {self.seeds_words()}"
                 + ("" if n == 1 else f" (the picture: seed {rung.first.seed})"),
                 f"state: {rung.state}" + ("" if n == 1 else f" · {len(rung.finished)} of {n} seeds done")]
        if rung.done:
            row = self.row(rung)
            lines.append(f"{row['tokens_per_forward']:.2f} tokens per target forward (the prefill's included)"
                         + ("" if n == 1 else ", the mean over its seeds"))
            lines.append(f"{rung.wall:.2f} s decoding, {rung.path}" + ("" if n == 1 else " (the picture's seed)") + (
                "" if row["speedup"] is None or rung.vanilla else
                f" · {row['speedup']:.2f}× the speed of the vanilla run (decoding only)"
                + ("" if n == 1 else ", the median over its seeds, each against vanilla at its own seed")))
            if rung.warm is not None:
                lines.append(f"warm-up not counted: {rung.warm:.1f} s of untimed steps before its clock started")
            if self.quality:
                lines.append(f"{fidelity.NAME} {fidelity.format_interval(rung.fidelity)}: the meter's probability "
                             "that the picture shows what the prompt asks for, the mean over the seeds with its "
                             "95 % interval")
            lines.append("click: make it the current picture")
        return "\n".join(lines)

    def summary(self) -> str:
        """The strip's title line: what is swept, how far the set got, what a click or Esc does now."""
        return (f"{self.title} ({self.seeds_words()}) · speed-ups: decoding only, "
                f"{self.path_words()} · " + self.progress())

    def curve(self) -> List[TradeoffPoint]:
        """The chart's curve: the finished runs' trade-off points (from their records, as the chart places
        every run), every seed's, in ladder order (the chart joins a rung's seeds as one vertex at their
        mean); the vanilla runs are not on it (they are their own point)."""
        points = []
        for r in self.rungs:
            if r.vanilla:
                continue
            for d in r.finished:
                p = None if d.record is None else point_of(d.record, self.label(r), d.job.settings)
                if p is not None:
                    points.append(p)
        return points

    def help(self) -> str:
        n = len(self.seeds)
        return (f"{self.title}: the current prompt decoded at a ladder of {SYMBOL[self.axis]} values around the "
                + (f"slider's at {n} seeds ({self.seeds_words()}), after vanilla runs of the same seeds" if n > 1 else
                   "slider's, after one vanilla run of the same seed")
                + " (the baseline of every speed-up). Every run "
                f"decodes {self.path_words()} and first warms its path with a few untimed steps, so a speed-up "
                "compares decoding only (a first-use warm-up is not in it). Each picture (the first seed's) says its "
                "value, tokens per target forward, its speed-up against the vanilla run"
                + (" and the prompt fidelity: the mean over the seeds with its 95 % interval" if self.quality else "")
                + "; the chart joins the rungs as one curve. Click a finished one to make it the current picture. "
                "Esc stops the running one and the waiting ones.")
