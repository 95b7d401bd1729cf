"""Janus-Pro through transformers behind the engine's decode loops (models/janus.py), on tiny random
``JanusForConditionalGeneration`` models built offline (models/janus_tiny.py)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from lantern_studio.engine.checkpoints import CheckpointError
from lantern_studio.engine.neighbours import compute_neighbours
from lantern_studio.engine.settings import GenerationSettings
from lantern_studio.models import load_pipeline, model_defaults
from lantern_studio.models.janus import JANUS_DEFAULTS, JanusTarget
from support.lossless import PoorDrafter
from support.tiny_janus import (PROMPT, empirical_joint, exact_joint, full_forward_logits, janus_pipeline,
                                tiny_janus, tv)

GREEDY = GenerationSettings(cfg_scale=5.0, greedy=True)
SAMPLED = GenerationSettings(cfg_scale=5.0, temperature=1.0)
N_SAMPLES = 3000
# TV between a 16-cell histogram of 3000 seeded decodes and the exact law: measured 0.015–0.023 for correct
# decodes; the mutants below measure 0.10–0.21
TV_TOLERANCE = 0.05


@pytest.fixture(scope="module")
def grid4(tmp_path_factory):
    """A 4×4-token model over 64 codes (its folder written by save_pretrained, loaded by our loader)."""
    return janus_pipeline(tmp_path_factory.mktemp("janus4"), grid=4, codes=64)


@pytest.fixture(scope="module")
def grid2(tmp_path_factory):
    """A 2×2-token model over 4 codes, flat enough that its whole law can be enumerated and sampled."""
    return janus_pipeline(tmp_path_factory.mktemp("janus2"), grid=2, codes=4, spread=0.1)


@pytest.mark.parametrize("prompt", [PROMPT, "a photo of a blue cat in the sky"])
def test_greedy_matches_transformers_generate(grid4, prompt):
    model, _processor = tiny_janus(grid=4, codes=64)  # the same weights, as transformers holds them
    c = grid4.conditioner(prompt)
    theirs = model.generate(input_ids=c.cond, attention_mask=c.mask, generation_mode="image", do_sample=False,
                            guidance_scale=5)
    ours = grid4.generate(prompt, GREEDY)
    assert ours.tokens.reshape(-1).tolist() == theirs[0].tolist()
    assert ours.image.shape == (64, 64, 3)
    # the picture is Janus's own VQ decoder's
    pixels = model.decode_image_tokens(theirs)[0].detach().float().clamp(-1, 1)
    assert np.abs((pixels.numpy() + 1) * 127.5 - ours.image.astype(np.float64)).max() <= 1.0


def test_prompt_is_janus_chat_format_with_image_start(grid4):
    c = grid4.conditioner(PROMPT)
    tok = grid4.conditioner.processor.tokenizer
    ids = c.cond[0].tolist()
    assert ids[0] == tok.bos_token_id and ids[-1] == tok.convert_tokens_to_ids("<begin_of_image>")
    assert tok.convert_tokens_to_ids("<|User|>") in ids and tok.convert_tokens_to_ids("<|Assistant|>") in ids
    null = grid4.gpt.null_condition(c.cond)[0].tolist()
    assert null[0] == ids[0] and null[-1] == ids[-1] and set(null[1:-1]) == {tok.pad_token_id}


@pytest.mark.parametrize("settings", [
    GREEDY.with_(drafter="jacobi", draft_length=5),
    GREEDY.with_(drafter="jacobi", draft_length=8, k=8, delta=0.0),
    GREEDY.with_(drafter="jacobi", draft_length=8, k=8, delta=0.0, bound="step"),
])
def test_speculative_greedy_at_delta_zero_equals_vanilla(grid4, settings):
    vanilla = grid4.generate(PROMPT, GREEDY)
    spec = grid4.generate(PROMPT, settings)
    assert spec.tokens.tolist() == vanilla.tokens.tolist()
    assert spec.stats.target_forwards < vanilla.stats.target_forwards


def test_cache_cut_back_equals_full_recompute(grid4):
    """Verify windows, reject part of them, step again from the accepted length: every step's logits equal
    transformers' full forward over the sequence as it then stands (no cache)."""
    model = grid4.gpt
    c = grid4.conditioner(PROMPT)
    cond = torch.cat([c.cond, model.null_condition(c.cond)])
    mask = torch.cat([c.mask, c.mask])
    target = JanusTarget(model)
    target.start_sequence(2, mask)
    target.prefill(cond)
    g = torch.Generator().manual_seed(0)
    seq = torch.randint(0, model.vocab_size, (model.block_size,), generator=g)
    for first, width in [(0, 6), (2, 5), (3, 8), (3, 1), (4, 7), (9, 7)]:  # most cut back into the last
        window = torch.randint(0, model.vocab_size, (width,), generator=g)
        seq[first:first + width] = window
        logits, _ = target.step(window[None].expand(2, -1), first)
        assert target.cache.get_seq_length() == c.cond.shape[1] + first + width
        full = full_forward_logits(model, c.cond, c.mask, seq[None, :first + width])  # (2, first+width+1, V)
        torch.testing.assert_close(logits, full[:, first + 1:], atol=2e-5, rtol=1e-5)


