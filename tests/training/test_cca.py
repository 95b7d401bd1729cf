"""Condition contrastive alignment (training/cca.py): the pairs, the loss's direction, and that a few
steps teach a tiny class model to tell its own class from another's without guidance."""

from __future__ import annotations

import argparse
import json
import math

import pytest
import torch

from lantern_studio.engine.checkpoints import load_gpt
from lantern_studio.engine.model import Transformer
from lantern_studio.training import ar
from lantern_studio.training.cca import (Contrast, ContrastPairs, cca_loss, cca_step_loss, contrast_pairs,
                                         sequence_logp)
from lantern_studio.training.errors import TrainingError
from support.dataset import class_dataset, tiny_vq_file


def _tiny(seed: int = 0, identities: int = 4) -> Transformer:
    torch.manual_seed(seed)
    return Transformer(ar.class_model_args(vocab=16, grid=4, identities=identities, styles=2, tones=1, dim=32,
                                           layers=1, heads=2, dropout=0.0)).eval()


def _cond(ids, style=1):
    return torch.tensor([[i, style, 0] for i in ids])


def test_negatives_change_only_the_identity_and_null_rows_count_as_positives():
    model = _tiny()
    cond = _cond([0, 1, 2, 2])
    pairs = contrast_pairs(model, cond, torch.Generator().manual_seed(0), uncond_ratio=0.0)
    assert torch.equal(pairs.positive, cond)
    assert pairs.negative[:, 0].tolist() == [1, 2, 2, 0]  # rolled by one row
    assert torch.equal(pairs.negative[:, 1:], cond[:, 1:])  # style and tone stay, as the null class keeps them
    assert pairs.same.tolist() == [False, False, True, False]  # the roll landed on the same identity
    everything_null = contrast_pairs(model, cond, torch.Generator().manual_seed(0), uncond_ratio=1.0)
    null = model.null_condition(cond)
    assert torch.equal(everything_null.positive, null) and torch.equal(everything_null.negative, null)
    assert everything_null.same.all()


def test_the_loss_rewards_a_higher_own_class_and_a_lower_other_class_likelihood():
    gap = torch.zeros(4, requires_grad=True)
    neg = torch.zeros(4, requires_grad=True)
    same = torch.tensor([False, False, False, True])
    cca_loss(gap, neg, same, beta=0.02, lam=300.0).backward()
    assert (gap.grad < 0).all()  # descending raises the image's likelihood under its own class
    assert (neg.grad[:3] > 0).all()  # … and lowers it under another's
    assert neg.grad[3] < 0  # a row with no real negative is pushed up like a positive
    assert abs(neg.grad[0]) > 100 * abs(neg.grad[3])  # with weight λ against 1
    # at the start (model = reference) every gap is 0: the loss is log 2 · (1 + mean weight) / λ
    at_start = cca_loss(torch.zeros(4), torch.zeros(4), same, beta=0.02, lam=300.0)
    assert float(at_start) == pytest.approx(math.log(2) * (1 + (3 * 300 + 1) / 4) / 300, rel=1e-6)


def test_sequence_logp_is_the_teacher_forced_likelihood_and_starts_with_no_gap():
    model = _tiny()
    tok = torch.randint(0, 16, (3, 16), generator=torch.Generator().manual_seed(1))
    cond = _cond([0, 1, 3])
    logits = model.teacher_forced_logits(tok[:, :-1], cond)
    want = -torch.nn.functional.cross_entropy(logits.transpose(1, 2), tok, reduction="none").sum(1)
    assert torch.allclose(sequence_logp(model, tok, cond), want, atol=1e-4)
    # the policy starts as its reference: no gap, so no real contrast yet
    pairs = ContrastPairs(cond, _cond([1, 3, 0]), torch.zeros(3, dtype=torch.bool))
    _, stats = cca_step_loss(model, _tiny(), tok, pairs)
    assert stats["cca_margin"] == pytest.approx(0.0, abs=1e-4)


def _two_class_data(n: int = 64):
    """Class 0 draws token 3 everywhere, class 1 token 7, except that both share a common first
    token: a model must read its class to tell them apart."""
    ids = torch.arange(n) % 2
    tok = torch.where(ids[:, None] == 0, 3, 7).repeat(1, 16)
    tok[:, 0] = 5
    return tok, _cond(ids.tolist())


def test_a_few_steps_raise_the_own_class_margin_and_a_frozen_model_does_not():
    torch.manual_seed(0)
    model, reference = _tiny(0, identities=2), _tiny(0, identities=2)
    tok, cond = _two_class_data()
    contrast = Contrast(reference, torch.Generator().manual_seed(0), lam=10.0, uncond_ratio=0.0)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(30):
        loss, stats = contrast(model, tok, cond)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        own, away = _gaps(model, reference, tok, cond)
    assert float((own - away).mean()) > 1.0 and stats["cca_acc"] == 1.0
    # the reference stays frozen (the mutant that trains it too would move both and show no gap)
    assert all(not p.requires_grad for p in reference.parameters())


def _gaps(model, reference, tok, cond):
    """The gaps to the reference under each image's own class and under the other class."""
    own = sequence_logp(model, tok, cond) - sequence_logp(reference, tok, cond)
    other = cond.clone()
    other[:, 0] = 1 - other[:, 0]
    away = sequence_logp(model, tok, other) - sequence_logp(reference, tok, other)
    return own, away


def test_train_ar_objective_cca_runs_from_init_weights_and_names_what_is_missing(tmp_path):
    data = tmp_path / "data"
    class_dataset(data)
    tiny_vq_file(tmp_path / "vq.safetensors")

    def parse(name, *extra):
        p = argparse.ArgumentParser()
        ar.add_arguments(p)
        return p.parse_args(["--vq", str(tmp_path / "vq.safetensors"), "--data", str(data), "--run", str(tmp_path / name),
                             "--condition", "class", "--batch", "4", "--dim", "32", "--layers", "1", "--heads", "2",
                             "--threads", "1", "--eval-every", "1000", "--eval-images", "2", "--warmup", "1",
                             "--shifts", "none", "--dropout", "0", *extra])

    ar.train(parse("base", "--steps", "2"))
    base = tmp_path / "base" / "gpt.safetensors"
    with pytest.raises(TrainingError, match="--init-from"):
        ar.train(parse("no-init", "--steps", "1", "--objective", "cca"))
    ar.train(parse("cca", "--steps", "3", "--objective", "cca", "--init-from", str(base), "--log-every", "1"))
    log = (tmp_path / "cca" / "log.txt").read_text()
    assert "cca_acc" in log and "cca_margin" in log
    before, after = load_gpt(base).state_dict(), load_gpt(tmp_path / "cca" / "gpt.safetensors").state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before)  # the weights moved
    assert json.loads((tmp_path / "cca" / "metrics.json").read_text())["classes"]["identities"] == 4
    # a resume with the other objective is refused, not mixed
    with pytest.raises(TrainingError, match="--objective cca"):
        ar.train(parse("cca", "--steps", "4"))
