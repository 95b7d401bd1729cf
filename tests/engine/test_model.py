import copy

import pytest
import torch

from lantern_studio.engine import CheckpointError, load_gpt, load_llamagen_gpt, save_gpt, save_llamagen_gpt
from lantern_studio.engine.model import GPT_PRESETS, Transformer, preset_args, rope_table
from support.tiny import caption, incremental_logits, tiny_gpt


@pytest.mark.parametrize("kind", ["c2i", "t2i"])
def test_teacher_forced_equals_incremental(kind):
    gpt = tiny_gpt(kind, vocab=32, grid=3, dim=32, layers=2)
    t = gpt.block_size
    idx = torch.randint(0, 32, (2, t), generator=torch.Generator().manual_seed(1))
    if kind == "c2i":
        cond, mask = torch.tensor([3, 7]), None
    else:
        cond, mask = caption(batch=2, length=5, valid=3)
        mask[1, 1:] = True  # a second row with a different padding
    tf = gpt.teacher_forced_logits(idx[:, :-1], cond, mask)
    assert tf.shape == (2, t, 32)
    inc = incremental_logits(gpt, idx[:, :-1], cond, mask)
    assert inc.shape == tf.shape
    assert torch.allclose(tf, inc, atol=1e-4), (tf - inc).abs().max()


def test_kv_caches_are_allocated_once_and_reused_across_sequences():
    """gpt-fast's contract: allocate_caches is idempotent, a new sequence reuses (and zeroes) the
    same storage, and a reused cache gives exactly the logits of a fresh one."""
    gpt = tiny_gpt("t2i", vocab=32, grid=3, dim=32, layers=2)
    idx = torch.randint(0, 32, (2, gpt.block_size), generator=torch.Generator().manual_seed(2))
    cond, mask = caption(batch=2, length=5, valid=3)
    gpt.allocate_caches(2)
    cache = gpt.layers[0].attention.kv_cache
    storage = cache.k_cache.data_ptr(), cache.v_cache.data_ptr(), gpt.attn_mask.data_ptr()
    gpt.allocate_caches(2)  # same shape: nothing allocated
    gpt.allocate_caches(1)  # fewer rows fit too
    assert gpt.layers[0].attention.kv_cache is cache
    fresh = copy.deepcopy(gpt)
    fresh.clear_cache()
    with torch.no_grad():
        cache.k_cache.fill_(float("nan"))  # the last sequence's numbers, at their worst
        cache.v_cache.fill_(float("nan"))
    a = incremental_logits(gpt, idx[:, :-1], cond, mask, keep=True)
    assert (cache.k_cache.data_ptr(), cache.v_cache.data_ptr(), gpt.attn_mask.data_ptr()) == storage
    b = incremental_logits(gpt, idx[:1, :-1], cond[:1], torch.ones_like(mask[:1]), keep=True)  # 1 row, no padding
    c = incremental_logits(gpt, idx[:, :-1], cond, mask, keep=True)  # after a sequence with another mask
    assert gpt.layers[0].attention.kv_cache is cache
    assert torch.equal(a, c) and torch.equal(a, incremental_logits(fresh, idx[:, :-1], cond, mask))
    assert torch.equal(b, incremental_logits(fresh, idx[:1, :-1], cond[:1], torch.ones_like(mask[:1])))
    gpt.to(torch.bfloat16)
    gpt.allocate_caches(2)  # the caches followed the cast: still nothing allocated
    assert gpt.layers[0].attention.kv_cache is cache and cache.k_cache.dtype is torch.bfloat16


def test_kv_cache_update_writes_at_tensor_positions():
    from lantern_studio.engine.model import KVCache

    cache = KVCache(2, 6, 1, 2, torch.float32)
    k = torch.arange(8.0).view(2, 1, 2, 2)
    ko, vo = cache.update(torch.tensor([4, 1]), k, -k)
    assert ko.shape == (2, 1, 6, 2) and torch.equal(ko[:, :, 4], k[:, :, 0]) and torch.equal(ko[:, :, 1], k[:, :, 1])
    assert torch.equal(vo, -ko) and ko[:, :, [0, 2, 3, 5]].abs().sum() == 0
    k1, _ = cache.update(torch.tensor([0]), torch.ones(1, 1, 1, 2), torch.ones(1, 1, 1, 2))  # one row of two
    assert k1.shape == (1, 1, 6, 2) and cache.k_cache[0, 0, 0].tolist() == [1, 1] and cache.k_cache[1, 0, 0].sum() == 0


def test_caption_mask_matters():
    gpt = tiny_gpt("t2i", vocab=32, grid=2)
    cond, mask = caption(valid=2)
    idx = torch.randint(0, 32, (1, 3))
    full = torch.ones_like(mask)
    a = gpt.teacher_forced_logits(idx, cond, mask)
    b = gpt.teacher_forced_logits(idx, cond, full)
    assert not torch.allclose(a, b, atol=1e-4)


