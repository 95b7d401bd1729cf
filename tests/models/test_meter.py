"""The quality meter (models/quality.Meter): ranks among the classes a model draws, a calibrated
temperature (fit_temperature), and the labelled-set measures it is held to (eval/labelled_set)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lantern_studio.eval.labelled_set import auc, contact_sheets, picture_hash, rank_one_share, sheet, unsheet
from lantern_studio.models.quality import Meter, fit_temperature


class FixedRecogniser:
    """Probabilities set per picture by its first pixel's red value (row of ``table``)."""

    def __init__(self, classes, table):
        self.classes, self.table = list(classes), np.asarray(table, dtype=np.float64)

    def classes_at(self, level=None):
        return list(self.classes)

    def class_index(self, name, level=None):
        return self.classes.index(name)

    def predict(self, images, level=None):
        return self.table[np.asarray(images)[:, 0, 0, 0].astype(int)]


def _pictures(rows):
    out = np.zeros((len(rows), 4, 4, 3), np.uint8)
    out[:, 0, 0, 0] = rows
    return out


def test_the_meter_ranks_among_the_classes_the_model_draws():
    rec = FixedRecogniser(["cat", "dog", "bus", "frog"], [[0.2, 0.1, 0.6, 0.1]])
    everything = Meter(rec)
    drawn = Meter(rec, ["cat", "dog", "frog"])  # the model never draws a bus
    assert everything.judge(_pictures([0]), ["cat"])[0].rank == 2
    j = drawn.judge(_pictures([0]), ["cat"])[0]
    assert (j.rank, j.classes, j.seen) == (1, 3, "cat")
    assert j.probability == pytest.approx(0.2 / 0.4)  # renormalised over what it draws
    # a list of acceptable classes is judged by its likeliest member
    j = drawn.judge(_pictures([0]), [["dog", "frog"]])[0]
    assert j.asked == "dog" and j.rank == 2 and j.seen == "cat"
    with pytest.raises(ValueError, match="'bus' is not one of the meter's 3 classes"):
        drawn.judge(_pictures([0]), ["bus"])
    with pytest.raises(ValueError, match="temperature"):
        Meter(rec, temperature=0)


def test_temperature_sharpens_or_flattens_without_changing_ranks():
    rec = FixedRecogniser(["a", "b", "c"], [[0.5, 0.3, 0.2]])
    cold, hot = Meter(rec, temperature=0.5), Meter(rec, temperature=3.0)
    jc, jh = cold.judge(_pictures([0]), ["a"])[0], hot.judge(_pictures([0]), ["a"])[0]
    assert jc.rank == jh.rank == 1 and jc.probability > 0.5 > jh.probability > 1 / 3


def test_fit_temperature_recovers_the_temperature_labels_were_drawn_with():
    """Labels drawn as Bernoulli(p_asked at T=2.5) from random logits: the fit lands within 20 % of 2.5
    (seed 0, 4,000 pictures); the mutant — labels unrelated to the logits — does not."""
    rng = np.random.default_rng(0)
    n, c, true_t = 4000, 12, 2.5
    logits = rng.normal(0, 3.0, (n, c))
    asked = rng.integers(0, c, n)
    z = logits / true_t
    p = np.exp(z[np.arange(n), asked] - np.log(np.exp(z).sum(axis=1)))
    right = rng.random(n) < p
    t = fit_temperature(logits, asked, right)
    assert abs(t - true_t) / true_t < 0.2
    shuffled = fit_temperature(logits, asked, rng.permutation(right))
    assert abs(shuffled - true_t) / true_t > 0.2


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.booleans()), min_size=2, max_size=40))
def test_auc_is_the_chance_a_right_picture_outscores_a_wrong_one(pairs):
    scores = [s for s, _ in pairs]
    right = [r for _, r in pairs]
    if all(right) or not any(right):
        with pytest.raises(ValueError):
            auc(scores, right)
        return
    pos = [s for s, r in pairs if r]
    neg = [s for s, r in pairs if not r]
    brute = sum((a > b) + 0.5 * (a == b) for a in pos for b in neg) / (len(pos) * len(neg))
    assert auc(scores, right) == pytest.approx(brute)


def test_rank_one_share_counts_right_pictures_only():
    assert rank_one_share([1, 2, 1, 5], [True, True, False, False]) == 0.5


def test_a_sheet_round_trips_every_picture_and_its_hash():
    rng = np.random.default_rng(1)
    pics = [rng.integers(0, 256, (64, 64, 3), dtype=np.uint8) for _ in range(21)]
    back = unsheet(sheet(pics), len(pics))
    assert [picture_hash(p) for p in back] == [picture_hash(p) for p in pics]
    assert picture_hash(pics[0]) != picture_hash(pics[1])
    pages = contact_sheets(pics, [f"{i} a prompt" for i in range(21)], per_sheet=16)
    assert len(pages) == 2 and pages[0].size[0] == 8 * (128 + 8)
