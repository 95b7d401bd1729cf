"""A sweep's report, computed from its manifest: the bench's statistics per setting.

``lantern-studio batch --sweep …`` renders every combination of the swept
settings, plus the vanilla reference (no drafter), on the same prompts and
seeds, and records one manifest line per image (commands/batch_plan.py). This
module turns those lines into rows with the bench's definitions
(eval/bench/): the speed-up is the median over (prompt, seed) pairs of
vanilla's seconds over the setting's seconds, end to end, with its IQR and
range; tokens per target forward counts the prefill's forward; prompt fidelity
(recogniser top-5 contains the prompt's subgroup) and a Fréchet distance to
real held-out images come from the model folder's recogniser when it ships one
(eval.bench.load_quality). Where the manifest lines carry each picture's own
prompt fidelity (the meter's probability, ``fidelity.KEY``: ``lantern-studio
sweep`` passes it), a row also has its mean over the row's pictures (its seeds)
with the 95 % interval of that mean (``fidelity_mean``, ``fidelity_low``,
``fidelity_high``, ``fidelity_n``: ``fidelity.mean_interval``; null and 0
without). Plain data in, plain data out: the rows name their fields as the
bench's do, so what reads a bench report reads these.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np

from .. import fidelity
from ..engine.decode_method import DecodeMethod
from ..engine.files import atomic_write
from ..reports import reference_of
from .bench.summary import ratio, speed_fields
from .metrics import frechet_distance, prompt_fidelity
from .plots import tradeoff_plot

SCHEMA = "lantern-studio-sweep/1"
#: The fields of one row (values may be null).
ROW_FIELDS = (
    "name", "label", "family", "reference", "changes", "settings", "drafter", "k", "delta", "lam", "bound",
    "draft_length", "precision", "planned", "images", "pairs",
    "seconds_median", "seconds_mean", "decode_seconds_median",
    "speedup_median", "speedup_q25", "speedup_q75", "speedup_min", "speedup_max", "decode_speedup_median",
    "tokens_per_image", "target_forwards_per_image", "drafter_forwards_per_image", "mean_accepted_length",
    "acceptance_rate", "relaxed_share", "drafter_cost_share", "tokens_per_second",
    "prompt_fidelity", "fidelity_delta", "frechet_distance",
    "fidelity_mean", "fidelity_low", "fidelity_high", "fidelity_n", "per_prompt",
)
#: The settings that make two images of one prompt and seed comparable (all but the decoding ones).
PAIR_FIELDS = ("temperature", "top_k", "top_p", "cfg_scale", "greedy")


def pair_key(entry: dict) -> tuple:
    s = entry.get("settings") or {}
    return (entry.get("prompt"), entry.get("seed")) + tuple(s.get(k) for k in PAIR_FIELDS)


def family_of(settings: dict, vanilla: bool = False) -> str:
    """The bench's family names (they pick the plot's colours): ``DecodeMethod.bench_family``."""
    if vanilla:
        return "vanilla"
    return DecodeMethod.of_dict(settings).bench_family


def summarise(name: str, family: str, changes: dict, keys: Sequence[str], entries: dict,
              vanilla: Optional[dict] = None) -> dict:
    """One row from its items' manifest lines (``entries``: key → line) and the
    reference's lines by pair key (``vanilla``)."""
    rows = [entries[k] for k in keys if k in entries]
    st = [r.get("stats") or {} for r in rows]
    secs = [float(r.get("seconds") or 0.0) for r in rows]
    dsecs = [float(s.get("wall_seconds") or 0.0) for s in st]
    n = len(rows)
    ratios, dratios, per_prompt = [], [], []
    for r, sec, dsec in zip(rows, secs, dsecs):
        v = (vanilla or {}).get(pair_key(r))
        speedup = ratio(float(v["seconds"]), sec) if v is not None and sec > 0 else None
        if speedup is not None:
            ratios.append(speedup)
            vd = float((v.get("stats") or {}).get("wall_seconds") or 0.0)
            if dsec > 0:
                dratios.append(vd / dsec)
        x = r.get("stats") or {}
        per_prompt.append({"prompt": r.get("prompt"), "seed": r.get("seed"), "seconds": sec, "speedup": speedup,
                           "tokens": x.get("tokens"), "target_forwards": (x.get("target_forwards") or 0) + 1,
                           "worker": r.get("worker"), "file": r.get("file"), "key": r.get("key")})
    settings = {k: v for k, v in (rows[0].get("settings") or {}).items() if k != "seed"} if rows else None
    s = settings or {}
    return {
        "name": name, "label": "vanilla AR (reference)" if family == "vanilla" and name == "vanilla" else name,
        "family": family, "reference": False, "changes": dict(changes), "settings": settings,
        "drafter": s.get("drafter"), "k": s.get("k"), "delta": s.get("delta"), "lam": s.get("lam"),
        "bound": s.get("bound"), "draft_length": s.get("draft_length"),
        "precision": rows[0].get("precision") if rows else None,
        "planned": len(keys), "images": n, "pairs": len(ratios),
        **speed_fields(st, secs, dsecs, ratios, dratios),
        "prompt_fidelity": None, "fidelity_delta": None, "frechet_distance": None,
        **interval_fields(fidelity.mean_interval(fidelity.of_record(r) for r in rows)),
        "per_prompt": per_prompt,
    }


