"""Writing a bench report: the plain-text table, CSV, JSON, and the pictures
(trade-off plot and sample grid)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from ...engine.files import atomic_write
from ...reports import reference_of
from ..plots import sample_grid, tradeoff_plot
from .schema import CSV_FIELDS

def _f(x, spec=".2f", none="—"):
    return none if x is None else format(x, spec)


def _interval(iv) -> str:
    return "—" if not iv else f"{iv[0]:.3f}–{iv[1]:.3f}"


def format_table(report: dict) -> str:
    """The methods as an aligned plain-text table (plus the pick)."""
    head = ["method", "prec", "speed-up", "IQR", "min–max", "tok/fwd", "fwd/img", "accept", "relaxed", "drafter%",
            "fwd ms", "ovh ms", "s/img", "fidelity", "Δfid", "FD"]
    intervals = any(r.get("fidelity_interval") for r in report["methods"])
    if intervals:
        head.insert(head.index("fidelity") + 1, "95% interval")
    ids = any(r.get("identity_top5") is not None for r in report["methods"])
    if ids:
        head += ["recognised", "id top-5"]
    varied = any(r.get("seeds_differ") is not None for r in report["methods"])
    if varied:
        head += ["seeds differ"]
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
        ] + ([_interval(r.get("fidelity_interval"))] if intervals else []) + [
            _f(r["fidelity_delta"], "+.3f"), _f(r["frechet_distance"], ".1f"),
        ] + ([_f(r.get("identity_top1"), ".3f"), _f(r.get("identity_top5"), ".3f")] if ids else [])
            + ([_f(r.get("seeds_differ"), ".2f")] if varied else []) + ([_f(r.get("step_tv_mean"), ".3f"), _f(r.get("step_tv_max"), ".3f"),
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
                        "(a bound on the image's TV from the target only for the step bound)" if measured else "")
                     + ("; fidelity: the quality meter's calibrated probability that a picture shows the asked "
                        "emoji, the mean over the method's pictures with its 95 % interval; recognised: the share "
                        "whose asked emoji the meter ranks first among the emoji the model draws" if intervals else "")
                     + ("; seeds differ: the share of prompts whose first two seeds are different pictures "
                        "(mean absolute pixel difference ≥ 12 of 255)" if varied else ""))
    pick = report.get("default_pick")
    if pick:
        fid = "" if pick["prompt_fidelity"] is None else (
            f", fidelity {pick['prompt_fidelity']:.3f} ({_f(pick['fidelity_delta'], '+.3f')} vs vanilla)")
        lines.append("")
        lines.append(f"default pick: {pick['name']}  {_f(pick['speedup_median'])}× "
                     f"(IQR {_f(pick['speedup_q25'])}–{_f(pick['speedup_q75'])}), "
                     f"{_f(pick['mean_accepted_length'])} tokens/forward{fid}")
        lines.append(f"  ({pick['criterion']})")
        if pick.get("fidelity_noise") is not None:
            lines.append(f"  (fidelity from {pick['images']} pictures a method: a difference within "
                         f"±{pick['fidelity_noise'] * 100:.0f} points is sampling noise at 95 %)")
    return "\n".join(lines)


def write_csv(report: dict, path) -> Path:
    def write(tmp):
        with open(tmp, "w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=list(CSV_FIELDS), extrasaction="ignore")
            w.writeheader()
            for r in report["methods"]:
                w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in CSV_FIELDS})

    atomic_write(path, write)
    return Path(path)


def write_json(report: dict, path) -> Path:
    clean = {k: v for k, v in report.items() if not k.startswith("_")}
    atomic_write(path, lambda tmp: Path(tmp).write_text(json.dumps(clean, indent=2, default=str), encoding="utf-8"))
    return Path(path)


def write_pictures(report: dict, out_dir) -> dict:
    """The trade-off plot and the sample grid into ``out_dir``; → {kind: path}."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    methods = report["methods"]
    have_fid = any(r["prompt_fidelity"] is not None for r in methods)
    if have_fid:
        xs = [r["prompt_fidelity"] for r in methods]
        x_label = ("prompt fidelity (the quality meter's mean probability)"
                   if any(r.get("fidelity_interval") for r in methods) else "prompt fidelity (recogniser top-5)")
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
