"""A class model grown wider and deeper computes what it computed, and every new weight can learn."""

from dataclasses import replace

import pytest
import torch

from lantern_studio.engine.model import ModelArgs, Transformer
from lantern_studio.training.errors import TrainingError
from lantern_studio.training.growth import grown_state, needs_growth, new_layer_slots


def small_args(**kw) -> ModelArgs:
    base = dict(dim=64, n_layer=2, n_head=2, multiple_of=64, vocab_size=40, block_size=16, cls_token_num=1,
                model_type="c2i", num_classes=7, num_styles=3, num_tones=2, class_dropout_prob=0.0,
                token_dropout_p=0.0, resid_dropout_p=0.0, ffn_dropout_p=0.0)
    base.update(kw)
    return ModelArgs(**base)


def trained_like(args: ModelArgs, seed: int = 0) -> Transformer:
    """A model with every weight non-zero and norms away from 1 (fresh models have a zero output head)."""
    torch.manual_seed(seed)
    m = Transformer(args)
    with torch.no_grad():
        for name, p in m.named_parameters():
            p.copy_(torch.randn_like(p) * (0.3 if "norm" not in name else 0.2) + (1.0 if "norm" in name else 0.0))
    return m.eval()


def logits(m: Transformer, idx, cond):
    with torch.no_grad():
        return m.teacher_forced_logits(idx, cond)


def batch(args: ModelArgs, n: int = 3, seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, args.vocab_size, (n, args.block_size - 1), generator=g)
    cond = torch.stack([torch.randint(0, args.num_classes, (n,), generator=g),
                        torch.randint(0, args.num_styles, (n,), generator=g),
                        torch.randint(0, args.num_tones + 1, (n,), generator=g)], 1)
    return idx, cond


def grown_model(small: Transformer, big_args: ModelArgs, seed: int = 0) -> Transformer:
    big = Transformer(big_args).eval()
    big.load_state_dict(grown_state(small, big_args, torch.Generator().manual_seed(seed)))
    return big


@pytest.mark.parametrize("dim,heads,layers", [(96, 3, 2), (64, 2, 4), (128, 4, 5), (96, 3, 3)])
def test_grown_model_computes_the_same_logits(dim, heads, layers):
    a = small_args(norm_eps=0.0)  # RMSNorm's ε is the one thing a wider norm weighs differently (module text)
    small = trained_like(a)
    b = replace(a, dim=dim, n_head=heads, n_layer=layers)
    big = grown_model(small, b)
    assert sum(p.numel() for p in big.parameters()) > sum(p.numel() for p in small.parameters())
    idx, cond = batch(a)
    want, got = logits(small, idx, cond), logits(big, idx, cond)
    assert want.abs().mean() > 0.1  # not a degenerate comparison
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


def test_without_the_norm_rescaling_the_logits_change():
    """The mutant: a grown model whose norms keep their old weights computes something else."""
    a = small_args(norm_eps=0.0)
    small = trained_like(a)
    b = replace(a, dim=128, n_head=4)
    state = grown_state(small, b, torch.Generator().manual_seed(0))
    for k in state:
        if k.endswith("norm.weight"):
            state[k] = state[k] / (64 / 128) ** 0.5
    big = Transformer(b).eval()
    big.load_state_dict(state)
    idx, cond = batch(a)
    assert (logits(big, idx, cond) - logits(small, idx, cond)).abs().max() > 1e-2


def test_with_the_default_epsilon_the_logits_stay_within_a_thousandth():
    a = small_args()
    small = trained_like(a)
    big = grown_model(small, replace(a, dim=128, n_head=4, n_layer=3))
    idx, cond = batch(a)
    want = logits(small, idx, cond)
    assert (logits(big, idx, cond) - want).abs().max() < 1e-3 * want.abs().max()


def test_grown_model_decodes_the_same_tokens_with_its_cache():
    a = small_args()
    small = trained_like(a, seed=3)
    big = grown_model(small, replace(a, dim=96, n_head=3, n_layer=3))
    cond = torch.tensor([[2, 1, 0]])
    seqs = []
    for m in (small, big):
        m.start_sequence(1)
        with torch.no_grad():
            last = m.prefill(cond)[0]
        toks = []
        for i in range(a.block_size):
            t = last.argmax(-1, keepdim=True)
            toks.append(int(t))
            if i + 1 < a.block_size:
                last = m.step(t, i)[0][:, -1]
        seqs.append(toks)
    assert seqs[0] == seqs[1]