def interval_fields(iv: Optional[fidelity.Interval]) -> dict:
    """A row's per-picture prompt fidelity: the mean with its 95 % interval and how many pictures (0: none)."""
    if iv is None:
        return {"fidelity_mean": None, "fidelity_low": None, "fidelity_high": None, "fidelity_n": 0}
    return {"fidelity_mean": iv.mean, "fidelity_low": iv.low, "fidelity_high": iv.high, "fidelity_n": iv.n}


def add_quality(row: dict, rows_entries: Sequence[dict], quality, load_image: Callable[[dict], np.ndarray]) -> None:
    """Prompt fidelity and Fréchet distance for one row, as the bench computes them."""
    rec = getattr(quality, "recogniser", None)
    if rec is None or not rows_entries:
        return
    images = np.stack([load_image(e) for e in rows_entries])

    def known(sg):  # a subgroup name, or a list of acceptable ones, that the recogniser knows
        names = [sg] if isinstance(sg, str) else list(sg or [])
        names = [x for x in names if x in rec.index]
        return names or None

    labels = [known(e.get("subgroup")) for e in rows_entries]
    if any(lab is not None for lab in labels):
        row["prompt_fidelity"] = prompt_fidelity(rec, images, labels, k=5)
    if quality.real_features is not None and len(images) >= 2:
        row["frechet_distance"] = frechet_distance(rec.features(images), quality.real_features)


def build_report(groups: Sequence[dict], entries: dict, *, quality=None,
                 load_image: Optional[Callable[[dict], np.ndarray]] = None) -> dict:
    """``groups``: [{"name", "family", "changes", "keys"}] (the plan's rows, vanilla
    first when there is one); ``entries``: key → manifest line. → {"schema",
    "reference", "methods": rows, "quality"}; speed-ups are relative to the
    group of family "vanilla" (``reference`` True on its row)."""
    vanilla_group = next((g for g in groups if g["family"] == "vanilla"), None)
    vanilla = None
    if vanilla_group is not None:
        vanilla = {pair_key(entries[k]): entries[k] for k in vanilla_group["keys"] if k in entries}
    rows = []
    for g in groups:
        first = next((entries[k] for k in g["keys"] if k in entries), None)
        family = "vanilla" if g is vanilla_group else family_of((first or {}).get("settings") or {})
        row = summarise(g["name"], family, g.get("changes") or {}, g["keys"], entries, vanilla)
        row["reference"] = g is vanilla_group
        if quality is not None and load_image is not None:
            add_quality(row, [entries[k] for k in g["keys"] if k in entries], quality, load_image)
        rows.append(row)
    ref = reference_of(rows) if vanilla_group is not None else None
    v_fid = ref["prompt_fidelity"] if ref is not None else None
    for r in rows:
        if r["prompt_fidelity"] is not None and v_fid is not None:
            r["fidelity_delta"] = r["prompt_fidelity"] - v_fid
    return {"schema": SCHEMA, "reference": vanilla_group["name"] if vanilla_group else None, "methods": rows,
            "quality": quality.describe() if quality is not None and hasattr(quality, "describe") else None}


