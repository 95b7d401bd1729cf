"""`lantern-studio bench`: speed and quality of decoding methods side by side.

Every method decodes the same prompts with the same seeds and the model's own
sampling defaults (temperature, top-k/top-p, CFG); only the decoding changes:

* ``vanilla-<precision>`` — one target forward per token, in fp32 and (where the
  machine runs it natively) bf16; the faster of them is the reference;
* ``exact-<drafter>`` — speculative decoding with exact acceptance (δ = 0),
  for each drafter the model has (``eagle`` if it ships a head, ``jacobi``);
* ``lantern-<drafter>-k<K>-d<δ>`` — LANTERN relaxed acceptance over a grid of
  (k, δ), with the learned drafter (Jacobi if the model has none);
* ``lantern++-<drafter>-k<K>-l<λ>`` — the multiplicative LANTERN++ bound;
* ``lantern-jacobi-k<K>-d<δ>`` — training-free Jacobi drafts with relaxation ((k, δ) in JACOBI_RELAXED);
* ``step-jacobi-k<K>-d<δ>[-ad]`` — the step bound (each step's output within δ of the target in total
  variation, sampled drafts included) at the same (k, δ); ``-ad``: entropy-adaptive δ.

``--measure-tv`` makes every decode measure, exactly, the TV between each step's
output distribution and the target's (``step_tv_mean`` / ``step_tv_max``; costly
for LANTERN with sampled drafts, so timings then include it).

Runs are interleaved: after one untimed warm-up generation per method, every
method decodes prompt 1 in turn, then prompt 2, … (A, B, C, A, B, C), so slow
drift of the machine (other jobs, thermal state) hits all methods alike. The
order actually run is recorded in the report (``order``).

Speed-up is the median over prompts of (reference seconds / method seconds) for
the same prompt and seed, the reference being vanilla at its fastest precision on
this machine (the vanilla row with the lowest median time), end to end (conditioning + decoding + VQ decode),
with its interquartile range and min/max. Quality, when the model folder ships
a recogniser (``recogniser.safetensors``): prompt fidelity (recogniser top-5
contains the prompt's subgroup), its change against vanilla, and a Fréchet
distance between recogniser features of the method's images and real held-out
images. Without a recogniser the quality fields are null and the rest still runs.

The numbers are ratios from one run on one machine: the report carries the
machine (CPU, torch, threads, load average) and the command line.
"""

from __future__ import annotations

import argparse
import csv
import fnmatch
import json
import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ..reports import machine_info, reference_of

SCHEMA = "lantern-studio-bench/2"
EXIT_BAD_INPUT = 2

# The default grid (docs/bench.md, "Methods"; the LANTERN paper sweeps k and δ the same way).
LANTERN_KS = (16, 64, 256)
LANTERN_DELTAS = (0.05, 0.1, 0.2, 0.4)
PLUS_K = 64
PLUS_LAMS = (2.0, 4.0)
JACOBI_RELAXED = ((64, 0.2), (64, 0.4), (256, 0.2), (256, 0.4))  # (k, δ) on Jacobi drafts; --quick: the first
# Coupled (MC-SJD) Jacobi windows converge, so longer windows pay: (k, δ, draft length); δ = 0 is exact.
JACOBI_LONG = ((0, 0.0, 24), (64, 0.2, 16), (64, 0.2, 24), (256, 0.4, 16), (256, 0.4, 24))
STEP_RELAXED = JACOBI_RELAXED  # the step bound at LANTERN's Jacobi points (equal δ), ...
STEP_ADAPTIVE = ((256, 0.4),)  # ... and with entropy-adaptive δ
QUICK_LANTERN = ((64, 0.1), (256, 0.4))
QUICK_PROMPTS = 2
DEFAULT_N = 16

#: Prompts used when neither the model folder, the dataset nor --prompts gives any.
FALLBACK_PROMPTS = (
    "red heart", "grinning face", "cat face", "thumbs up", "rocket", "green apple",
    "glowing star", "snowman", "sun with face", "pizza", "dog face", "rainbow",
    "face with tears of joy", "fire", "four leaf clover", "crescent moon",
)

#: Every field a method's entry in the report has (values may be null).
METHOD_FIELDS = (
    "name", "label", "family", "drafter", "k", "delta", "lam", "bound", "draft_length", "precision", "reference",
    "settings",
    "images", "seconds_median", "seconds_mean", "decode_seconds_median",
    "speedup_median", "speedup_q25", "speedup_q75", "speedup_min", "speedup_max",
    "decode_speedup_median",
    "tokens_per_image", "target_forwards_per_image", "drafter_forwards_per_image",
    "mean_accepted_length", "acceptance_rate", "relaxed_share", "drafter_cost_share", "tokens_per_second",
    "rounds_per_image", "forward_ms_per_round", "overhead_ms_per_round",
    "prompt_fidelity", "fidelity_delta", "frechet_distance",
    "tv_budget_per_image", "step_tv_mean", "step_tv_max",
    "per_prompt",
)
#: Fields of each ``per_prompt`` row.
PER_PROMPT_FIELDS = ("prompt_index", "prompt", "seed", "seconds", "decode_seconds", "speedup", "tokens",
                     "target_forwards", "drafter_forwards", "drafted", "accepted", "accepted_relaxed",
                     "mean_accepted_length", "drafter_seconds")
#: Columns of the CSV (one row per method).
CSV_FIELDS = tuple(f for f in METHOD_FIELDS if f not in ("settings", "per_prompt"))


class BenchError(ValueError):
    """Bad bench input: the message names the option and what is allowed."""


# --------------------------------------------------------------------------- methods


def _fmt_num(x: float) -> str:
    return f"{x:g}"


