"""The quality meter against ground truth made by looking (issue 60).

tests/data/labelled/ holds the bundled models' own pictures (both models; vanilla, LANTERN at δ 0.2, 0.5
and 1, vanilla at temperature 1; one seed each), each marked right or wrong by a person looking at the
contact sheets beside them (contact-*.png) against the prompt as typed. The set is never used to train the
recogniser; each model's meter temperature was fitted on its even-numbered pictures (eval/meter_check.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from lantern_studio.eval.labelled_set import auc, load, rank_one_share
from lantern_studio.models.quality import Meter
from lantern_studio.models.recogniser import Recogniser

ROOT = Path(__file__).resolve().parents[2]
SET = ROOT / "tests" / "data" / "labelled"
MODELS = ROOT / "resources" / "models"
#: the set's pictures and labels, pinned: a changed picture or label is a changed ground truth
SET_HASH = "6a982a839814da25e419bcb0396d596692cde322805cf2171fd7ee4b7c041bf0"
#: issue 60's bars (AUC separating right from wrong pictures; the share of right pictures whose asked emoji the
#: meter ranks first): the default model's pictures meet them (measured 0.968 and 85 %)
AUC_BAR, RANK1_BAR = 0.95, 0.80
#: both models pooled: measured 0.892 and 76 %. The preview's broken pictures (colours and parts of the asked
#: emoji, its shape gone) still read as the emoji to the meter too often (its own AUC 0.80): below the issue's
#: bar, stated here and in docs/results.md rather than hidden; these bars keep it from getting worse
POOLED_AUC_BAR, POOLED_RANK1_BAR = 0.87, 0.72


@pytest.fixture(scope="module")
def labelled():
    return load(SET)


def _meter(model: str, recogniser: Recogniser | None = None) -> Meter:
    man = json.loads((MODELS / model / "model.json").read_text())
    rec = recogniser or Recogniser.load(MODELS / model / man["recogniser"])
    ids = json.loads((MODELS / model / "identities.json").read_text())["classes"]
    return Meter(rec, [r["identity"] for r in ids], (man.get("meter") or {}).get("temperature", 1.0))


def _judged(labelled, meters: dict):
    probs, ranks, right = [], [], []
    for model, meter in meters.items():
        idx = [i for i, r in enumerate(labelled.rows) if r["model"] == model]
        judged = meter.judge(np.stack([labelled.images[i] for i in idx]), [labelled.rows[i]["asked"] for i in idx])
        probs += [j.probability for j in judged]
        ranks += [j.rank for j in judged]
        right += [bool(labelled.right[i]) for i in idx]
    return np.array(probs), np.array(ranks), np.array(right)


def test_the_set_is_the_one_that_was_looked_at(labelled):
    assert len(labelled.rows) >= 200
    assert {r["model"] for r in labelled.rows} == {"emoji-64", "emoji-64-v5"}
    assert 0.2 < labelled.right.mean() < 0.8  # both kinds, in numbers
    assert labelled.set_hash() == SET_HASH
    assert len(list(SET.glob("contact-*.png"))) >= 5


def test_the_shipped_meter_agrees_with_what_a_person_sees(labelled):
    probs, ranks, right = _judged(labelled, {"emoji-64": _meter("emoji-64")})
    assert auc(probs, right) >= AUC_BAR
    assert rank_one_share(ranks, right) >= RANK1_BAR
    assert probs[right].mean() > probs[~right].mean() + 0.3
    probs, ranks, right = _judged(labelled, {m: _meter(m) for m in ("emoji-64", "emoji-64-v5")})
    assert auc(probs, right) >= POOLED_AUC_BAR
    assert rank_one_share(ranks, right) >= POOLED_RANK1_BAR


def test_a_meter_with_shuffled_weights_fails_the_same_bar(labelled):
    """The mutant: the shipped recogniser with every weight tensor's entries permuted (seed 0)."""
    man = json.loads((MODELS / "emoji-64" / "model.json").read_text())
    rec = Recogniser.load(MODELS / "emoji-64" / man["recogniser"])
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in rec.net.parameters():
            flat = p.view(-1)
            flat.copy_(flat[torch.randperm(flat.numel(), generator=gen)])
    probs, ranks, right = _judged(labelled, {"emoji-64": _meter("emoji-64", rec)})
    assert auc(probs, right) < AUC_BAR and rank_one_share(ranks, right) < RANK1_BAR
    probs, ranks, right = _judged(labelled, {m: _meter(m, rec) for m in ("emoji-64", "emoji-64-v5")})
    assert auc(probs, right) < POOLED_AUC_BAR and rank_one_share(ranks, right) < POOLED_RANK1_BAR