# --------------------------------------------------------------------------- output


def _f(x, spec=".2f", none="—"):
    return none if x is None else format(x, spec)


def _meter_cell(r: dict) -> str:
    if not r.get("fidelity_n"):
        return "—"
    return fidelity.format_interval(fidelity.Interval(r["fidelity_mean"], r["fidelity_low"], r["fidelity_high"],
                                                      r["fidelity_n"]), "picture")


def format_table(report: dict) -> str:
    head = ["setting", "images", "speed-up", "IQR", "tok/fwd", "fwd/img", "accept", "relaxed", "s/img",
            "fidelity", "Δfid", "FD"]
    meter = any(r.get("fidelity_n") for r in report["methods"])
    if meter:  # the meter's per-picture probabilities: their mean and 95 % interval per setting
        head.insert(head.index("fidelity"), "meter (95%)")
    rows = []
    for r in report["methods"]:
        rows.append([
            r["name"] + (" *" if r.get("reference") else ""), f"{r['images']}/{r['planned']}",
            _f(r["speedup_median"]) + ("×" if r["speedup_median"] is not None else ""),
            "—" if r["speedup_q25"] is None else f"{_f(r['speedup_q25'])}–{_f(r['speedup_q75'])}",
            _f(r["mean_accepted_length"]),
            _f(r["target_forwards_per_image"], ".1f"), _f(r["acceptance_rate"]), _f(r["relaxed_share"]),
            _f(r["seconds_median"], ".3f")]
            + ([_meter_cell(r)] if meter else [])
            + [_f(r["prompt_fidelity"], ".3f"), _f(r["fidelity_delta"], "+.3f"), _f(r["frechet_distance"], ".1f")])
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    lines = ["  ".join(str(c).ljust(w) if j == 0 else str(c).rjust(w) for j, (c, w) in enumerate(zip(row, widths)))
             for row in [head] + rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    if report.get("reference"):
        lines.append(f"* reference: {report['reference']} (no drafter); speed-up: median over prompt+seed pairs of "
                     "its seconds / the setting's, end to end")
    return "\n".join(lines)


def write_json(report: dict, path) -> Path:
    atomic_write(path, lambda tmp: Path(tmp).write_text(json.dumps(report, indent=2, default=str), encoding="utf-8"))
    return Path(path)


def write_plot(report: dict, path, title: str = "", subtitle: str = "") -> Optional[Path]:
    """The bench's speed-up vs quality plot (eval/plots.py) of the rows; None if no row has a speed-up."""
    rows = report["methods"]
    if not any(r["speedup_median"] is not None for r in rows):
        return None
    if any(r["prompt_fidelity"] is not None for r in rows):
        xs, x_label = [r["prompt_fidelity"] for r in rows], "prompt fidelity (recogniser top-5)"
    else:  # no recogniser: how much of the output the relaxation decided (1 = exact)
        xs = [1.0 - (r["relaxed_share"] or 0.0) if r["images"] else None for r in rows]
        x_label = "1 − share of tokens accepted by relaxation (no recogniser: fidelity unavailable)"
    points = [{"x": x, "y": r["speedup_median"], "y_lo": r["speedup_q25"], "y_hi": r["speedup_q75"],
               "name": r["name"], "family": r["family"]} for x, r in zip(xs, rows)]
    return tradeoff_plot(points, path, x_label=x_label, title=title, subtitle=subtitle)
