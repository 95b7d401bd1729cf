"""Statistics of a method's samples against the reference (speed-up median, IQR,
tokens per forward, quality …) and the default pick among the methods."""

from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np

from ...fidelity import mean_interval
from ...models.quality import seed_pairs, variety
from ...reports import reference_of
from ..metrics import frechet_distance, prompt_fidelity, wanted_ranks
from .methods import Method
from .quality import Quality
from .sample import Sample


def _q(values, q):
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if len(values) else None


def ratio(a, b):
    """a / b; None when b is 0 (or None): a speed-up or a share that cannot be measured."""
    return a / b if b else None


def speed_fields(stats: Sequence[dict], secs, dsecs, ratios, dratios) -> dict:
    """The timing, speed-up and token fields a report row has, from its images' decode stats,
    whole-generation and decode seconds, and the per-pair speed-ups against the reference
    (shared by the bench's rows and the batch sweep's)."""
    n = len(stats)

    def total(key):
        return float(sum(x.get(key) or 0 for x in stats))

    tokens, fwd = total("tokens"), total("target_forwards") + n  # + the prefill forward per image
    wall = total("wall_seconds")
    return {
        "seconds_median": _q(secs, 50), "seconds_mean": float(np.mean(secs)) if secs else None,
        "decode_seconds_median": _q(dsecs, 50),
        "speedup_median": _q(ratios, 50), "speedup_q25": _q(ratios, 25), "speedup_q75": _q(ratios, 75),
        "speedup_min": min(ratios) if ratios else None, "speedup_max": max(ratios) if ratios else None,
        "decode_speedup_median": _q(dratios, 50),
        "tokens_per_image": tokens / n if n else None,
        "target_forwards_per_image": fwd / n if n else None,
        "drafter_forwards_per_image": total("drafter_forwards") / n if n else None,
        # the share of forwards after the prefill that ran a compiled graph (engine/compiled.py)
        "compiled_share": ratio(total("compiled_forwards"), total("target_forwards")) if total("target_forwards") else None,
        "mean_accepted_length": tokens / fwd if fwd else None,
        "acceptance_rate": ratio(total("accepted"), total("drafted")) if total("drafted") else None,
        "relaxed_share": ratio(total("accepted_relaxed"), tokens) if tokens else None,
        "drafter_cost_share": ratio(total("drafter_seconds"), wall) if wall else None,
        "tokens_per_second": ratio(tokens, sum(secs)) if sum(secs) else None,
    }


def seed_variety(samples: Sequence[Sample]) -> dict:
    """``seed_distance`` (mean absolute pixel difference of two seeds of one prompt) and ``seeds_differ``
    (the share of prompts whose two seeds are different pictures); None unless some prompt ran twice."""
    pairs = seed_pairs([s.prompt for s in samples], [s.image for s in samples])
    if not len(pairs):
        return {"seed_distance": None, "seeds_differ": None, "seed_pairs": 0}
    distance, differ = variety(pairs)
    return {"seed_distance": distance, "seeds_differ": differ, "seed_pairs": int(len(pairs))}


