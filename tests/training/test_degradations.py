"""The recogniser's training views: decoded-looking degradations (training/degradations.py) and real art
through a tokenizer (training/vq_views.py), and the per-picture held-out pairs (train recogniser
--holdout-style pairs:N)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lantern_studio.training.degradations import STEPS, Degradations, degrade
from lantern_studio.training.recogniser import make_data
from lantern_studio.training.vq_views import balanced_rows, slip_codes


def _art(b: int = 8) -> torch.Tensor:
    """White pictures with a coloured square in the middle, in [-1, 1]."""
    x = torch.ones(b, 3, 64, 64)
    x[:, 0, 20:44, 20:44] = -0.6
    x[:, 1, 20:44, 20:44] = 0.2
    x[:, 2, 20:44, 20:44] = -1.0
    return x


def test_degrade_is_seeded_in_range_and_changes_the_pictures():
    x = _art()
    a = degrade(x, torch.Generator().manual_seed(3))
    b = degrade(x, torch.Generator().manual_seed(3))
    c = degrade(x, torch.Generator().manual_seed(4))
    assert a.shape == x.shape and torch.equal(a, b) and not torch.equal(a, c)
    assert float(a.min()) >= -1 and float(a.max()) <= 1
    assert float((a - x).abs().mean()) > 0.01  # it does something
    # the subject stays where it was, more or less: the centre is still darker than the corners
    assert float(a[:, :, 28:36, 28:36].mean()) < float(a[:, :, :6, :6].mean())


@pytest.mark.parametrize("name", [n for n, _ in STEPS])
def test_every_step_alone_changes_a_picture(name):
    x = _art(16)
    only = frozenset(n for n, _ in STEPS) - {name}
    out = degrade(x, torch.Generator().manual_seed(0), skip=only)
    assert float((out - x).abs().max()) > 0.05, name


def test_geometry_fills_with_white():
    x = torch.ones(4, 3, 64, 64)
    d = Degradations(shift=6, scale=(0.8, 0.8), rotate=8.0)
    out = degrade(x, torch.Generator().manual_seed(1), d, skip=frozenset(n for n, _ in STEPS) - {"geometry"})
    assert torch.allclose(out, x, atol=1e-5)  # a white picture moved is still white


def test_unknown_degradation_is_one_clear_error():
    with pytest.raises(ValueError, match="unknown degradation 'sparkles'"):
        degrade(_art(), torch.Generator(), skip=frozenset({"sparkles"}))


def test_balanced_rows_spread_over_identities():
    identities = ["a"] * 50 + ["b"] * 5 + ["c"] * 1
    rows = balanced_rows(identities, np.arange(56), 12, seed=0)
    picked = [identities[r] for r in rows]
    assert len(rows) == 12 and len(set(rows.tolist())) == 12
    assert picked.count("c") == 1 and picked.count("b") == 5 and picked.count("a") == 6
    # the mutant a uniform sample would be: "a" swamps it
    uniform = np.random.default_rng(0).choice(56, 12, replace=False)
    assert sum(identities[r] == "a" for r in uniform) > 6


def test_slipped_codes_move_only_to_their_neighbours_at_the_stated_share():
    v, k = 32, 4
    neighbours = torch.stack([(torch.arange(k) + 1 + i) % v for i in range(v)])  # code i -> i+1 … i+4
    codes = torch.randint(0, v, (600, 16, 16), generator=torch.Generator().manual_seed(0))
    out = slip_codes(codes, neighbours, torch.Generator().manual_seed(1), max_slip=0.3)
    moved = out != codes
    step = (out - codes) % v
    assert bool(((step >= 1) & (step <= k))[moved].all())  # only to a neighbour
    share = moved.float().mean(dim=(1, 2))
    # a third of the views exact; the rest U[0, 0.3]: mean share 2/3 · 0.15 = 0.10 (tolerance 0.015 at 600 views)
    assert abs(float(share.mean()) - 0.10) < 0.015
    assert 0.25 < float((share == 0).float().mean()) < 0.42


def test_held_out_pairs_are_art_the_recogniser_knows_from_other_sets():
    styles = ["s1", "s2", "s3"]
    meta, images = [], []
    for ident in range(20):
        for st in styles[: 1 + ident % 3]:  # identities 0, 3, 6 … have one style only
            for tone in range(2):
                meta.append({"identity": f"id{ident}", "style": st, "subgroup": "g", "split": "train"})
    images = np.zeros((len(meta), 8, 8, 3), np.uint8)
    data = make_data(images, meta, label="identity", holdout_style="pairs:6:0")
    held = {(meta[i]["identity"], meta[i]["style"]) for i in data.heldout_idx}
    assert len(held) == 6
    for ident, st in held:
        rows = [m for m in meta if m["identity"] == ident]
        assert len({m["style"] for m in rows}) >= 2  # known from another set
        assert any(i for i in data.train_idx if meta[i]["identity"] == ident)  # still trained on
        assert all(meta[i]["style"] != st or meta[i]["identity"] != ident for i in data.train_idx)
    # every rendering (both tones) of a held-out pair is held out
    assert len(data.heldout_idx) == 12
    assert set(data.train_idx.tolist()).isdisjoint(data.heldout_idx.tolist())
