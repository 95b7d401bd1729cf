"""Native bf16 decoding: the precision setting, what it casts (and what stays fp32),
cached = teacher-forced logits within a bf16 tolerance, δ = 0 lossless in bf16."""

from __future__ import annotations

import copy

import pytest
import torch

from lantern_studio.engine import precision
from lantern_studio.engine.drafters import EagleDrafter, JacobiDrafter
from lantern_studio.engine.model import rope_table
from support.lossless import N_SAMPLES, SETTINGS, TV_TOLERANCE, PoorDrafter, empirical_joint3, exact_joint3, tv
from support.tiny import caption, incremental_logits, tiny_eagle, tiny_gpt

# bf16 keeps 8 significant bits: a relative error of 2^-8 ≈ 0.4 % per rounding; through two
# layers and a 32-way output head the logits (|logit| ≲ 10 here) agree to ~0.1-0.2.
BF16_LOGIT_ATOL = 0.25


def test_resolve_names_and_refuses_bad_values(monkeypatch):
    assert precision.resolve("fp32") is torch.float32
    assert precision.resolve("bf16") is torch.bfloat16
    assert precision.resolve(" BF16 ") is torch.bfloat16
    with pytest.raises(precision.PrecisionError, match=r"precision: must be one of auto, fp32, bf16, fp16; got 'int8'"):
        precision.resolve("int8")
    with pytest.raises(precision.PrecisionError, match="fp16 has no fast CPU kernels"):
        precision.resolve("fp16", "cpu")
    # auto follows the CPU's flags
    monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset({"avx2", "avx512_bf16"}))
    assert precision.resolve("auto") is torch.bfloat16 and precision.resolve(None) is torch.bfloat16
    assert precision.native_bf16("cpu") == (True, "CPU has AVX512_BF16")
    monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset({"avx2", "fma"}))
    assert precision.resolve("auto") is torch.float32
    assert precision.native_bf16("cpu")[0] is False


def test_cast_keeps_the_rotary_table_fp32():
    gpt = tiny_gpt("t2i", vocab=32, grid=3, dim=32, layers=2)
    precision.cast_transformer(gpt, torch.bfloat16)
    assert all(p.dtype is torch.bfloat16 for p in gpt.parameters())
    assert gpt.rope.dtype is torch.float32
    want = rope_table(3, 32 // 4, gpt.config.rope_base, gpt.cls_token_num)
    assert torch.equal(gpt.rope, want)
    gpt.start_sequence(2)
    assert gpt.layers[0].attention.kv_cache.k_cache.dtype is torch.bfloat16  # KV cache in the weights' dtype
    gpt.clear_cache()


@pytest.mark.parametrize("kind", ["c2i", "t2i"])
def test_bf16_incremental_equals_teacher_forced_within_bf16_tolerance(kind):
    ref = tiny_gpt(kind, vocab=32, grid=3, dim=32, layers=2)
    gpt = precision.cast_transformer(copy.deepcopy(ref), torch.bfloat16)
    idx = torch.randint(0, 32, (2, gpt.block_size), generator=torch.Generator().manual_seed(1))
    if kind == "c2i":
        cond, mask = torch.tensor([3, 7]), None
        cond_b = cond
    else:
        cond, mask = caption(batch=2, length=5, valid=3)
        cond_b = cond.to(torch.bfloat16)
    tf = gpt.teacher_forced_logits(idx[:, :-1], cond_b, mask)
    inc = incremental_logits(gpt, idx[:, :-1], cond_b, mask)
    assert tf.dtype is torch.float32 and inc.dtype is torch.float32  # logits always fp32
    assert (tf - inc).abs().max() < BF16_LOGIT_ATOL
    # and bf16 is close to fp32 too, but not equal (the cast did happen)
    full = ref.teacher_forced_logits(idx[:, :-1], cond, mask)
    err = (full - inc).abs().max()
    assert 0 < err < 2 * BF16_LOGIT_ATOL


@pytest.fixture(scope="module")
def bf16_model():
    torch.set_num_threads(1)
    m = tiny_gpt("c2i", seed=3, vocab=4, grid=2, dim=16, layers=1, heads=2, output_std=0.7)
    return precision.cast_transformer(m, torch.bfloat16)


NATIVE_BF16 = precision.native_bf16("cpu")[0]


# CI runs the studio's default drafter where bf16 is native; the other drafters (a minute each) are behind -m slow
@pytest.mark.parametrize("kind", [
    pytest.param(k, marks=() if NATIVE_BF16 and k == "jacobi" else pytest.mark.slow) for k in ("poor", "jacobi", "eagle")])
def test_delta_zero_is_lossless_in_bf16(bf16_model, kind):
    """Against the bf16 target's own distribution: the rule is exact whatever the weights' dtype.
    Runs in CI where the machine decodes in bf16 (auto picks it); elsewhere under -m slow."""
    cond = torch.tensor([4])
    drafter = {"poor": PoorDrafter(), "jacobi": JacobiDrafter("spatial"),
               "eagle": EagleDrafter(precision.cast_transformer(tiny_eagle(bf16_model, seed=7), torch.bfloat16))}[kind]
    settings = SETTINGS.with_(drafter="jacobi" if kind == "jacobi" else "eagle")
    exact = exact_joint3(bf16_model, cond, settings)
    got = empirical_joint3(bf16_model, cond, settings, drafter, N_SAMPLES // 4)  # noise ≈ 0.008 at 5k draws
    assert tv(got, exact) < TV_TOLERANCE


def test_pipeline_precision_setting(tmp_path):
    from lantern_studio.engine.pipeline import ImagePipeline
    from lantern_studio.engine.settings import GenerationSettings
    from lantern_studio.engine.text import ClassConditioner
    from lantern_studio.engine.tokenizer import VQArgs, VQModel

    gpt = tiny_gpt("c2i", vocab=32, grid=2, dim=32, layers=1)
    vq = VQModel(VQArgs(ch=16, encoder_ch_mult=[1, 1, 1], decoder_ch_mult=[1, 1, 1], z_channels=8,
                        codebook_size=32, codebook_embed_dim=4, norm_groups=8))
    pipe = ImagePipeline(gpt, vq, ClassConditioner([f"c{i}" for i in range(10)]), tiny_eagle(gpt))
    assert pipe.precision == "fp32"
    pipe.set_precision("bf16")
    assert pipe.precision == "bf16" and next(pipe.eagle.parameters()).dtype is torch.bfloat16
    assert next(pipe.vq.parameters()).dtype is torch.float32  # the decoder stays fp32
    s = GenerationSettings(seed=1, drafter="jacobi", k=4, delta=0.1, cfg_scale=2.0)
    a, b = pipe.generate("c3", s), pipe.generate("c3", s)
    assert (a.tokens == b.tokens).all() and a.image.dtype.name == "uint8"
    pipe.set_precision("fp32")
    assert pipe.precision == "fp32" and pipe.gpt.rope.dtype is torch.float32