def test_sampled_vanilla_matches_the_models_law_and_a_mutant_is_rejected(grid2):
    c = grid2.conditioner(PROMPT)
    exact = exact_joint(grid2.gpt, c.cond, c.mask, SAMPLED, 4)

    def distances(settings):
        emp = empirical_joint(grid2, settings, 4, N_SAMPLES)
        return tv(emp.sum(axis=(2, 3)), exact.sum(axis=(2, 3))), tv(emp.sum(axis=(0, 1)), exact.sum(axis=(0, 1)))

    assert max(distances(SAMPLED)) < TV_TOLERANCE
    # mutant: sampled too hot (temperature 1.3 where the law is at 1): the same test must reject it
    assert max(distances(SAMPLED.with_(temperature=1.3))) > TV_TOLERANCE


def test_delta_zero_is_lossless_with_a_poor_drafter(grid2):
    c = grid2.conditioner(PROMPT)
    exact = exact_joint(grid2.gpt, c.cond, c.mask, SAMPLED, 4)
    spec = SAMPLED.with_(drafter="jacobi", draft_length=3, k=2, delta=0.0)

    def distance(settings):
        emp = empirical_joint(grid2, settings, 4, N_SAMPLES, drafter=PoorDrafter(), table=grid2.table)
        return max(tv(emp.sum(axis=(2, 3)), exact.sum(axis=(2, 3))), tv(emp.sum(axis=(0, 1)), exact.sum(axis=(0, 1))))

    assert distance(spec) < TV_TOLERANCE
    assert distance(spec.with_(delta=0.5)) > TV_TOLERANCE  # relaxed: the same test sees the change


def test_neighbours_come_from_janus_codebook(grid4):
    codebook = grid4.vq.vqmodel.quantize.embedding.weight.detach()
    expected = compute_neighbours(F.normalize(codebook, dim=-1), 8)
    table = grid4.table
    tokens = torch.arange(grid4.vocab_size)
    assert torch.equal(table.neighbours(tokens, 8), expected)
    assert any(grid4._table_cache.glob("neighbours-*.npy"))  # the same on-disk cache as LlamaGen's


def test_lantern_and_jacobi_decode_a_whole_picture(grid4):
    res = grid4.generate(PROMPT, SAMPLED.with_(drafter="jacobi", draft_length=6, k=8, delta=0.2, seed=3))
    assert res.tokens.shape == (4, 4) and res.stats.tokens == 16 and not res.cancelled
    assert res.stats.target_forwards < 16


def test_save_pretrained_folder_loads_as_a_model_spec(tmp_path):
    folder = tmp_path / "janus"
    janus_pipeline(folder, grid=2, codes=16)
    assert model_defaults(str(folder)) == JANUS_DEFAULTS
    pipe = load_pipeline(str(folder), precision="fp32")
    assert pipe.defaults.cfg_scale == 5.0 and pipe.defaults.temperature == 1.0
    assert (pipe.vocab_size, pipe.grid) == (16, 2)
    assert pipe.drafters == ("none", "jacobi")
    assert pipe.generate(PROMPT, GREEDY).image.shape == (32, 32, 3)


def test_bf16_keeps_the_vq_decoder_fp32(tmp_path):
    folder = tmp_path / "janus"
    janus_pipeline(folder, grid=2, codes=16)
    pipe = load_pipeline(str(folder), precision="bf16")
    assert pipe.precision == "bf16"
    assert next(pipe.vq.parameters()).dtype == torch.float32
    assert pipe.generate(PROMPT, SAMPLED).image.shape == (32, 32, 3)


def test_refuses_in_one_line_when_memory_is_short(tmp_path, monkeypatch):
    folder = tmp_path / "janus"
    janus_pipeline(folder, grid=2, codes=16)
    monkeypatch.setenv("LANTERN_MEMORY_FREE", "1000")
    with pytest.raises(CheckpointError) as err:
        load_pipeline(str(folder), precision="fp32")
    line = str(err.value)
    assert "\n" not in line and "needs ≈" in line and "free" in line


class _Payload:
    """Unpickling this runs code: a hostile checkpoint's payload."""

    def __reduce__(self):
        return (exec, ("import pathlib; pathlib.Path('PWNED').write_text('ran')",))


@pytest.mark.parametrize("break_it", ["pickle", "garbled", "no-weights"])
def test_a_hostile_or_broken_janus_folder_is_one_line_and_runs_nothing(tmp_path, monkeypatch, break_it):
    """A pickled checkpoint in place of the safetensors never loads (safetensors only); garbled or missing
    weights are one line naming the folder."""
    folder = tmp_path / "janus"
    janus_pipeline(folder, grid=2, codes=16)
    weights = folder / "model.safetensors"
    if break_it == "pickle":
        weights.unlink()
        torch.save({"x": _Payload()}, folder / "pytorch_model.bin")
    elif break_it == "garbled":
        weights.write_bytes(b"\x00" * 64)
    else:
        weights.unlink()
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CheckpointError) as err:
        load_pipeline(str(folder), precision="fp32")
    assert "\n" not in str(err.value) and str(folder) in str(err.value)
    assert not (tmp_path / "PWNED").exists()


def test_the_benchs_timing_probes_run_on_a_janus_target(grid4):
    """The bench's step-vs-floor and verify-cost-by-width probes (which step a window at an index past the
    prefix) run on a transformers target as on our own GPT: the cache holds the context they step after."""
    from lantern_studio.eval.floor import step_vs_floor
    from lantern_studio.eval.width_cost import cost_curve

    floor = step_vs_floor(grid4, PROMPT, steps=4, repeats=1)
    assert floor["step_ms"] > 0 and floor["floor_ms"] > 0 and floor["rows"] == 2
    curve = cost_curve(grid4, PROMPT, widths=(1, 2, 4), rounds=1, repeats=1)
    assert [c["width"] for c in curve] == [1, 2, 4] and all(c["ms"] > 0 for c in curve)