@dataclass(frozen=True)
class Method:
    """One decoding configuration; sampling settings come from the model."""

    name: str
    family: str  # vanilla | exact | lantern | lantern++ | jacobi-relaxed | step
    drafter: str = "none"
    k: int = 0
    delta: float = 0.0
    lam: Optional[float] = None
    precision: Optional[str] = None  # None: the precision the bench runs speculative methods in
    coupling: bool = True  # Jacobi drafts coupled across iterations (MC-SJD); False: plain SJD
    draft_length: Optional[int] = None  # None: the model's default
    bound: str = "lantern"  # GenerationSettings.bound
    adaptive: bool = False  # entropy-adaptive δ
    measure_tv: bool = False  # measure each step's TV from the target (bench --measure-tv)

    @property
    def label(self) -> str:
        if self.family == "vanilla":
            return "vanilla AR" + (f" ({self.precision})" if self.precision else "")
        window = "" if self.draft_length is None else f", window {self.draft_length}"
        if self.family == "exact":
            return f"exact speculative ({self.drafter}{'' if self.coupling else ', uncoupled SJD'}{window})"
        if self.lam is not None:
            return f"LANTERN++ {self.drafter} k={self.k} λ={_fmt_num(self.lam)}"
        if self.bound == "step":
            ad = " adaptive" if self.adaptive else ""
            return f"step-bounded {self.drafter} k={self.k} δ={_fmt_num(self.delta)}{ad}{window}"
        what = "Jacobi + relaxation" if self.family == "jacobi-relaxed" else f"LANTERN {self.drafter}"
        if not self.coupling:
            what += " (uncoupled SJD)"
        return f"{what} k={self.k} δ={_fmt_num(self.delta)}{window}"

    def key(self) -> tuple:
        """What the engine sees (two names with the same key are the same run)."""
        return (self.drafter, self.k, self.delta, self.lam, self.precision, self.coupling, self.draft_length,
                self.bound, self.adaptive)

    def settings(self, base, seed: int):
        s = base.with_(seed=int(seed), drafter=self.drafter, k=self.k, delta=self.delta, lam=self.lam,
                       coupling=self.coupling, bound=self.bound, adaptive_delta=self.adaptive,
                       measure_tv=self.measure_tv)
        return s if self.draft_length is None else s.with_(draft_length=self.draft_length)


def _lantern(drafter: str, k: int, delta: float, family: str = "lantern", coupling: bool = True,
             draft_length: Optional[int] = None) -> Method:
    tag = drafter if coupling else "sjd"
    window = "" if draft_length is None else f"-L{draft_length}"
    return Method(f"lantern-{tag}-k{k}-d{_fmt_num(delta)}{window}", family, drafter, k, float(delta),
                  coupling=coupling, draft_length=draft_length)


def _step(drafter: str, k: int, delta: float, adaptive: bool = False) -> Method:
    return Method(f"step-{drafter}-k{k}-d{_fmt_num(delta)}{'-ad' if adaptive else ''}", "step", drafter, k,
                  float(delta), bound="step", adaptive=adaptive)


def _plus(drafter: str, k: int, lam: float) -> Method:
    return Method(f"lantern++-{drafter}-k{k}-l{_fmt_num(lam)}", "lantern++", drafter, k, 0.0, float(lam))


def vanilla_methods(precisions: Sequence[str] = ("fp32",)) -> list[Method]:
    """One vanilla row per precision ("vanilla-fp32", "vanilla-bf16")."""
    return [Method(f"vanilla-{p}", "vanilla", precision=p) for p in precisions]


def method_grid(drafters: Sequence[str], vocab_size: int, quick: bool = False,
                ks: Sequence[int] = LANTERN_KS, deltas: Sequence[float] = LANTERN_DELTAS,
                lams: Sequence[float] = PLUS_LAMS, vanilla_precisions: Sequence[str] = ("fp32",)) -> list[Method]:
    """The methods to compare, vanilla first (one per precision). k is clipped to
    V − 1; settings that end up identical after clipping are kept once (the first name)."""
    kmax = max(0, int(vocab_size) - 1)

    def clip(k: int) -> int:
        return min(int(k), kmax)

    relaxed = "eagle" if "eagle" in drafters else "jacobi"
    out = vanilla_methods(vanilla_precisions)
    out += [Method(f"exact-{d}", "exact", d) for d in ("eagle", "jacobi") if d in drafters]
    if quick:
        out += [_lantern(relaxed, clip(k), d) for k, d in QUICK_LANTERN]
    else:
        out += [_lantern(relaxed, clip(k), d) for k in ks for d in deltas]
        out += [_plus(relaxed, clip(PLUS_K), lam) for lam in lams]
    out += [_lantern("jacobi", clip(k), d, family="jacobi-relaxed") for k, d in JACOBI_RELAXED[: 1 if quick else None]]
    if not quick:  # the uncoupled SJD baseline MC-SJD's coupling is measured against; long coupled windows
        out += [Method(f"exact-jacobi-L{n}", "exact", "jacobi", draft_length=n) if k == 0 else
                _lantern("jacobi", clip(k), d, family="jacobi-relaxed", draft_length=n) for k, d, n in JACOBI_LONG]
        out += [Method("exact-sjd", "exact", "jacobi", coupling=False)]
        out += [_lantern("jacobi", clip(k), d, family="jacobi-relaxed", coupling=False) for k, d in JACOBI_RELAXED[:1]]
        out += [_step("jacobi", clip(k), d) for k, d in STEP_RELAXED]
        out += [_step("jacobi", clip(k), d, adaptive=True) for k, d in STEP_ADAPTIVE]
    seen, unique = set(), []
    for m in out:
        if m.key() not in seen:
            seen.add(m.key())
            unique.append(m)
    return unique