def test_prefix_rope_is_zero_and_grid_positions_rotate():
    table = rope_table(4, 16, 10000.0, 3)
    assert table.shape == (3 + 16, 8, 2)
    assert torch.all(table[:3] == 0)
    # row frequencies in the first half, column frequencies in the second
    assert torch.allclose(table[3 + 1 * 4 + 0, :4], table[3 + 1 * 4 + 3, :4])
    assert not torch.allclose(table[3 + 1 * 4 + 0, 4:], table[3 + 1 * 4 + 3, 4:])


@pytest.mark.parametrize("kind", ["c2i", "t2i"])
def test_official_layout_roundtrip(tmp_path, kind):
    gpt = tiny_gpt(kind, vocab=24, grid=2)
    path = tmp_path / "ckpt.pt"
    save_llamagen_gpt(gpt, path)
    back = load_llamagen_gpt(path, **gpt.config.to_dict())
    idx = torch.randint(0, 24, (1, 3))
    cond, mask = (torch.tensor([1]), None) if kind == "c2i" else caption(valid=4)
    assert torch.equal(gpt.teacher_forced_logits(idx, cond, mask), back.teacher_forced_logits(idx, cond, mask))
    # official checkpoints also come as bare state dicts
    torch.save(gpt.state_dict(), tmp_path / "bare.pt")
    bare = load_llamagen_gpt(tmp_path / "bare.pt", **gpt.config.to_dict())
    assert torch.equal(bare.output.weight, gpt.output.weight)
    # zip checkpoints are memory-mapped; the legacy (pre-zip) format can't be and is read as before
    torch.save({"model": gpt.state_dict()}, tmp_path / "legacy.pt", _use_new_zipfile_serialization=False)
    legacy = load_llamagen_gpt(tmp_path / "legacy.pt", **gpt.config.to_dict())
    assert torch.equal(legacy.output.weight, gpt.output.weight)


def test_official_t2i_checkpoint_with_fewer_than_120_prefix_tokens(tmp_path):
    """The official CaptionEmbedder is built with token_num=120 whatever cls_token_num is, so an
    official t2i checkpoint with cls_token_num=8 holds a (120, caption_dim) unconditional caption.
    It loads, its logits (conditional and unconditional, as the official code computes them from
    a 120-token caption) match, and it is written back in the official shape."""
    import torch.nn.functional as F

    from lantern_studio.engine.checkpoints import LLAMAGEN_UNCOND_ROWS
    from lantern_studio.engine.prefix_embedders import CaptionEmbedder

    cls, cap_dim = 8, 12
    ours = tiny_gpt("t2i", vocab=24, grid=2, cls_token_num=cls, caption_dim=cap_dim)
    args = ours.config
    # the official construction: the same trunk, CaptionEmbedder(caption_dim, dim, p) with its default token_num
    official = Transformer(args)
    official.cls_embedding = CaptionEmbedder(args.caption_dim, args.dim, args.class_dropout_prob, LLAMAGEN_UNCOND_ROWS)
    g = torch.Generator().manual_seed(3)
    sd = dict(ours.state_dict())
    sd["cls_embedding.uncond_embedding"] = torch.randn(120, cap_dim, generator=g) / cap_dim**0.5
    official.load_state_dict(sd, strict=True)
    official.eval()
    path = tmp_path / "t2i_official.pt"
    torch.save({"model": official.state_dict()}, path)
    assert official.state_dict()["cls_embedding.uncond_embedding"].shape == (120, cap_dim)

    loaded = load_llamagen_gpt(path, **args.to_dict())
    idx = torch.randint(0, 24, (2, 3), generator=g)
    cap, mask = caption(batch=2, length=cls, dim=cap_dim, valid=5)
    # the official forward reads a 120-token T5 caption and keeps the first cls_token_num projected rows
    cap120 = torch.cat([cap, torch.randn(2, 120 - cls, cap_dim, generator=g)], dim=1)
    mask120 = torch.cat([mask, torch.ones(2, 120 - cls, dtype=torch.bool)], dim=1)
    with torch.no_grad():
        ref_cond = official.teacher_forced_logits(idx, cap120, mask120)
        # official CFG: cond_null = zeros_like(cond) + uncond_embedding (all 120 rows), then the same slice
        null120 = torch.zeros_like(cap120) + sd["cls_embedding.uncond_embedding"]
        ref_null = official.teacher_forced_logits(idx, null120, mask120)
        got_cond = loaded.teacher_forced_logits(idx, cap, mask)
        got_null = loaded.teacher_forced_logits(idx, loaded.null_condition(cap), mask)
        # the unconditional prefix, by hand: the official MLP over the 120 rows, first cls_token_num kept
        fc1, fc2 = sd["cls_embedding.cap_proj.fc1.weight"], sd["cls_embedding.cap_proj.fc2.weight"]
        by_hand = F.linear(F.gelu(F.linear(null120, fc1), approximate="tanh"), fc2)[:, :cls]
        assert torch.allclose(loaded.embed_condition(loaded.null_condition(cap)), by_hand, atol=1e-6)
    assert torch.allclose(got_cond, ref_cond, atol=1e-5)
    assert torch.allclose(got_null, ref_null, atol=1e-5)
    assert not torch.allclose(got_cond, got_null, atol=1e-3)  # the two branches differ: CFG has something to do

    # written back in the official shape: the official construction loads it strictly
    again = tmp_path / "again.pt"
    save_llamagen_gpt(loaded, again)
    written = torch.load(again, weights_only=True)["model"]
    assert written["cls_embedding.uncond_embedding"].shape == (120, cap_dim)
    assert torch.equal(written["cls_embedding.uncond_embedding"][:cls], sd["cls_embedding.uncond_embedding"][:cls])
    official.load_state_dict(written, strict=True)
    back = load_llamagen_gpt(again, **args.to_dict())
    with torch.no_grad():
        assert torch.equal(back.teacher_forced_logits(idx, back.null_condition(cap), mask), got_null)


