"""Where a model's pictures start to break: the δ ladder (and the k ladder) of a bench run.

LANTERN's two knobs trade quality for speed, but by how much is the model's own property: a
model whose next-token distribution is nearly one-hot changes nothing until δ reaches the
mode's mass, then breaks; an ambiguous one gives a curve. The ladder is read off a bench
report: the LANTERN rows that share the drafter, window and bound of the model's default and
differ only in δ (at the default k) or only in k (at the default δ), exact decoding as their
δ = 0 / k = 0 rung. A rung *breaks* the picture when its fidelity is ``break_drop`` (10 points)
or more below vanilla's; the profile the studio reads (``models/lantern_profile.py``) is this
ladder with the sampling it was measured at.
"""

from __future__ import annotations

import datetime as _dt
from typing import Optional

from ...models.lantern_profile import PROFILE_SCHEMA
from ...reports import reference_of

BREAK_DROP = 0.10  # fidelity this far below vanilla's (10 points) is a broken picture


def fidelity_of(row: dict) -> Optional[float]:
    """The quality a rung is judged by: the meter's mean fidelity where the run has it (a row with
    ``fidelity_interval``), else identity top-5 where the prompts name identities, else prompt fidelity."""
    if row.get("fidelity_interval"):
        return row.get("prompt_fidelity")
    top5 = row.get("identity_top5")
    return top5 if top5 is not None else row.get("prompt_fidelity")


RELAXED_FAMILIES = ("lantern", "jacobi-relaxed")


def _same_path(row: dict, drafter: str, draft_length, coupling) -> bool:
    """Same drafter, window and coupling as the default; eager; a constant δ (no decay, not adaptive)."""
    s = row.get("settings") or {}
    return (row.get("drafter") == drafter and row.get("draft_length") == draft_length
            and not row.get("compiled") and s.get("coupling", True) == coupling
            and float(s.get("delta_decay", 1.0)) == 1.0 and not s.get("adaptive_delta"))


def rungs(rows: list, vary: str, fixed: float, drafter: str, draft_length, coupling: bool = True) -> list:
    """The rows that differ from the default only in ``vary`` ("delta" or "k"), ``fixed`` the other knob;
    exact decoding on the same drafter and window is the rung 0. One rung per value (the first row of it)."""
    other = "k" if vary == "delta" else "delta"
    picked: dict = {}
    for r in rows:
        if not _same_path(r, drafter, draft_length, coupling):
            continue
        if r.get("family") == "exact":
            picked.setdefault(0.0, r)
        elif (r.get("family") in RELAXED_FAMILIES and r.get("bound") in (None, "lantern") and r.get(vary) is not None
              and r.get(other) is not None and abs(float(r[other]) - float(fixed)) < 1e-9):
            picked.setdefault(float(r[vary]), r)
    return [picked[v] | {"_value": v} for v in sorted(picked)]


def ladder(report: dict, vary: str, break_drop: float = BREAK_DROP) -> Optional[dict]:
    """The ``vary`` ladder ("delta" at the default k, or "k" at the default δ) of a bench report, or None
    when the run has fewer than two of its rungs. Each rung: the value, tokens per target forward, the
    share of tokens the relaxation accepted, fidelity and its change against vanilla (points, negative =
    worse); ``breaks_at`` is the smallest value whose fidelity fell ``break_drop`` or more (None: none did)."""
    rows = report["methods"]
    d = (report.get("model") or {}).get("defaults") or {}
    drafter, length = d.get("drafter"), d.get("draft_length")
    fixed = d.get("k") if vary == "delta" else d.get("delta")
    if drafter in (None, "none") or fixed is None:
        return None
    found = rungs(rows, vary, fixed, drafter, length, d.get("coupling", True))
    if len(found) < 2:
        return None
    vanilla = reference_of(rows)
    v_fid = fidelity_of(vanilla) if vanilla else None
    out, breaks = [], None
    for r in found:
        fid = fidelity_of(r)
        drop = None if fid is None or v_fid is None else fid - v_fid
        if breaks is None and drop is not None and drop <= -break_drop + 1e-12:
            breaks = r["_value"]
        out.append({vary: r["_value"], "tokens_per_forward": r.get("mean_accepted_length"),
                    "relaxed_share": r.get("relaxed_share"), "fidelity": fid, "fidelity_change": drop,
                    "fidelity_interval": r.get("fidelity_interval"), "fidelity_n": r.get("fidelity_n"),
                    "recognised": r.get("identity_top1"),
                    "images": r.get("images"), "speedup": r.get("speedup_median")})
    return {"vary": vary, "fixed": {("k" if vary == "delta" else "delta"): fixed}, "rungs": out,
            "vanilla_fidelity": v_fid, "vanilla_fidelity_interval": vanilla.get("fidelity_interval") if vanilla else None,
            "vanilla_fidelity_n": vanilla.get("fidelity_n") if vanilla else None,
            "breaks_at": breaks, "break_drop": break_drop}


def profile(report: dict, break_drop: float = BREAK_DROP) -> Optional[dict]:
    """What a model folder keeps as ``lantern_profile.json``: the ladders of this run, the sampling and
    prompts they were measured with, and where; None when the run measured no ladder."""
    ladders = {v: lad for v in ("delta", "k") if (lad := ladder(report, v, break_drop)) is not None}
    if not ladders:
        return None
    d = report["model"]["defaults"]
    cfg = report.get("config") or {}
    m = report.get("machine") or {}
    return {
        "schema": PROFILE_SCHEMA,
        "measured": _dt.date.today().isoformat(),
        "machine": f"{m.get('cpu', '?')} ({m.get('device', '?')}, {m.get('threads', '?')} threads)",
        "sampling": {"temperature": d.get("temperature"), "top_k": d.get("top_k"), "top_p": d.get("top_p"),
                     "greedy": d.get("greedy"), "cfg_scale": d.get("cfg_scale")},
        "drafter": d.get("drafter"), "draft_length": d.get("draft_length"),
        "images": len(report.get("prompts") or []) or cfg.get("n"),
        "prompt_source": cfg.get("prompt_source"),
        "ladders": ladders,
    }


def _interval(iv) -> str:
    return f" [{iv[0]:.0%}–{iv[1]:.0%}]" if iv else ""


def describe(lad: dict) -> list:
    """The ladder as printed lines: one per rung, and where the picture breaks."""
    vary = lad["vary"]
    sym = "δ" if vary == "delta" else "k"
    fixed = ", ".join(f"{'δ' if k == 'delta' else k} {v:g}" for k, v in lad["fixed"].items())
    lines = [f"{sym} ladder at {fixed} (rung 0 = exact):"]
    for r in lad["rungs"]:
        tpf, rel, fid, ch = r["tokens_per_forward"], r["relaxed_share"], r["fidelity"], r["fidelity_change"]
        lines.append(f"  {sym} {r[vary]:<5g} {tpf if tpf is not None else float('nan'):5.2f} tokens/forward, "
                     f"relaxed {rel or 0:4.0%}, fidelity "
                     + ("—" if fid is None else f"{fid:.0%}" + _interval(r.get("fidelity_interval"))
                        + ("" if ch is None else f" ({ch * 100:+.0f} points)")))
    b = lad["breaks_at"]
    lines.append(f"  pictures break from {sym} {b:g} ({lad['break_drop'] * 100:g}+ points below vanilla)" if b is not None
                 else f"  no rung fell {lad['break_drop'] * 100:g} points below vanilla")
    return lines