def select_methods(methods: Sequence[Method], patterns: Optional[Sequence[str]]) -> list[Method]:
    """Keep the methods whose name or family matches one of the glob ``patterns``
    (commas also separate patterns). Vanilla, the reference, is always kept."""
    if not patterns:
        return list(methods)
    pats = [p.strip() for item in patterns for p in str(item).split(",") if p.strip()]
    for p in pats:
        if not any(fnmatch.fnmatchcase(m.name, p) or fnmatch.fnmatchcase(m.family, p) for m in methods):
            raise BenchError(f"--methods: {p!r} matches none of: {', '.join(m.name for m in methods)}")
    keep = [m for m in methods
            if m.family == "vanilla" or any(fnmatch.fnmatchcase(m.name, p) or fnmatch.fnmatchcase(m.family, p) for p in pats)]
    return keep


# --------------------------------------------------------------------------- one timed generation


@dataclass
class Sample:
    method: str
    prompt_index: int
    prompt: str
    seed: int
    seconds: float  # end to end: conditioning + decode loop + VQ decode
    stats: dict
    image: np.ndarray


def _sync(pipe) -> None:
    try:
        import torch

        if pipe.device.type == "cuda":
            torch.cuda.synchronize(pipe.device)
    except Exception:  # noqa: BLE001 - timing helper, never fatal
        pass


def generate_one(pipe, method: Method, prompt: str, seed: int, prompt_index: int = 0) -> Sample:
    """Decode one image with ``method`` and time it end to end (module-level so
    tests can wrap it, e.g. to slow one method down)."""
    settings = method.settings(pipe.defaults, seed)
    _sync(pipe)
    t0 = time.perf_counter()
    result = pipe.generate(prompt, settings)
    _sync(pipe)
    seconds = time.perf_counter() - t0
    return Sample(method.name, prompt_index, prompt, int(seed), seconds, result.stats.to_dict(), result.image)


# --------------------------------------------------------------------------- prompts and quality


@dataclass
class Quality:
    """What the model folder / dataset offer for judging images."""

    recogniser: Any = None  # eval.metrics.Recogniser
    real_features: Optional[np.ndarray] = None  # (N, F) features of real held-out images
    meta: Optional[list] = None  # dataset meta rows (prompt → subgroup lookups)
    real_source: Optional[str] = None
    notes: list = field(default_factory=list)

    def describe(self) -> dict:
        rec = self.recogniser
        return {
            "recogniser": str(rec.path) if rec is not None and getattr(rec, "path", None) else None,
            "recogniser_classes": rec.num_classes if rec is not None else None,
            "real_images": int(len(self.real_features)) if self.real_features is not None else None,
            "real_source": self.real_source,
            "notes": list(self.notes),
        }


def _load_dataset_quietly(data_dir):
    from ..models.dataset import DatasetError, load_dataset

    try:
        return load_dataset(data_dir)
    except (DatasetError, OSError, ValueError) as e:
        return e


def load_quality(folder: Optional[Path], dataset=None) -> Quality:
    """``recogniser.safetensors`` from the model folder; real held-out features
    from ``heldout_features.npy`` there, else from the dataset's held-out images.
    ``dataset`` is ``load_dataset(...)``'s tuple, an exception, or None."""
    q = Quality()
    if isinstance(dataset, tuple):
        q.meta = dataset[1]
    rec_path = folder / "recogniser.safetensors" if folder is not None else None
    if rec_path is None or not rec_path.is_file():
        q.notes.append("no recogniser.safetensors in the model folder: quality fields are null")
        return q
    from .metrics import Recogniser

    try:
        q.recogniser = Recogniser.load(rec_path)
    except Exception as e:  # noqa: BLE001 - a broken recogniser must not stop the speed bench
        q.notes.append(f"recogniser could not be loaded ({e}): quality fields are null")
        return q
    feats_path = folder / "heldout_features.npy"
    if feats_path.is_file():
        f = np.load(feats_path, allow_pickle=False)
        if f.ndim == 2 and f.shape[1] == q.recogniser.feature_dim and len(f) >= 2:
            q.real_features, q.real_source = f.astype(np.float64), str(feats_path)
        else:
            q.notes.append(f"{feats_path.name}: shape {f.shape} does not fit the recogniser "
                           f"({q.recogniser.feature_dim} features); ignored")
    if q.real_features is None and isinstance(dataset, tuple):
        from ..models.dataset import split_indices

        images, meta, _ = dataset
        idx = split_indices(meta, "heldout")
        if len(idx) >= 2:
            q.real_features = q.recogniser.features(images[idx]).astype(np.float64)
            q.real_source = "dataset held-out split"
    if q.real_features is None:
        q.notes.append("no real held-out images (no heldout_features.npy, no dataset): frechet_distance is null")
    return q


def _spread(pool: list, n: int) -> list:
    """n entries spread evenly over pool (cycling when pool is shorter)."""
    if not pool:
        return []
    if n <= len(pool):
        idx = np.linspace(0, len(pool) - 1, n).round().astype(int) if n > 1 else [0]
        return [pool[i] for i in idx]
    return [pool[i % len(pool)] for i in range(n)]


def read_prompt_set(path) -> list[tuple[str, Any]]:
    """A JSON prompt set: [{"prompt", "subgroup" | "subgroups"}] (heldout_prompts.json,
    common_prompts.json) → [(prompt, subgroup or list of subgroups or None)]."""
    p = Path(path)
    try:
        rows = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BenchError(f"--prompts: {p} is not a readable JSON prompt set ({e})") from None
    if not isinstance(rows, list):
        raise BenchError(f"--prompts: {p} must hold a JSON list of {{\"prompt\": ..., \"subgroups\": [...]}}")
    out = []
    for r in rows:
        if isinstance(r, str):
            out.append((r, None))
        elif isinstance(r, dict) and isinstance(r.get("prompt"), str) and r["prompt"].strip():
            out.append((r["prompt"], r.get("subgroups") or r.get("subgroup")))
    if not out:
        raise BenchError(f"--prompts: {p} has no prompts")
    return out


