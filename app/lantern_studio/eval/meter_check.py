"""The quality meter held against ground truth made by looking (eval/labelled_set.py).

``python -m lantern_studio.eval.meter_check report --set DIR [--model FOLDER …]``
    per model folder, on that model's labelled pictures: the meter's AUC separating pictures a person
    marked right from wrong, the share of right pictures whose asked emoji it ranks first, the mean
    fidelity on right and on wrong pictures.
``python -m lantern_studio.eval.meter_check calibrate --set DIR --model FOLDER …``
    fits each folder's meter temperature on the even-numbered pictures of the set (least log-loss of the
    asked emoji's probability against the labels), reports the odd-numbered ones with it (AUC, log-loss,
    calibration error), and writes ``meter`` into the folder's model.json (the weights and their hashes
    are untouched). The set is never used to train the recogniser.

The asked emoji of a picture is the one its model was asked to draw (``asked`` in pictures.json, what
the prompt snapped to when it was drawn); a person judged the picture against the prompt as typed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

import numpy as np

from ..engine.files import atomic_write
from ..models import load_pipeline
from ..models.quality import Meter, fit_temperature
from .labelled_set import LabelledSet, auc, load, rank_one_share

#: calibration error bins
BINS = 10


def rows_of(labelled: LabelledSet, model: str) -> list[int]:
    return [i for i, r in enumerate(labelled.rows) if r["model"] == model]


def measure(meter: Meter, images: Sequence[np.ndarray], asked: Sequence[str], right: np.ndarray) -> dict:
    """AUC, rank-1 share on right pictures, mean fidelity on right and wrong pictures, counts."""
    judged = meter.judge(np.stack(images), list(asked))
    prob = np.array([j.probability for j in judged])
    ranks = np.array([j.rank for j in judged])
    return {"pictures": int(len(right)), "right": int(right.sum()), "wrong": int((~right).sum()),
            "auc": auc(prob, right), "rank1_on_right": rank_one_share(ranks, right),
            "fidelity_right": float(prob[right].mean()), "fidelity_wrong": float(prob[~right].mean()),
            "temperature": meter.temperature}


def calibration_error(prob: np.ndarray, right: np.ndarray, bins: int = BINS) -> float:
    """Expected calibration error: |mean probability − share right| per equal-width bin, weighted by size."""
    edges = np.linspace(0, 1, bins + 1)
    which = np.clip(np.digitize(prob, edges[1:-1]), 0, bins - 1)
    err = 0.0
    for b in range(bins):
        m = which == b
        if m.any():
            err += m.mean() * abs(prob[m].mean() - right[m].mean())
    return float(err)


def _model_view(labelled: LabelledSet, folder: str):
    pipe = load_pipeline(folder)
    idx = rows_of(labelled, pipe.name)
    if not idx:
        raise SystemExit(f"{folder}: the labelled set has no pictures of model {pipe.name!r}")
    images = [labelled.images[i] for i in idx]
    asked = [labelled.rows[i]["asked"] for i in idx]
    return pipe, idx, images, asked, labelled.right[idx]


def report(labelled: LabelledSet, folders: Sequence[str]) -> dict:
    out = {"set": labelled.set_hash(), "models": {}}
    for folder in folders:
        pipe, _idx, images, asked, right = _model_view(labelled, folder)
        out["models"][pipe.name] = measure(pipe.scorer.meter(), images, asked, right)
    return out


def calibrate(labelled: LabelledSet, folders: Sequence[str], write: bool = True) -> dict:
    out = {"set": labelled.set_hash(), "models": {}}
    for folder in folders:
        pipe, idx, images, asked, right = _model_view(labelled, folder)
        base = Meter(pipe.scorer.recogniser(), pipe.scorer.meter().names, 1.0)
        logits = base.logits(np.stack(images))
        cols = np.array([base.index[a] for a in asked])
        fit = np.array([i % 2 == 0 for i in idx])
        t = fit_temperature(logits[fit], cols[fit], right[fit])
        meter = Meter(base.recogniser, base.names, t)
        prob = meter.probabilities(np.stack(images))[np.arange(len(cols)), cols]
        held = ~fit
        y = right[held].astype(np.float64)
        p = np.clip(prob[held], 1e-6, 1 - 1e-6)
        out["models"][pipe.name] = {
            "temperature": t, "fitted_on": int(fit.sum()), "checked_on": int(held.sum()),
            "heldout_auc": auc(prob[held], right[held]),
            "heldout_log_loss": float(-(y * np.log(p) + (1 - y) * np.log(1 - p)).mean()),
            "heldout_calibration_error": calibration_error(prob[held], right[held]),
            "heldout_mean_probability": float(prob[held].mean()), "heldout_share_right": float(y.mean()),
        }
        if write:
            folder_path = Path(pipe.source.folder)
            man = json.loads((folder_path / "model.json").read_text())
            man["meter"] = {"temperature": t, "labelled_set": labelled.set_hash(),
                            "fitted_on": "the set's even-numbered pictures of this model"}
            atomic_write(folder_path / "model.json",
                         lambda f: Path(f).write_text(json.dumps(man, indent=2, sort_keys=True)))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lantern_studio.eval.meter_check", description=__doc__.split("\n")[0])
    p.add_argument("cmd", choices=["report", "calibrate"])
    p.add_argument("--set", type=Path, required=True, help="the labelled set's folder")
    p.add_argument("--model", action="append", default=None, help="model folder or name (repeat); both bundled")
    p.add_argument("--dry-run", action="store_true", help="calibrate: report, write nothing")
    a = p.parse_args(argv)
    labelled = load(a.set)
    folders = a.model or ["emoji-64", "emoji-64-v5"]
    res = report(labelled, folders) if a.cmd == "report" else calibrate(labelled, folders, write=not a.dry_run)
    print(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