def summarise(method: Method, samples: Sequence[Sample], vanilla: Sequence[Sample], quality: Optional[Quality] = None,
              subgroups: Optional[Sequence[Optional[str]]] = None, identities: Optional[Sequence] = None) -> dict:
    """One method's row of the report from its samples and vanilla's (same prompts, same order).

    Quality: with the model's meter (an identity recogniser on a snapping model) and the prompts'
    ``identities``, ``prompt_fidelity`` is the mean of the meter's calibrated probabilities over the
    pictures with its interval (``fidelity_interval``), and ``identity_top1`` / ``identity_top5`` the
    shares whose asked emoji it ranks first / in its first five; otherwise subgroup top-5."""
    st = [s.stats for s in samples]
    secs = [s.seconds for s in samples]
    dsecs = [s.stats.get("wall_seconds") or 0.0 for s in samples]
    ratios = [v.seconds / s.seconds for v, s in zip(vanilla, samples) if s.seconds > 0]
    dratios = [(v.stats.get("wall_seconds") or 0.0) / d for v, d in zip(vanilla, dsecs) if d > 0]

    def total(key):
        return float(sum(x.get(key) or 0 for x in st))

    n = len(samples)
    wall = total("wall_seconds")
    per_prompt = []
    for s, v in zip(samples, vanilla):
        x = s.stats
        per_prompt.append({
            "prompt_index": s.prompt_index, "prompt": s.prompt, "seed": s.seed, "seconds": s.seconds,
            "decode_seconds": x.get("wall_seconds"), "speedup": ratio(v.seconds, s.seconds),
            "tokens": x.get("tokens"), "target_forwards": (x.get("target_forwards") or 0) + 1,
            "drafter_forwards": x.get("drafter_forwards"), "drafted": x.get("drafted"), "accepted": x.get("accepted"),
            "accepted_relaxed": x.get("accepted_relaxed"), "mean_accepted_length": x.get("mean_accepted_length"),
            "drafter_seconds": x.get("drafter_seconds"),
            "identity_rank": None,  # with an identity judge: the best rank of a right identity (0 = first)
            "fidelity": None,  # with the model's meter: its calibrated probability for this picture
        })
    row = {
        "name": method.name, "label": method.label, "family": method.family, "drafter": method.drafter,
        "k": method.k, "delta": method.delta, "lam": method.lam, "bound": method.bound,
        "settings": {k: v for k, v in (st[0].get("settings") or {}).items() if k != "seed"} if st else None,
        "images": n,
        **speed_fields(st, secs, dsecs, ratios, dratios),
        # a round = one target forward after the prefill (a vanilla step or a verify)
        "rounds_per_image": total("target_forwards") / n if n else None,
        "forward_ms_per_round": ratio(1e3 * total("target_seconds"), total("target_forwards")),
        "overhead_ms_per_round": ratio(1e3 * (wall - total("target_seconds") - total("drafter_seconds")
                                               - total("prefill_seconds")), total("target_forwards")),
        "prompt_fidelity": None, "fidelity_interval": None, "fidelity_n": None, "fidelity_delta": None,
        "frechet_distance": None,
        "identity_top1": None, "identity_top5": None,
        # how different the first two seeds of each prompt drawn at least twice are (models/quality.py)
        **seed_variety(samples),
        # the relaxation's per-step bounds summed over an image (a TV bound for the step bound)
        "tv_budget_per_image": total("tv_budget_total") / n if n else None,
        # measured (--measure-tv): exact TV(step output, target) over the steps that decided a token
        "step_tv_mean": ratio(total("step_tv_sum"), total("step_tv_slots")) if total("step_tv_slots") else None,
        "step_tv_max": max((x["step_tv_max"] for x in st if x.get("step_tv_max") is not None), default=None),
        "per_prompt": per_prompt,
    }
    if quality is not None and quality.recogniser is not None and samples:
        images = np.stack([s.image for s in samples])
        rec, meter = quality.recogniser, quality.meter
        if meter is not None and identities is not None and meter.level is None:
            _judge_identities(row, meter, images, identities[:n])
        else:  # no meter of a snapping model: the recogniser's subgroup top-5, and its identity ranks
            if subgroups is not None:
                labels = [_known(rec, sg, "subgroup") for sg in subgroups[:n]]
                if any(sg is not None for sg in labels):
                    row["prompt_fidelity"] = prompt_fidelity(rec, images, labels, k=5)
            if identities is not None and "identity" in rec.levels:
                wanted = [_known(rec, ids, "identity") for ids in identities[:n]]
                if any(w is not None for w in wanted):
                    ranks = wanted_ranks(rec, images, wanted, level="identity")
                    got = np.array([r for r in ranks if r is not None])
                    row["identity_top1"], row["identity_top5"] = float(np.mean(got < 1)), float(np.mean(got < 5))
                    for pp, r in zip(row["per_prompt"], ranks):
                        pp["identity_rank"] = r  # 0: the judge's first choice is a right identity
        if quality.real_features is not None and n >= 2:
            row["frechet_distance"] = frechet_distance(rec.features(images), quality.real_features)
    return row


def _judge_identities(row: dict, meter, images: np.ndarray, identities: Sequence) -> None:
    """The meter's fields of a method's row: ``prompt_fidelity`` (the mean of the pictures' calibrated
    probabilities), its 95 % interval over the pictures, ``identity_top1`` (the share whose asked emoji the
    meter ranks first among the emoji the model draws: recognised) and ``identity_top5``."""
    keep = [i for i, ids in enumerate(identities) if ids and meter.knows(ids)]
    if not keep:
        return
    judged = meter.judge(images[keep], [identities[i] for i in keep])
    iv = mean_interval([j.probability for j in judged])
    ranks = np.array([j.rank for j in judged])
    row["prompt_fidelity"], row["fidelity_interval"], row["fidelity_n"] = iv.mean, [iv.low, iv.high], iv.n
    row["identity_top1"], row["identity_top5"] = float(np.mean(ranks == 1)), float(np.mean(ranks <= 5))
    for i, j in zip(keep, judged):
        pp = row["per_prompt"][i]
        pp["identity_rank"], pp["fidelity"] = j.rank - 1, j.probability  # rank 0: the meter's first choice


def _known(rec, names, level: str):
    """A class name or list of acceptable ones → those the recogniser knows at ``level`` (None if none)."""
    names = [names] if isinstance(names, str) else list(names or [])
    have = set(rec.classes_at(level))
    names = [x for x in names if x in have]
    return names or None


def fidelity_noise(fidelity: float, images: int) -> float:
    """The 95 % half-width of the difference between two methods' fidelities, each a share of ``images``
    pictures near ``fidelity`` (normal approximation): differences smaller than this are sampling noise."""
    return 1.96 * math.sqrt(2.0 * fidelity * (1.0 - fidelity) / images)


def pick_default(results, max_fidelity_drop: float = 0.03, images: Optional[int] = None) -> Optional[dict]:
    """The setting to recommend: the best median speed-up whose prompt fidelity
    stays within ``max_fidelity_drop`` (fidelity is a fraction: 0.03 = 3 points)
    of vanilla's. If fidelity was not measured (no recogniser), the best speed-up
    among all methods, ties broken by mean accepted length — quality unchecked.

    ``results`` is the report's ``methods`` list (or the report itself); ``images``: the pictures each
    method's fidelity is measured on, for the noise of a fidelity difference (``fidelity_noise``).
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
        "fidelity_noise": fidelity_noise(v_fid, images) if (v_fid is not None and images) else None,
        "images": images,
    }