def read_prompts_file(path) -> list[str]:
    p = Path(path)
    if not p.is_file():
        raise BenchError(f"--prompts: {p} is not a file (one prompt per line)")
    lines = [ln.strip() for ln in p.read_text(encoding="utf-8").splitlines()]
    prompts = [ln for ln in lines if ln and not ln.startswith("#")]
    if not prompts:
        raise BenchError(f"--prompts: {p} has no prompts (one per line; # starts a comment)")
    return prompts


def choose_prompts(pipe, n: int, prompts_file=None, dataset=None) -> tuple[list[tuple[str, Optional[str]]], str]:
    """→ ([(prompt, subgroup or None)] × n, where they came from).

    Order of preference: ``--prompts FILE``; ``heldout_prompts.json`` in the
    model folder; held-out captions of the dataset; the class names of a
    class-conditional model; a built-in list."""
    meta = dataset[1] if isinstance(dataset, tuple) else None

    def lookup(text):
        if meta is None:
            return None
        from .metrics import prompt_subgroup

        return prompt_subgroup(text, meta)

    if prompts_file:
        if str(prompts_file).endswith(".json"):
            return _spread(read_prompt_set(prompts_file), n), str(prompts_file)
        pool = [(p, lookup(p)) for p in read_prompts_file(prompts_file)]
        return _spread(pool, n), str(prompts_file)
    folder = pipe.source.folder
    held = folder / "heldout_prompts.json" if folder is not None else None
    if held is not None and held.is_file():
        rows = json.loads(held.read_text(encoding="utf-8"))
        pool = [(r["prompt"], r.get("subgroup")) if isinstance(r, dict) else (str(r), lookup(str(r))) for r in rows]
        pool = [(p, s) for p, s in pool if isinstance(p, str) and p.strip()]
        if pool:
            return _spread(pool, n), str(held)
    if meta is not None:
        seen, pool = set(), []
        for m in meta:
            cap = m.get("caption")
            if m.get("split") == "heldout" and cap and cap not in seen:
                seen.add(cap)
                pool.append((cap, m.get("subgroup")))
        if pool:
            return _spread(pool, n), "dataset held-out captions"
    names = getattr(pipe.conditioner, "names", None)
    if names:
        return _spread([(str(x), lookup(str(x))) for x in names], n), "model class names"
    return _spread([(p, lookup(p)) for p in FALLBACK_PROMPTS], n), "built-in prompts"


# --------------------------------------------------------------------------- the run


def _q(values, q):
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if len(values) else None


def _ratio(a, b):
    return a / b if b else None


def run_bench(pipe, prompts: Sequence[str], methods: Sequence[Method], seed: int = 0, *,
              subgroups: Optional[Sequence[Optional[str]]] = None, quality: Optional[Quality] = None,
              warmup: bool = True, on_progress: Optional[Callable[[str], None]] = None,
              precision: Optional[str] = None, measure_tv: bool = False) -> dict:
    """Run every method on every prompt, interleaved; → the report dict (see
    :data:`METHOD_FIELDS`). Prompt i uses seed ``seed + i`` for every method.
    Images are returned under the private key ``_images`` ({method: [image…]}).

    A method runs on ``pipe`` cast to its ``precision`` (a copy; ``pipe`` should be
    the most precise one, fp32), or to ``precision`` (default: ``pipe``'s own) when
    it names none. The reference is the vanilla method with the lowest median time.
    ``measure_tv``: every decode measures each step's TV from the target exactly.
    """
    methods = list(methods)
    if measure_tv:
        from dataclasses import replace

        methods = [replace(m, measure_tv=True) for m in methods]
    if not any(m.family == "vanilla" for m in methods):
        methods = vanilla_methods((pipe.precision,)) + methods
    methods = [m for m in methods if m.family == "vanilla"] + [m for m in methods if m.family != "vanilla"]
    default_precision = precision or pipe.precision
    variants: dict[str, Any] = {}

    def pipe_for(m: Method):
        prec = m.precision or default_precision
        if prec not in variants:
            variants[prec] = pipe.with_precision(prec)
        return variants[prec]

    prompts = list(prompts)
    if not prompts:
        raise BenchError("no prompts to run")
    seeds = [int(seed) + i for i in range(len(prompts))]
    order: list[dict] = []
    samples: dict[str, list[Sample]] = {m.name: [] for m in methods}
    tick = on_progress or (lambda _msg: None)
    load_start = _loadavg()
    t_start = time.perf_counter()

    if warmup:  # untimed: caches, proximity tables, allocator, lazy imports
        for m in methods:
            generate_one(pipe_for(m), m, prompts[0], seeds[0], 0)
            order.append({"phase": "warmup", "prompt_index": 0, "seed": seeds[0], "method": m.name})
            tick(f"warm-up {m.name}")
    for i, (prompt, s) in enumerate(zip(prompts, seeds)):
        for m in methods:
            sample = generate_one(pipe_for(m), m, prompt, s, i)
            samples[m.name].append(sample)
            order.append({"phase": "timed", "prompt_index": i, "seed": s, "method": m.name})
            tick(f"prompt {i + 1}/{len(prompts)} {m.name}")

    # The reference: vanilla at its fastest precision on this machine, in this run.
    ref = min((m for m in methods if m.family == "vanilla"),
              key=lambda m: float(np.median([x.seconds for x in samples[m.name]])))
    vanilla = samples[ref.name]
    results = [summarise(m, samples[m.name], vanilla, quality, subgroups) for m in methods]
    for m, r in zip(methods, results):
        r["precision"] = m.precision or default_precision
        r["reference"] = m is ref
        r["draft_length"] = (r.get("settings") or {}).get("draft_length")
    v_fid = reference_of(results)["prompt_fidelity"]
    for r in results:
        r["fidelity_delta"] = (r["prompt_fidelity"] - v_fid) if (r["prompt_fidelity"] is not None and v_fid is not None) else None
    report = {
        "schema": SCHEMA,
        "reference": ref.name,
        "prompts": [{"index": i, "prompt": p, "seed": s, "subgroup": (subgroups[i] if subgroups else None)}
                    for i, (p, s) in enumerate(zip(prompts, seeds))],
        "order": order,
        "methods": results,
        "total_seconds": time.perf_counter() - t_start,
        "load_average": {"start": load_start, "end": _loadavg()},
        "quality": quality.describe() if quality is not None else Quality(notes=["no quality provider"]).describe(),
    }
    report["default_pick"] = pick_default(results)
    report["_images"] = {m.name: [s.image for s in samples[m.name]] for m in methods}
    return report