def test_every_new_weight_gets_a_gradient():
    a = small_args()
    small = trained_like(a)
    b = replace(a, dim=96, n_head=3, n_layer=3)
    big = grown_model(small, b).train()
    idx, cond = batch(a)
    loss = big.teacher_forced_logits(idx, cond).logsumexp(-1).mean()
    loss.backward()
    new_block = new_layer_slots(2, 3).index(None)
    for name in (f"layers.{new_block}.attention.wo.weight", f"layers.{new_block}.feed_forward.w2.weight",
                 "layers.0.attention.wo.weight", "layers.0.feed_forward.w2.weight", "tok_embeddings.weight"):
        p = dict(big.named_parameters())[name]
        assert p.grad is not None and p.grad.abs().sum() > 0, name
    # the zero writers' new parts are what must learn: their gradient is not zero there
    wo = dict(big.named_parameters())["layers.0.attention.wo.weight"]
    assert wo.grad[64:].abs().sum() > 0 and wo.grad[:, 64:].abs().sum() > 0


def test_new_layers_spread_between_the_old_ones():
    assert new_layer_slots(6, 8) == [0, 1, None, 2, 3, None, 4, 5]
    assert new_layer_slots(2, 3) == [0, None, 1]
    assert new_layer_slots(3, 3) == [0, 1, 2]
    slots = new_layer_slots(6, 12)
    assert [s for s in slots if s is not None] == list(range(6)) and slots[0] == 0 and len(slots) == 12


@pytest.mark.parametrize("change,message", [
    (dict(dim=96, n_head=2), "head size must stay 32"),
    (dict(dim=32, n_head=1), "only grows"),
    (dict(n_layer=1), "only grows"),
    (dict(vocab_size=41), "vocab_size differs"),
    (dict(model_type="t2i"), "only class models"),
])
def test_growth_it_cannot_make_is_one_clear_line(change, message):
    a = small_args()
    with pytest.raises(TrainingError, match=message) as e:
        grown_state(trained_like(a), replace(a, **change), torch.Generator().manual_seed(0))
    assert "\n" not in str(e.value)


def test_needs_growth_only_when_the_shape_differs():
    a = small_args()
    assert not needs_growth(a, replace(a, num_classes=9))
    assert needs_growth(a, replace(a, n_layer=3)) and needs_growth(a, replace(a, dim=96, n_head=3))


def test_a_run_grows_its_init_from_weights_to_its_own_size(tmp_path):
    """``train ar --init-from`` a smaller model: the run's first weights compute the small model's logits; a
    size growth cannot make is refused in one line before any step."""
    import argparse

    from lantern_studio.engine.checkpoints import load_gpt
    from lantern_studio.training import ar
    from support.dataset import class_dataset, tiny_vq_file

    data = tmp_path / "data"
    class_dataset(data, names=("dog face", "red heart"), styles=("google", "twitter"))
    tiny_vq_file(tmp_path / "vq.safetensors", codebook_size=16)

    def train(run, *extra):
        p = argparse.ArgumentParser()
        ar.add_arguments(p)
        return ar.train(p.parse_args(["--vq", str(tmp_path / "vq.safetensors"), "--data", str(data), "--run",
                                      str(run), "--condition", "class", "--repertoire", "all", "--batch", "8",
                                      "--threads", "1", "--eval-every", "1000", "--eval-images", "2", "--warmup", "1",
                                      "--shifts", "none", "--lr", "1e-2", *extra]))

    train(tmp_path / "small", "--dim", "32", "--layers", "1", "--heads", "2", "--steps", "4")
    small = load_gpt(tmp_path / "small" / "gpt.safetensors").float()
    # zero steps: the grown run's exported weights are its first weights
    train(tmp_path / "big", "--dim", "64", "--layers", "2", "--heads", "4", "--steps", "0",
          "--init-from", str(tmp_path / "small" / "gpt.safetensors"))
    big = load_gpt(tmp_path / "big" / "gpt.safetensors").float()
    assert (big.config.dim, big.config.n_layer, big.config.n_head) == (64, 2, 4)
    idx = torch.randint(0, 16, (4, small.config.block_size - 1), generator=torch.Generator().manual_seed(0))
    cond = torch.tensor([[0, 0, 0], [1, 1, 0], [0, 1, 0], [1, 0, 0]])
    want = logits(small, idx, cond)
    assert want.abs().max() > 0.05
    # fp16 weights and RMSNorm's ε on a barely trained stream (mean square ~1e-3): close, not bit-equal
    tv = (logits(big, idx, cond).softmax(-1) - want.softmax(-1)).abs().sum(-1).max() / 2
    assert tv < 5e-3
    with pytest.raises(TrainingError, match="head size must stay 16") as e:
        train(tmp_path / "bad", "--dim", "64", "--layers", "1", "--heads", "2", "--steps", "1",
              "--init-from", str(tmp_path / "small" / "gpt.safetensors"))
    assert "\n" not in str(e.value)
