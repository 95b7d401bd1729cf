"""Jittered copies (training/jitter.py) and neighbour-substituted contexts (training/ar.py): what model v5
is taught so its next-token distribution is ambiguous among latent neighbours, as real image models are."""

import numpy as np
import pytest
import torch

from lantern_studio.engine.tokenizer import load_vq
from lantern_studio.training import ar, jitter
from lantern_studio.training.errors import TrainingError
from support.dataset import class_dataset, tiny_vq_file


def _pictures(n=6, seed=0) -> np.ndarray:
    """Flat shapes with hard edges on white, as emoji are."""
    rng = np.random.default_rng(seed)
    out = np.full((n, 64, 64, 3), 255, np.uint8)
    yy, xx = np.mgrid[:64, :64]
    for i in range(n):
        cy, cx, r = rng.integers(20, 44, 2).tolist() + [int(rng.integers(8, 18))]
        out[i][(yy - cy) ** 2 + (xx - cx) ** 2 < r * r] = rng.integers(0, 230, 3)
        out[i, 50:56, 10:40] = rng.integers(0, 120, 3)
    return out


def keeps_structure(original: np.ndarray, copy: np.ndarray) -> bool:
    """Every background pixel is untouched, and each picture's edges stay where they were: the copy's
    edge map matches the original's better than a 1-px-shifted original's does."""
    bg = (original >= jitter.WHITE).all(-1)
    if not np.array_equal(copy[bg], original[bg]):
        return False

    def edges(a):
        g = a.astype(np.float32).mean(-1)
        return np.abs(np.diff(g, axis=1))[:, :, :-1] + np.abs(np.diff(g, axis=2))[:, :-1, :]

    def corr(a, b):
        a, b = a.ravel() - a.mean(), b.ravel() - b.mean()
        return float(a @ b / np.sqrt((a @ a) * (b @ b)))

    e = edges(original)
    shifted = edges(np.roll(original, 1, axis=2))
    return corr(e, edges(copy)) > max(0.9, corr(e, shifted) + 0.2)


@pytest.mark.parametrize("kind", jitter.KINDS)
def test_jittered_copies_keep_every_pixel_in_place_and_change_values(kind):
    pics = _pictures()
    spec = jitter.Jitter(kind, copies=3, seed=1)
    for i in range(spec.copies):
        copy = spec.copy(pics, i)
        assert copy.shape == pics.shape and copy.dtype == np.uint8
        assert keeps_structure(pics, copy)
        fg = (pics < jitter.WHITE).any(-1)
        assert np.abs(copy[fg].astype(int) - pics[fg]).mean() > 0.5  # the drawing did change
    assert np.array_equal(spec.copy(pics, 2), spec.copy(pics, 2))  # seeded
    assert not np.array_equal(spec.copy(pics, 0), spec.copy(pics, 1))


def test_the_structure_check_rejects_a_jitter_that_shifts(monkeypatch):
    """The mutant: a 'jitter' that moves the picture by one pixel fails the same check."""
    pics = _pictures()
    real = jitter.jitter_images
    monkeypatch.setattr(jitter, "jitter_images",
                        lambda images, kind, rng: np.roll(real(images, kind, rng), 1, axis=2))
    assert not keeps_structure(pics, jitter.Jitter("global", 1).copy(pics, 0))


def test_bad_jitter_settings_are_named():
    with pytest.raises(TrainingError, match="kind must be one of global, pixel"):
        jitter.Jitter("shift", 2)
    with pytest.raises(TrainingError, match=r"copies must be in \[1, 16\], got 0"):
        jitter.Jitter("pixel", 0)


def test_token_moves_counts_changed_tokens_and_their_neighbour_rank(tmp_path):
    vq = load_vq(tiny_vq_file(tmp_path / "vq.safetensors", codebook_size=16))
    pics = _pictures(4)
    same = jitter.token_moves(vq, pics, pics, ks=(1, 15))
    assert same["changed"] == 0.0 and same["tokens"] >= 4 and "within_1" not in same
    moved = jitter.token_moves(vq, pics, 255 - pics, ks=(1, 15))
    assert moved["changed"] > 0 and moved["within_15"] == pytest.approx(1.0)  # 15 others: every code is in
    assert 0 <= moved["within_1"] <= moved["within_15"]