def test_state_dict_keys_match_official_names():
    gpt = tiny_gpt("t2i", layers=1)
    keys = set(gpt.state_dict())
    expected = {
        "cls_embedding.cap_proj.fc1.weight", "cls_embedding.cap_proj.fc2.weight", "cls_embedding.uncond_embedding",
        "tok_embeddings.weight", "norm.weight", "output.weight",
        "layers.0.attention.wqkv.weight", "layers.0.attention.wo.weight",
        "layers.0.feed_forward.w1.weight", "layers.0.feed_forward.w2.weight", "layers.0.feed_forward.w3.weight",
        "layers.0.attention_norm.weight", "layers.0.ffn_norm.weight",
    }
    assert keys == expected
    c2i = tiny_gpt("c2i", layers=1)
    assert c2i.state_dict()["cls_embedding.embedding_table.weight"].shape[0] == 11  # 10 classes + null


def test_presets_sizes():
    with torch.device("meta"):
        b = Transformer(preset_args("GPT-B", vocab_size=16384, block_size=256, cls_token_num=1))
    n = sum(p.numel() for p in b.parameters())
    assert 105e6 < n < 125e6  # LlamaGen reports 111M for GPT-B
    assert set(GPT_PRESETS) >= {"GPT-B", "GPT-L", "GPT-XL", "GPT-XXL", "GPT-3B"}
    with pytest.raises(ValueError, match="unknown GPT preset"):
        preset_args("GPT-Q")


def test_bad_checkpoints_give_clear_errors(tmp_path):
    gpt = tiny_gpt("c2i", vocab=24)
    bad = tmp_path / "corrupt.pt"
    bad.write_bytes(b"not a checkpoint at all")
    with pytest.raises(CheckpointError, match="corrupt.pt"):
        load_llamagen_gpt(bad, **gpt.config.to_dict())
    wrong = tmp_path / "wrong.pt"
    save_llamagen_gpt(tiny_gpt("c2i", vocab=40), wrong)
    with pytest.raises(CheckpointError, match="shape mismatch"):
        load_llamagen_gpt(wrong, **gpt.config.to_dict())
    evil = tmp_path / "evil.pt"
    torch.save({"model": {"x": object()}}, evil)  # needs unpickling an arbitrary object
    with pytest.raises(CheckpointError, match="evil.pt"):
        load_llamagen_gpt(evil, **gpt.config.to_dict())
    with pytest.raises(CheckpointError, match="no such"):
        load_llamagen_gpt(tmp_path / "missing.pt", **gpt.config.to_dict())


def test_safetensors_roundtrip(tmp_path):
    gpt = tiny_gpt("t2i", vocab=24)
    save_gpt(gpt, tmp_path / "g.safetensors", dtype=torch.float32)
    back = load_gpt(tmp_path / "g.safetensors")
    assert back.config == gpt.config
    cond, mask = caption(valid=4)
    idx = torch.randint(0, 24, (1, 3))
    assert torch.equal(back.teacher_forced_logits(idx, cond, mask), gpt.teacher_forced_logits(idx, cond, mask))
    (tmp_path / "junk.safetensors").write_bytes(b"\x00" * 10)
    with pytest.raises(CheckpointError, match="junk.safetensors"):
        load_gpt(tmp_path / "junk.safetensors")