def summarise(method: Method, samples: Sequence[Sample], vanilla: Sequence[Sample], quality: Optional[Quality] = None,
              subgroups: Optional[Sequence[Optional[str]]] = None) -> dict:
    """One method's row of the report from its samples and vanilla's (same prompts, same order)."""
    st = [s.stats for s in samples]
    secs = [s.seconds for s in samples]
    dsecs = [s.stats.get("wall_seconds") or 0.0 for s in samples]
    ratios = [v.seconds / s.seconds for v, s in zip(vanilla, samples) if s.seconds > 0]
    dratios = [(v.stats.get("wall_seconds") or 0.0) / d for v, d in zip(vanilla, dsecs) if d > 0]

    def total(key):
        return float(sum(x.get(key) or 0 for x in st))

    n = len(samples)
    tokens, fwd = total("tokens"), total("target_forwards") + n  # + the prefill forward per image
    wall = total("wall_seconds")
    per_prompt = []
    for s, v in zip(samples, vanilla):
        x = s.stats
        per_prompt.append({
            "prompt_index": s.prompt_index, "prompt": s.prompt, "seed": s.seed, "seconds": s.seconds,
            "decode_seconds": x.get("wall_seconds"), "speedup": _ratio(v.seconds, s.seconds),
            "tokens": x.get("tokens"), "target_forwards": (x.get("target_forwards") or 0) + 1,
            "drafter_forwards": x.get("drafter_forwards"), "drafted": x.get("drafted"), "accepted": x.get("accepted"),
            "accepted_relaxed": x.get("accepted_relaxed"), "mean_accepted_length": x.get("mean_accepted_length"),
            "drafter_seconds": x.get("drafter_seconds"),
        })
    row = {
        "name": method.name, "label": method.label, "family": method.family, "drafter": method.drafter,
        "k": method.k, "delta": method.delta, "lam": method.lam, "bound": method.bound,
        "settings": {k: v for k, v in (st[0].get("settings") or {}).items() if k != "seed"} if st else None,
        "images": n,
        "seconds_median": _q(secs, 50), "seconds_mean": float(np.mean(secs)) if secs else None,
        "decode_seconds_median": _q(dsecs, 50),
        "speedup_median": _q(ratios, 50), "speedup_q25": _q(ratios, 25), "speedup_q75": _q(ratios, 75),
        "speedup_min": min(ratios) if ratios else None, "speedup_max": max(ratios) if ratios else None,
        "decode_speedup_median": _q(dratios, 50),
        "tokens_per_image": tokens / n if n else None,
        "target_forwards_per_image": fwd / n if n else None,
        "drafter_forwards_per_image": total("drafter_forwards") / n if n else None,
        "mean_accepted_length": tokens / fwd if fwd else None,
        "acceptance_rate": _ratio(total("accepted"), total("drafted")) if total("drafted") else None,
        "relaxed_share": _ratio(total("accepted_relaxed"), tokens) if tokens else None,
        "drafter_cost_share": _ratio(total("drafter_seconds"), wall) if wall else None,
        "tokens_per_second": _ratio(tokens, sum(secs)) if sum(secs) else None,
        # a round = one target forward after the prefill (a vanilla step or a verify)
        "rounds_per_image": total("target_forwards") / n if n else None,
        "forward_ms_per_round": _ratio(1e3 * total("target_seconds"), total("target_forwards")),
        "overhead_ms_per_round": _ratio(1e3 * (wall - total("target_seconds") - total("drafter_seconds")
                                               - total("prefill_seconds")), total("target_forwards")),
        "prompt_fidelity": None, "fidelity_delta": None, "frechet_distance": None,
        # the relaxation's per-step bounds summed over an image (a TV bound for the step bound)
        "tv_budget_per_image": total("tv_budget_total") / n if n else None,
        # measured (--measure-tv): exact TV(step output, target) over the steps that decided a token
        "step_tv_mean": _ratio(total("step_tv_sum"), total("step_tv_slots")) if total("step_tv_slots") else None,
        "step_tv_max": max((x["step_tv_max"] for x in st if x.get("step_tv_max") is not None), default=None),
        "per_prompt": per_prompt,
    }
    if quality is not None and quality.recogniser is not None and samples:
        images = np.stack([s.image for s in samples])
        rec = quality.recogniser
        if subgroups is not None:
            def known(sg):  # a subgroup name, or a list of acceptable ones
                names = [sg] if isinstance(sg, str) else list(sg or [])
                names = [x for x in names if x in rec.index]
                return names or None

            labels = [known(sg) for sg in subgroups[:n]]
            if any(sg is not None for sg in labels):
                from .metrics import prompt_fidelity

                row["prompt_fidelity"] = prompt_fidelity(rec, images, labels, k=5)
        if quality.real_features is not None and n >= 2:
            from .metrics import frechet_distance

            row["frechet_distance"] = frechet_distance(rec.features(images), quality.real_features)
    return row