def test_substituted_contexts_swap_about_the_share_asked_for_neighbours_only():
    """Statistical (seed 0, 64k tokens): the share replaced is 0.1 ± 0.01, every replacement is one of the
    token's listed neighbours, and a mutant drawing any code instead is caught by the same check."""
    g = torch.Generator().manual_seed(0)
    table = torch.stack([torch.tensor([(v + 1) % 32, (v + 2) % 32, (v + 3) % 32]) for v in range(32)])
    tok = torch.randint(0, 32, (64, 1000), generator=g)

    def check(out):
        changed = out != tok
        ok = (table[tok] == out[..., None]).any(-1)
        return abs(float(changed.float().mean()) - 0.1) < 0.01 and bool(ok[changed].all())

    assert check(ar.substitute_neighbours(tok, table, 0.1, g))
    assert torch.equal(ar.substitute_neighbours(tok, table, 0.0, g), tok)
    anything = torch.where(torch.rand(tok.shape, generator=g) < 0.1, torch.randint(0, 32, tok.shape, generator=g), tok)
    assert not check(anything)


def test_a_class_run_prepares_its_jittered_copies_after_the_clean_tokens(tmp_path):
    data = tmp_path / "data"
    class_dataset(data)
    vq = tiny_vq_file(tmp_path / "vq.safetensors", codebook_size=16)
    plain = ar.prepare_classes(data, vq, tmp_path / "a", "all", shifts=ar.SHIFT_SETS["none"], log=lambda *_: None)
    jit = ar.prepare_classes(data, vq, tmp_path / "b", "all", shifts=ar.SHIFT_SETS["none"], log=lambda *_: None,
                             jitter=jitter.Jitter("global", 2, seed=3))
    assert plain.codes.shape[0] == 1 and jit.codes.shape[0] == 3
    assert torch.equal(jit.codes[0], plain.codes[0])  # the clean tokens first: the NLL reads copy 0
    again = ar.prepare_classes(data, vq, tmp_path / "b", "all", shifts=ar.SHIFT_SETS["none"], log=lambda *_: None,
                               jitter=jitter.Jitter("global", 2, seed=3))
    assert torch.equal(again.codes, jit.codes)  # cached under a key that records the jitter
    other = ar.prepare_classes(data, vq, tmp_path / "b", "all", shifts=ar.SHIFT_SETS["none"], log=lambda *_: None,
                               jitter=jitter.Jitter("pixel", 1, seed=3))
    assert other.codes.shape[0] == 2


# --------------------------------------------------------------------------- the learned style "any"


def _train(tmp_path, run, *extra):
    import argparse

    from lantern_studio.engine.checkpoints import load_gpt

    data = tmp_path / "data"
    if not data.exists():
        class_dataset(data, names=("dog face", "red heart"), styles=("google", "twitter"))
        tiny_vq_file(tmp_path / "vq.safetensors", codebook_size=16)
    p = argparse.ArgumentParser()
    ar.add_arguments(p)
    metrics = ar.train(p.parse_args(["--vq", str(tmp_path / "vq.safetensors"), "--data", str(data), "--run", str(run),
                                     "--condition", "class", "--repertoire", "all", "--batch", "8", "--dim", "32",
                                     "--layers", "1", "--heads", "2", "--threads", "1", "--eval-every", "1000",
                                     "--styles", "all", "--warmup", "1", "--shifts", "none", "--lr", "1e-2",
                                     *extra]))
    return load_gpt(run / "gpt.safetensors"), metrics


