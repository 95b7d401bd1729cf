"""The factorised class prefix (identity + style + tone, a learned null): what it computes, that
LlamaGen's own class models are untouched by it, and that it grows without moving old classes."""

from __future__ import annotations

import pytest
import torch

from lantern_studio.engine.checkpoints import load_llamagen_gpt, save_llamagen_gpt
from lantern_studio.engine.class_embedding import NULL_IDENTITY, FactorisedClassEmbedder
from lantern_studio.engine.decode import cfg_batch, generate_tokens
from lantern_studio.engine.model import ModelArgs, Transformer
from lantern_studio.engine.prefix_embedders import LabelEmbedder
from lantern_studio.engine.settings import GenerationSettings


def _args(**kw) -> ModelArgs:
    base = dict(dim=32, n_layer=2, n_head=2, multiple_of=16, vocab_size=24, block_size=16, cls_token_num=1,
                model_type="c2i", num_classes=5, num_styles=3, num_tones=5, class_dropout_prob=0.1,
                token_dropout_p=0.0, resid_dropout_p=0.0, ffn_dropout_p=0.0)
    return ModelArgs(**{**base, **kw})


def _randomised(args: ModelArgs, seed: int = 0) -> Transformer:
    torch.manual_seed(seed)
    m = Transformer(args)
    with torch.no_grad():
        for p in m.parameters():
            p.normal_(0, 0.3)
    return m.eval()


def test_the_prefix_is_the_sum_of_its_factors_and_the_null_is_its_own_vector():
    e = FactorisedClassEmbedder(4, 2, 5, 8, dropout_prob=0.0)
    with torch.no_grad():
        for p in e.parameters():
            p.normal_()
    cond = torch.tensor([[2, 1, 0], [3, 0, 4], [NULL_IDENTITY, 1, 3]])
    out = e(cond)[:, 0]
    assert torch.allclose(out[0], e.identity_table.weight[2] + e.style_table.weight[1] + e.tone_table.weight[0])
    assert torch.allclose(out[1], e.identity_table.weight[3] + e.style_table.weight[0] + e.tone_table.weight[4])
    # the unconditional row ignores the style and tone it carries: CFG's second half is one learned vector
    assert torch.equal(out[2], e.null_embedding[0])
    assert torch.equal(e.null_condition(cond)[:, 0], torch.full((3,), NULL_IDENTITY))
    assert torch.equal(e.null_condition(cond)[:, 1:], cond[:, 1:])


def test_class_dropout_trains_the_null_vector_only_in_training():
    e = FactorisedClassEmbedder(4, 2, 0, 8, dropout_prob=0.5)
    with torch.no_grad():
        e.null_embedding.fill_(7.0)
    cond = torch.tensor([[1, 0, 0]] * 400)
    torch.manual_seed(0)
    dropped = (e(cond, train=True)[:, 0, 0] == 7.0).float().mean().item()
    assert 0.42 < dropped < 0.58  # 400 draws at p = 0.5: ±4 standard deviations
    assert not bool((e(cond, train=False)[:, 0, 0] == 7.0).any())


def test_cfg_uses_the_null_row_for_the_unconditional_half():
    gpt = _randomised(_args())
    cond = torch.tensor([[2, 1, 3]])
    both, _ = cfg_batch(gpt, cond, None, uses_cfg=True)
    assert both.tolist() == [[2, 1, 3], [NULL_IDENTITY, 1, 3]]
    prefix = gpt.embed_condition(both)
    assert torch.equal(prefix[1, 0], gpt.cls_embedding.null_embedding[0])
    assert not torch.equal(prefix[0, 0], prefix[1, 0])
    # guidance changes the picture: the null half is really read (CFG 3 vs no guidance, same seed)
    s = GenerationSettings(seed=1, temperature=1.0)
    plain = generate_tokens(gpt, cond, s.with_(cfg_scale=1.0))[0]
    guided = generate_tokens(gpt, cond, s.with_(cfg_scale=3.0))[0]
    assert not torch.equal(plain, guided)


def test_conditions_out_of_range_are_refused_by_factor():
    e = FactorisedClassEmbedder(4, 2, 5, 8, dropout_prob=0.0)
    e.check(torch.tensor([[3, 1, 5], [NULL_IDENTITY, 0, 0]]))
    for bad, word in (([[4, 0, 0]], "identity"), ([[0, 2, 0]], "style"), ([[0, 0, 6]], "tone"), ([[-2, 0, 0]], "identity")):
        with pytest.raises(ValueError, match=word):
            e.check(torch.tensor(bad))
    with pytest.raises(ValueError, match=r"\(B, 3\)"):
        e.check(torch.tensor([1, 2]))


def test_an_official_llamagen_class_checkpoint_still_loads_and_matches_its_logits(tmp_path):
    args = _args(num_styles=0, num_tones=0, num_classes=10)
    official = _randomised(args, seed=3)
    assert isinstance(official.cls_embedding, LabelEmbedder) and not official.factorised
    path = tmp_path / "c2i.pt"
    save_llamagen_gpt(official, path)
    loaded = load_llamagen_gpt(path, **{k: v for k, v in args.to_dict().items() if k not in ("num_styles", "num_tones")})
    idx, cond = torch.randint(0, 24, (2, 15)), torch.tensor([3, 7])
    with torch.no_grad():
        assert torch.equal(official(idx, cond), loaded(idx, cond))
    assert set(torch.load(path, weights_only=True)["model"]) == set(official.state_dict())  # official key names only


def test_growing_identities_keeps_every_old_class_token_for_token():
    gpt = _randomised(_args())
    s = GenerationSettings(seed=4, temperature=1.0, cfg_scale=2.0)
    before = {i: generate_tokens(gpt, torch.tensor([[i, i % 3, 0]]), s)[0] for i in range(5)}
    gpt.grow_identities(3, generator=torch.Generator().manual_seed(0))
    assert gpt.config.num_classes == 8 and gpt.cls_embedding.num_identities == 8
    for i in range(5):
        assert torch.equal(generate_tokens(gpt, torch.tensor([[i, i % 3, 0]]), s)[0], before[i]), i
    # the new rows are real classes: they draw something of their own
    new = generate_tokens(gpt, torch.tensor([[6, 0, 0]]), s)[0]
    assert not any(torch.equal(new, b) for b in before.values())


def test_a_plain_class_model_cannot_grow_identity_rows():
    with pytest.raises(ValueError, match="factorised"):
        _randomised(_args(num_styles=0, num_tones=0)).grow_identities(2)
