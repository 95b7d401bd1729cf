"""VQ tokenizer: LlamaGen layout compatibility, our safetensors format, shapes, errors."""

from __future__ import annotations

import json

import pytest
import torch

from lantern_studio.engine.tokenizer import (
    VQ_PRESETS,
    VQArgs,
    VQModel,
    load_llamagen_vq,
    load_vq,
    read_vq_args,
    save_vq,
    vq_preset,
)


def tiny_args(**kw) -> VQArgs:
    base = dict(codebook_size=64, codebook_embed_dim=4, ch=32, encoder_ch_mult=[1, 2],
                decoder_ch_mult=[1, 2], z_channels=16, num_res_blocks=1)
    base.update(kw)
    return VQArgs(**base)


def tiny_model(seed: int = 0, **kw) -> VQModel:
    torch.manual_seed(seed)
    m = VQModel(tiny_args(**kw))
    # Make the codebook's directions spread out so codes differ between inputs.
    with torch.no_grad():
        m.quantize.embedding.weight.normal_()
    return m.eval()


def images(b: int = 2, size: int = 16, seed: int = 1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.rand(b, 3, size, size, generator=g) * 2 - 1


# -- the official layout, derived by reading LlamaGen's vq_model.py -----------------


def official_layout(ch=128, ch_mult=(1, 1, 2, 2, 4), num_res_blocks=2, z=256, n_e=16384, e_dim=8,
                    show_usage=True) -> dict[str, tuple[int, ...]]:
    """Key → shape of LlamaGen's VQModel state dict, written out independently of our model."""
    out: dict[str, tuple[int, ...]] = {}

    def conv(name, cin, cout, k):
        out[f"{name}.weight"] = (cout, cin, k, k)
        out[f"{name}.bias"] = (cout,)

    def norm(name, c):
        out[f"{name}.weight"] = (c,)
        out[f"{name}.bias"] = (c,)

    def res(name, cin, cout):
        norm(f"{name}.norm1", cin)
        conv(f"{name}.conv1", cin, cout, 3)
        norm(f"{name}.norm2", cout)
        conv(f"{name}.conv2", cout, cout, 3)
        if cin != cout:
            conv(f"{name}.nin_shortcut", cin, cout, 1)

    def attn(name, c):
        norm(f"{name}.norm", c)
        for p in ("q", "k", "v", "proj_out"):
            conv(f"{name}.{p}", c, c, 1)

    levels = len(ch_mult)
    # encoder
    conv("encoder.conv_in", 3, ch, 3)
    cin = ch
    for i, m in enumerate(ch_mult):
        for j in range(num_res_blocks):
            res(f"encoder.conv_blocks.{i}.res.{j}", cin, ch * m)
            cin = ch * m
            if i == levels - 1:
                attn(f"encoder.conv_blocks.{i}.attn.{j}", cin)
        if i != levels - 1:
            conv(f"encoder.conv_blocks.{i}.downsample.conv", cin, cin, 3)
    res("encoder.mid.0", cin, cin)
    attn("encoder.mid.1", cin)
    res("encoder.mid.2", cin, cin)
    norm("encoder.norm_out", cin)
    conv("encoder.conv_out", cin, z, 3)
    # decoder
    cin = ch * ch_mult[-1]
    conv("decoder.conv_in", z, cin, 3)
    res("decoder.mid.0", cin, cin)
    attn("decoder.mid.1", cin)
    res("decoder.mid.2", cin, cin)
    for n, i in enumerate(reversed(range(levels))):
        for j in range(num_res_blocks + 1):
            res(f"decoder.conv_blocks.{n}.res.{j}", cin, ch * ch_mult[i])
            cin = ch * ch_mult[i]
            if i == levels - 1:
                attn(f"decoder.conv_blocks.{n}.attn.{j}", cin)
        if i != 0:
            conv(f"decoder.conv_blocks.{n}.upsample.conv", cin, cin, 3)
    norm("decoder.norm_out", cin)
    conv("decoder.conv_out", cin, 3, 3)
    # quantizer and 1x1 convs
    out["quantize.embedding.weight"] = (n_e, e_dim)
    if show_usage:
        out["quantize.codebook_used"] = (65536,)
    conv("quant_conv", z, e_dim, 1)
    conv("post_quant_conv", e_dim, z, 1)
    return out


@pytest.mark.parametrize("name,mult", [("VQ-16", (1, 1, 2, 2, 4)), ("VQ-8", (1, 2, 2, 4))])
def test_official_presets_match_llamagen_layout(name, mult):
    args = vq_preset(name)
    assert args.encoder_ch_mult == list(mult) and args.decoder_ch_mult == list(mult)
    assert (args.codebook_size, args.codebook_embed_dim, args.z_channels, args.ch, args.num_res_blocks) == (
        16384, 8, 256, 128, 2)
    with torch.device("meta"):
        model = VQModel(args)
    got = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    want = official_layout(ch_mult=mult)
    assert sorted(set(got) ^ set(want)) == []
    assert got == want
    if name == "VQ-16":  # the LlamaGen paper's "72M" tokenizer
        assert sum(p.numel() for p in model.parameters()) == 71_883_403
    assert VQ_PRESETS[name].downsample_factor == 2 ** (len(mult) - 1)


def test_tiny_layout_matches_and_codebook_used_is_a_buffer():
    m = tiny_model()
    got = {k: tuple(v.shape) for k, v in m.state_dict().items()}
    assert got == official_layout(ch=32, ch_mult=(1, 2), num_res_blocks=1, z=16, n_e=64, e_dim=4)
    assert "quantize.codebook_used" not in dict(m.named_parameters())
    m2 = VQModel(tiny_args(codebook_show_usage=False))
    assert "quantize.codebook_used" not in m2.state_dict()


# -- behaviour -----------------------------------------------------------------------


def test_encode_decode_shapes_and_ranges():
    args = tiny_args(encoder_ch_mult=[1, 1, 2], decoder_ch_mult=[1, 1, 2])  # 3 levels: /4
    m = VQModel(args).eval()
    x = images(2, 64)
    codes = m.encode(x)
    assert codes.shape == (2, 16, 16) and codes.dtype == torch.int64
    assert 0 <= int(codes.min()) and int(codes.max()) < args.codebook_size
    y = m.decode_codes(codes)
    assert y.shape == (2, 3, 64, 64)
    assert float(y.min()) >= -1.0 and float(y.max()) <= 1.0
    cb = m.codebook()
    assert cb.shape == (64, 4)
    torch.testing.assert_close(cb.norm(dim=1), torch.ones(64))
    # four levels downsample by 8: 64x64 -> 8x8
    m4 = VQModel(tiny_args(encoder_ch_mult=[1, 1, 1, 1], decoder_ch_mult=[1, 1, 1, 1])).eval()
    assert m4.encode(x).shape == (2, 8, 8)


def test_encode_matches_forward_and_is_nearest_code():
    m = tiny_model()
    x = images(3, 16)
    codes = m.encode(x)
    _, info = m(x)
    assert torch.equal(info["indices"], codes)
    z = torch.nn.functional.normalize(m.encode_latents(x).detach().permute(0, 2, 3, 1), dim=-1)
    brute = torch.cdist(z.reshape(-1, 4), m.codebook()).argmin(1).view(codes.shape)
    assert torch.equal(brute, codes)


def test_training_forward_losses_and_straight_through():
    m = tiny_model().train()
    x = images(2, 16)
    recon, losses = m(x)
    assert recon.shape == x.shape
    for k in ("codebook", "commit", "entropy"):
        assert losses[k].ndim == 0
    torch.testing.assert_close(losses["commit"], 0.25 * losses["codebook"].detach())
    assert 0.0 < losses["usage"] <= 1.0
    (recon.pow(2).mean() + losses["codebook"] + losses["commit"]).backward()
    # gradients reach the encoder through the straight-through estimator, and the codebook via its loss
    assert m.encoder.conv_in.weight.grad is not None and m.encoder.conv_in.weight.grad.abs().sum() > 0
    assert m.quantize.embedding.weight.grad.abs().sum() > 0
    # entropy loss when enabled
    m2 = tiny_model(entropy_loss_ratio=0.1).train()
    _, l2 = m2(x)
    assert torch.isfinite(l2["entropy"]) and float(l2["entropy"].detach()) != 0.0


def test_blocks_follow_llamagen_semantics():
    from lantern_studio.engine.tokenizer import AttnBlock, Downsample, Upsample

    torch.manual_seed(0)
    x = torch.randn(2, 32, 4, 4)
    blk = AttnBlock(32, 32)
    # LlamaGen's formulation: softmax(q^T k / sqrt(c)) over keys, values mixed by those weights.
    h = blk.norm(x)
    q, k, v = (t.reshape(2, 32, 16) for t in (blk.q(h), blk.k(h), blk.v(h)))
    w = torch.softmax(torch.bmm(q.permute(0, 2, 1), k) * 32 ** -0.5, dim=2)
    ref = x + blk.proj_out(torch.bmm(v, w.permute(0, 2, 1)).reshape(2, 32, 4, 4))
    torch.testing.assert_close(blk(x), ref)

    down = Downsample(32)
    padded = torch.nn.functional.pad(x, (0, 1, 0, 1))
    torch.testing.assert_close(down(x), torch.nn.functional.conv2d(padded, down.conv.weight, down.conv.bias,
                                                                   stride=2))
    assert down(x).shape == (2, 32, 2, 2)
    up = Upsample(32)
    near = x.repeat_interleave(2, dim=2).repeat_interleave(2, dim=3)
    torch.testing.assert_close(up(x), up.conv(near))


def test_bad_inputs_name_the_field():
    m = tiny_model()
    with pytest.raises(ValueError, match="images"):
        m.encode(torch.zeros(1, 3, 15, 16))
    with pytest.raises(ValueError, match="codes"):
        m.decode_codes(torch.full((1, 2, 2), 64))
    with pytest.raises(ValueError, match="codes"):
        m.decode_codes(torch.zeros(1, 2, 2))
    with pytest.raises(ValueError, match="norm_groups"):
        VQArgs(ch=24)
    with pytest.raises(ValueError, match="unknown"):
        VQArgs.from_dict({"codebook_size": 8, "bogus": 1})


# -- files ---------------------------------------------------------------------------


def test_save_load_roundtrip_fp32_and_fp16(tmp_path):
    m = tiny_model(ch=16, norm_groups=8)
    x = images(2, 16)
    codes = m.encode(x)
    p32 = save_vq(m, m.args, tmp_path / "vq32.safetensors", dtype=torch.float32)
    m32 = load_vq(p32)
    assert m32.args == m.args
    assert torch.equal(m32.encode(x), codes)
    torch.testing.assert_close(m32.decode_codes(codes), m.decode_codes(codes), rtol=0, atol=0)

    p16 = save_vq(m, None, tmp_path / "vq16.safetensors", metadata={"steps": "7"})
    args, meta = read_vq_args(p16)
    assert args == m.args and meta["steps"] == "7" and json.loads(meta["vq_args"])["ch"] == 16
    m16 = load_vq(p16)
    assert p16.stat().st_size < p32.stat().st_size
    torch.testing.assert_close(m16.decode_codes(codes), m.decode_codes(codes), rtol=0, atol=0.02)


def test_official_layout_checkpoint_loads_strict(tmp_path):
    m = tiny_model()
    m.train()
    m(images(2, 16))  # fill the codebook_used window like a training run does
    m.eval()
    path = tmp_path / "vq_tiny_c2i.pt"
    torch.save({"model": m.state_dict(), "steps": 3}, path)
    loaded = load_llamagen_vq(path)
    assert loaded.args == m.args
    x = images(2, 16, seed=5)
    codes = m.encode(x)
    assert torch.equal(loaded.encode(x), codes)
    assert torch.equal(loaded.decode_codes(codes), m.decode_codes(codes))
    assert torch.equal(loaded.quantize.codebook_used, m.quantize.codebook_used)
    # bare state dict and {"state_dict": ...} work too
    torch.save(m.state_dict(), tmp_path / "bare.pt")
    torch.save({"state_dict": m.state_dict()}, tmp_path / "sd.pt")
    for name in ("bare.pt", "sd.pt"):
        assert torch.equal(load_llamagen_vq(tmp_path / name).encode(x), codes)


def test_corrupt_or_wrong_files_raise_valueerror_naming_the_file(tmp_path):
    bad = tmp_path / "corrupt.pt"
    bad.write_bytes(b"this is not a checkpoint")
    with pytest.raises(ValueError, match="corrupt.pt"):
        load_llamagen_vq(bad)

    m = tiny_model()
    sd = m.state_dict()
    sd.pop("decoder.conv_out.bias")
    sd["extra.weight"] = torch.zeros(1)
    wrong = tmp_path / "wrong_keys.pt"
    torch.save({"model": sd}, wrong)
    with pytest.raises(ValueError, match=r"wrong_keys\.pt.*decoder\.conv_out\.bias") as e:
        load_llamagen_vq(wrong)
    assert "extra.weight" in str(e.value)

    with pytest.raises(ValueError, match=r"wrong_keys\.pt"):
        load_llamagen_vq(wrong, codebook_size=32)

    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"\x00" * 20)
    with pytest.raises(ValueError, match="junk.safetensors"):
        load_vq(junk)
    with pytest.raises(FileNotFoundError):
        load_vq(tmp_path / "missing.safetensors")