def _loadavg():
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):
        return None


# --------------------------------------------------------------------------- the default pick


def pick_default(results, max_fidelity_drop: float = 0.03) -> Optional[dict]:
    """The setting to recommend: the best median speed-up whose prompt fidelity
    stays within ``max_fidelity_drop`` (fidelity is a fraction: 0.03 = 3 points)
    of vanilla's. If fidelity was not measured (no recogniser), the best speed-up
    among all methods, ties broken by mean accepted length — quality unchecked.

    ``results`` is the report's ``methods`` list (or the report itself).
    Returns the entry's numbers and the criterion used, or None if empty.
    """
    rows = results["methods"] if isinstance(results, dict) else list(results)
    if not rows:
        return None
    vanilla = reference_of(rows)
    v_fid = vanilla.get("prompt_fidelity") if vanilla else None

    def speed(r):
        s = r.get("speedup_median")
        return s if s is not None else -math.inf

    def mal(r):
        m = r.get("mean_accepted_length")
        return m if m is not None else -math.inf

    if v_fid is not None:
        ok = [r for r in rows if r.get("prompt_fidelity") is not None
              and r["prompt_fidelity"] >= v_fid - max_fidelity_drop - 1e-12]
        best = max(ok, key=lambda r: (speed(r), r["prompt_fidelity"], mal(r)))
        criterion = (f"best median speed-up with prompt fidelity within {max_fidelity_drop * 100:g} points "
                     f"of vanilla ({v_fid:.3f})")
    else:
        best = max(rows, key=lambda r: (speed(r), mal(r)))
        criterion = ("no fidelity measured: best median speed-up (ties by mean accepted length); "
                     "quality unchecked")
    return {
        "name": best["name"], "label": best.get("label"), "family": best.get("family"),
        "drafter": best.get("drafter"), "k": best.get("k"), "delta": best.get("delta"), "lam": best.get("lam"),
        "draft_length": best.get("draft_length"), "speedup_median": best.get("speedup_median"), "speedup_q25": best.get("speedup_q25"),
        "speedup_q75": best.get("speedup_q75"), "mean_accepted_length": best.get("mean_accepted_length"),
        "prompt_fidelity": best.get("prompt_fidelity"), "fidelity_delta": best.get("fidelity_delta"),
        "vanilla_fidelity": v_fid, "max_fidelity_drop": max_fidelity_drop, "criterion": criterion,
    }


# --------------------------------------------------------------------------- output


def _f(x, spec=".2f", none="—"):
    return none if x is None else format(x, spec)


def format_table(report: dict) -> str:
    """The methods as an aligned plain-text table (plus the pick)."""
    head = ["method", "prec", "speed-up", "IQR", "min–max", "tok/fwd", "fwd/img", "accept", "relaxed", "drafter%",
            "fwd ms", "ovh ms", "s/img", "fidelity", "Δfid", "FD"]
    measured = any(r.get("step_tv_mean") is not None for r in report["methods"])
    if measured:
        head += ["TV mean", "TV max", "Σδ/img"]
    rows = []
    for r in report["methods"]:
        rows.append([
            r["name"] + (" *" if r.get("reference") else ""), r.get("precision") or "—",
            _f(r["speedup_median"], ".2f") + "×",
            f"{_f(r['speedup_q25'])}–{_f(r['speedup_q75'])}", f"{_f(r['speedup_min'])}–{_f(r['speedup_max'])}",
            _f(r["mean_accepted_length"]), _f(r["target_forwards_per_image"], ".1f"),
            _f(r["acceptance_rate"]), _f(r["relaxed_share"]),
            _f(None if r["drafter_cost_share"] is None else 100 * r["drafter_cost_share"], ".0f"),
            _f(r.get("forward_ms_per_round"), ".2f"), _f(r.get("overhead_ms_per_round"), ".2f"),
            _f(r["seconds_median"], ".3f"), _f(r["prompt_fidelity"], ".3f"),
            _f(r["fidelity_delta"], "+.3f"), _f(r["frechet_distance"], ".1f"),
        ] + ([_f(r.get("step_tv_mean"), ".3f"), _f(r.get("step_tv_max"), ".3f"),
              _f(r.get("tv_budget_per_image"), ".1f")] if measured else []))
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    lines = ["  ".join(str(c).ljust(w) if j == 0 else str(c).rjust(w) for j, (c, w) in enumerate(zip(row, widths)))
             for row in [head] + rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    ref = reference_of(report["methods"])
    if ref is not None:
        lines.append(f"* reference: {ref['name']} (vanilla at its fastest precision in this run); fwd ms / ovh ms: "
                     "target forward and the rest of a round (sampling, acceptance, bookkeeping) per round"
                     + ("; TV mean / max: measured TV between a step's output distribution and the target's, "
                        "over the steps that decided a token; Σδ/img: the per-step bounds summed over an image "
                        "(a bound on the image's TV from the target only for the step bound)" if measured else ""))
    pick = report.get("default_pick")
    if pick:
        fid = "" if pick["prompt_fidelity"] is None else (
            f", fidelity {pick['prompt_fidelity']:.3f} ({_f(pick['fidelity_delta'], '+.3f')} vs vanilla)")
        lines.append("")
        lines.append(f"default pick: {pick['name']}  {_f(pick['speedup_median'])}× "
                     f"(IQR {_f(pick['speedup_q25'])}–{_f(pick['speedup_q75'])}), "
                     f"{_f(pick['mean_accepted_length'])} tokens/forward{fid}")
        lines.append(f"  ({pick['criterion']})")
    return "\n".join(lines)


def write_csv(report: dict, path) -> Path:
    from ..engine.files import atomic_write

    def write(tmp):
        with open(tmp, "w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=list(CSV_FIELDS), extrasaction="ignore")
            w.writeheader()
            for r in report["methods"]:
                w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in CSV_FIELDS})

    atomic_write(path, write)
    return Path(path)