def test_style_dropout_teaches_an_any_style_row_and_named_styles_keep_theirs(tmp_path):
    """The 'any' row (appended after the data's styles) moves only when rows are dropped to it; a run without
    style dropout has no such row; a model grown from it gets the row as its styles' mean."""
    plain, m0 = _train(tmp_path, tmp_path / "plain", "--steps", "4")
    assert m0["classes"]["styles"] == ["google", "twitter"] and plain.config.num_styles == 2
    taught, m1 = _train(tmp_path, tmp_path / "any", "--steps", "6", "--style-dropout", "0.5",
                        "--init-from", str(tmp_path / "plain" / "gpt.safetensors"))
    assert m1["classes"]["styles"] == ["google", "twitter", "any"] and taught.config.num_styles == 3
    start = plain.cls_embedding.style_table.weight.float().mean(0)  # the appended row starts as the mean
    assert not torch.allclose(taught.cls_embedding.style_table.weight[2].float(), start, atol=1e-3)
    # a dropped row's loss reaches the 'any' row; with nothing dropped (the mutant) it does not
    taught = taught.float().train()
    tok = torch.randint(0, 16, (8, taught.config.block_size))
    for share, reaches in ((0.5, True), (0.0, False)):
        taught.zero_grad()
        cond = ar.drop_styles(torch.tensor([[0, 1, 0]] * 8), 2, share, torch.Generator().manual_seed(1))
        ar.nll(taught, tok, cond, None).backward()
        assert bool(taught.cls_embedding.style_table.weight.grad[2].abs().sum() > 0) is reaches
    g = torch.Generator().manual_seed(0)
    cond = torch.tensor([[0, 1, 0]] * 400)
    dropped = ar.drop_styles(cond, 2, 0.25, g)
    share = float((dropped[:, 1] == 2).float().mean())
    assert abs(share - 0.25) < 0.06 and torch.equal(dropped[dropped[:, 1] != 2], cond[dropped[:, 1] != 2])


def test_snapping_uses_the_learned_any_style_only_where_the_model_has_it():
    from lantern_studio.engine.snap import ANY_STYLE, IdentityConditioner

    def snap(styles):
        s = IdentityConditioner.__new__(IdentityConditioner)
        s.styles, s.offered_styles, s.default_style = styles, [x for x in styles if x != ANY_STYLE], "google"
        s.identities = [{"styles": ["google", "twitter"]}]
        return s

    with_any, without = snap(["google", "twitter", "any"]), snap(["google", "twitter"])
    assert with_any.style_for(0, ANY_STYLE, seed=5) == "any"
    assert {without.style_for(0, ANY_STYLE, seed=s) for s in range(20)} == {"google", "twitter"}
    assert with_any.style_for(0, "twitter", seed=5) == "twitter"  # a named style still pins
    assert with_any.style_for(0, "", seed=5) == "google"


def test_mixture_targets_are_the_mixture_of_every_copy_at_each_place():
    """The loss with copies equals the cross-entropy against the copies' empirical mixture, and with identical
    copies it is the plain next-token loss (a mutant that reads only the first copy would miss the mixture)."""
    from support.tiny import tiny_gpt

    gpt = tiny_gpt("c2i", seed=3, vocab=16, grid=2)
    torch.manual_seed(0)
    tok = torch.randint(0, 16, (3, 4))
    cond = torch.tensor([1, 2, 3])
    same = tok[:, None].expand(3, 4, 4)
    assert torch.allclose(ar.nll(gpt, tok, cond, None, copies=same), ar.nll(gpt, tok, cond, None), atol=1e-5)
    copies = torch.stack([tok, torch.randint(0, 16, (3, 4)), torch.randint(0, 16, (3, 4))], dim=1)
    logp = torch.log_softmax(gpt(tok[:, :-1], cond, None).float(), -1)  # (3, 4, 16)
    mixture = torch.nn.functional.one_hot(copies, 16).float().mean(1)  # (3, 4, 16)
    want = -(mixture * logp).sum(-1).mean()
    got = ar.nll(gpt, tok, cond, None, copies=copies)
    assert torch.allclose(got, want, atol=1e-5)
    assert not torch.allclose(ar.nll(gpt, tok, cond, None, copies=copies[:, :1].expand(3, 3, 4)), want, atol=1e-3)


def test_a_run_records_what_it_taught_of_ambiguity(tmp_path):
    _model, m = _train(tmp_path, tmp_path / "jit", "--steps", "2", "--jitter", "global", "--jitter-copies", "2",
                       "--mixture-targets", "--substitute", "0.1", "--substitute-k", "4")
    amb = m["ambiguity"]
    assert amb["mixture_targets"] is True and amb["substitute"] == 0.1 and amb["substitute_k"] == 4
    assert amb["style_dropout"] == 0.0
    assert amb["jitter"]["kind"] == "global" and amb["jitter"]["copies"] == 2
    assert len(amb["jitter"]["tokens_moved"]) == 2 and all(0 <= x <= 1 for x in amb["jitter"]["tokens_moved"])