def write_json(report: dict, path) -> Path:
    from ..engine.files import atomic_write

    clean = {k: v for k, v in report.items() if not k.startswith("_")}
    atomic_write(path, lambda tmp: Path(tmp).write_text(json.dumps(clean, indent=2, default=str), encoding="utf-8"))
    return Path(path)


def write_pictures(report: dict, out_dir) -> dict:
    """The trade-off plot and the sample grid into ``out_dir``; → {kind: path}."""
    from .plots import sample_grid, tradeoff_plot

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    methods = report["methods"]
    have_fid = any(r["prompt_fidelity"] is not None for r in methods)
    if have_fid:
        xs = [r["prompt_fidelity"] for r in methods]
        x_label = "prompt fidelity (recogniser top-5)"
    else:  # no recogniser: how much of the output the relaxation decided (1 = exact)
        xs = [None if r["relaxed_share"] is None and r["family"] != "vanilla"
              else 1.0 - (r["relaxed_share"] or 0.0) for r in methods]
        x_label = "1 − share of tokens accepted by relaxation (no recogniser: fidelity unavailable)"
    points = [{"x": x, "y": r["speedup_median"], "y_lo": r["speedup_q25"], "y_hi": r["speedup_q75"],
               "name": r["name"], "family": r["family"]} for x, r in zip(xs, methods)]
    model = report.get("model", {}).get("name", "model")
    n = len(report["prompts"])
    plot = tradeoff_plot(points, out / "speedup-vs-fidelity.png", x_label=x_label,
                         title=f"{model}: speed-up vs quality ({n} prompts, median and IQR)",
                         subtitle=(report.get("machine", {}).get("cpu") or "")[:90])
    images = report.get("_images") or {}
    cols = min(n, 8)
    rows = [(r["name"], images.get(r["name"], [])[:cols]) for r in methods]
    labels = [f"{p['prompt'][:22]}\nseed {p['seed']}" for p in report["prompts"][:cols]]
    grid = sample_grid(rows, labels, out / "samples-grid.png", scale=2,
                       title=f"{model}: same prompts and seeds across methods")
    return {"plot": str(plot), "grid": str(grid)}


# --------------------------------------------------------------------------- CLI


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None, help="model folder or name (default: the bundled model)")
    p.add_argument("--prompts", default=None, metavar="FILE",
                   help="prompts, one per line (default: the model's held-out prompts, else the dataset's)")
    p.add_argument("--n", type=int, default=None, help=f"number of prompts (default {DEFAULT_N}; {QUICK_PROMPTS} with --quick)")
    p.add_argument("--quick", action="store_true",
                   help="2 prompts and a small grid: vanilla, exact per drafter, 2 LANTERN points, Jacobi relaxed")
    p.add_argument("--methods", nargs="+", default=None, metavar="PATTERN",
                   help="only these methods (names or families, globs, commas allowed; vanilla always runs)")
    p.add_argument("--list-methods", action="store_true", help="print the method grid for the model and exit")
    p.add_argument("--seed", type=int, default=0, help="seed of prompt 1 (prompt i uses seed + i − 1)")
    p.add_argument("--json", default=None, metavar="FILE", help="write the full report as JSON")
    p.add_argument("--csv", default=None, metavar="FILE", help="write one row per method as CSV")
    p.add_argument("--out", default="bench-out", metavar="DIR",
                   help="folder for the plot, the sample grid and bench.json (default: bench-out/)")
    p.add_argument("--no-pictures", action="store_true", help="skip the plot and the sample grid")
    p.add_argument("--data", default=None, metavar="DIR", help="dataset folder (default: the built emoji64 dataset)")
    p.add_argument("--no-warmup", action="store_true", help="skip the untimed warm-up generation per method")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    p.add_argument("--device", default=None, help="cpu, cuda, mps (default: the best available)")
    p.add_argument("--precision", default="auto", help="auto, fp32, bf16, fp16: weights and KV caches of the "
                   "speculative methods (auto: bf16 where the device runs it natively); vanilla runs in fp32 and "
                   "bf16 where native, and the faster is the reference")
    p.add_argument("--measure-tv", action="store_true",
                   help="measure, exactly, each step's total variation from the target (TV mean / max columns; "
                        "slow for LANTERN with sampled drafts, so timings then include the measurement)")
    p.add_argument("--max-fidelity-drop", type=float, default=0.03,
                   help="default pick: largest allowed fidelity drop vs vanilla (fraction, default 0.03)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from ..devices import pick_device
    from ..engine.checkpoints import CheckpointError
    from ..engine.settings import SettingsError
    from ..engine.text import PromptError
    from ..models import load_pipeline

    quick = bool(getattr(args, "quick", False))
    n = args.n if args.n is not None else (QUICK_PROMPTS if quick else DEFAULT_N)
    try:
        if n < 1:
            raise BenchError(f"--n: must be ≥ 1, got {n}")
        if args.threads is not None:
            if args.threads < 1:
                raise BenchError(f"--threads: must be ≥ 1, got {args.threads}")
            import torch

            torch.set_num_threads(args.threads)
        else:
            from ..threads import configure_decode_threads

            configure_decode_threads()
        if not (0.0 <= args.max_fidelity_drop <= 1.0):
            raise BenchError(f"--max-fidelity-drop: must be in [0, 1], got {args.max_fidelity_drop}")
        from ..engine.precision import PrecisionError, name as precision_name, native_bf16, resolve

        device = pick_device(args.device)
        try:
            spec_precision = precision_name(resolve(args.precision, device))
        except PrecisionError as e:
            raise BenchError(f"--{e}") from None
        # Vanilla runs in fp32 and, where the hardware has it natively (or it was asked
        # for), bf16: the faster one is the reference.
        vanilla_precisions = ["fp32"] + (["bf16"] if native_bf16(device)[0] or spec_precision == "bf16" else [])
        if spec_precision not in vanilla_precisions:
            vanilla_precisions.append(spec_precision)
        # Loaded in fp32: every precision's copy is cast from the most precise weights.
        pipe = load_pipeline(args.model, device=device, precision="fp32")
        methods = select_methods(method_grid(pipe.drafters, pipe.vocab_size, quick=quick,
                                             vanilla_precisions=vanilla_precisions), args.methods)
        if args.list_methods:
            for m in methods:
                print(f"{m.name:32s} {m.label}")
            return 0
        data_dir = Path(args.data) if args.data else None
        dataset = _load_dataset_quietly(data_dir)
        if args.data and not isinstance(dataset, tuple):
            raise BenchError(f"--data: {dataset}")
        chosen, source = choose_prompts(pipe, n, args.prompts, dataset)
        quality = load_quality(pipe.source.folder, dataset)
        prompts = [p for p, _ in chosen]
        for p in dict.fromkeys(prompts):  # bad prompts fail now, not halfway through
            pipe.conditioner(p)
    except (BenchError, CheckpointError, SettingsError, PromptError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT

    print(f"bench: {pipe.name}, {len(methods)} methods × {len(prompts)} prompts ({source}), "
          f"seeds {args.seed}..{args.seed + len(prompts) - 1}, {'no ' if args.no_warmup else ''}warm-up", file=sys.stderr)
    runs_total = len(methods) * (len(prompts) + (0 if args.no_warmup else 1))
    bar = None
    if not args.quiet:
        from tqdm import tqdm

        bar = tqdm(total=runs_total, unit="img", desc="bench", file=sys.stderr, dynamic_ncols=True)

    def progress(msg):
        if bar is not None:
            bar.set_postfix_str("done: " + msg, refresh=False)
            bar.update(1)

    try:
        report = run_bench(pipe, prompts, methods, args.seed, subgroups=[s for _, s in chosen], quality=quality,
                           warmup=not args.no_warmup, on_progress=progress, precision=spec_precision,
                           measure_tv=bool(getattr(args, "measure_tv", False)))
    except (SettingsError, PromptError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    finally:
        if bar is not None:
            bar.close()
    report["default_pick"] = pick_default(report["methods"], args.max_fidelity_drop)
    machine = machine_info()
    machine["device"] = str(pipe.device)
    report["machine"] = machine
    folder = pipe.source.folder
    report["model"] = {"name": pipe.name, "folder": str(folder) if folder is not None else None,
                       "vocab_size": pipe.vocab_size, "grid": pipe.grid, "drafters": list(pipe.drafters),
                       "defaults": pipe.defaults.to_dict()}
    from .floor import step_vs_floor

    report["step_floor"] = [{"precision": p, **step_vs_floor(pipe.with_precision(p), prompts[0])}
                            for p in vanilla_precisions]
    notes = list(report["quality"]["notes"])
    load = report["load_average"]["start"]
    cores = os.cpu_count() or 1
    if load and load[0] > cores:
        import torch

        hint = ", or try --threads 1" if torch.get_num_threads() > 1 else ""
        notes.append(f"the machine was busy (load average {load[0]:.1f} on {cores} cores): timings are noisy; "
                     f"rerun when idle{hint}")
    report["notes"] = notes
    report["config"] = {"n": len(prompts), "quick": quick, "seed": args.seed, "warmup": not args.no_warmup,
                        "prompt_source": source, "methods": [m.name for m in methods],
                        "max_fidelity_drop": args.max_fidelity_drop,
                        "options": {k: v for k, v in vars(args).items() if k != "func" and not callable(v)}}
    try:
        files = {}
        out = Path(args.out)
        if not args.no_pictures:
            files.update(write_pictures(report, out))
        files["json"] = str(write_json(report, out / "bench.json"))
        if args.json:
            files["json"] = str(write_json(report, args.json))
        if args.csv:
            files["csv"] = str(write_csv(report, args.csv))
        report["files"] = files
        if args.json:  # again, now with the file list
            write_json(report, args.json)
        write_json(report, out / "bench.json")
    except OSError as e:
        print(f"error: writing the results failed: {e}", file=sys.stderr)
        return 1

    m = report["machine"]
    print(f"{pipe.name} on {m['cpu']} ({m['device']}, {m['threads']} threads, torch {m['torch']}); "
          f"{len(prompts)} prompts × {len(methods)} methods, interleaved, {report['total_seconds']:.1f} s; "
          f"load average {report['load_average']['start']} → {report['load_average']['end']}")
    print(format_table(report))
    for sf in report["step_floor"]:
        print(f"vanilla decode step ({sf['precision']}) {sf['step_ms']:.2f} ms vs matmul-only floor "
              f"{sf['floor_ms']:.2f} ms ({sf['ratio']:.2f}×; {sf['rows']} CFG rows, {sf['threads']} threads)")
    for note in report["notes"]:
        print(f"note: {note}")
    for kind, path in files.items():
        print(f"{kind}: {path}")
    return 0
