"""The fast path (engine/runner.py) against the reference model (engine/model.py): the same tokens for a
seed, the same logits at every step, nothing of the model changed by running it (the caches are the
runner's), and two runners over one model decoding at once."""

import threading

import numpy as np
import pytest
import torch

from lantern_studio.engine.decode import generate_tokens
from lantern_studio.engine.drafters import JacobiDrafter
from lantern_studio.engine.neighbours import ProximityTable
from lantern_studio.engine.precision import cast_transformer
from lantern_studio.engine.runner import Runner
from lantern_studio.engine.settings import GenerationSettings
from support.tiny import caption, tiny_gpt


def _decodes(target, cond, mask, table):
    """(tokens, decisions) of vanilla, exact and relaxed Jacobi decodes at two CFG scales and three seeds."""
    base = GenerationSettings(top_k=0, temperature=1.0, draft_length=4)
    out = []
    for cfg in (1.0, 2.0):
        for seed in range(3):
            s = base.with_(seed=seed, cfg_scale=cfg)
            for kw in ({}, {"drafter": "jacobi", "delta": 0.0}, {"drafter": "jacobi", "k": 8, "delta": 0.3}):
                drafter = JacobiDrafter() if kw else None
                tok, dec, _ = generate_tokens(target, cond, s.with_(**kw), mask, drafter=drafter, table=table)
                out.append((tok.clone(), dec.copy()))
    return out


@pytest.mark.parametrize("model_type", ["c2i", "t2i"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("fuse", [True, False])
def test_runner_and_reference_draw_the_same_tokens(model_type, dtype, fuse):
    gpt = cast_transformer(tiny_gpt(model_type, seed=3, vocab=32, grid=4, dim=32, layers=2), dtype)
    cond, mask = (torch.tensor([5]), None) if model_type == "c2i" else caption(valid=3)
    if cond.is_floating_point():
        cond = cond.to(dtype)
    table = ProximityTable(torch.randn(32, 4, generator=torch.Generator().manual_seed(0)))
    reference = _decodes(gpt, cond, mask, table)
    fast = _decodes(Runner(gpt, fuse=fuse), cond, mask, table)
    assert len(reference) == 18
    for (want_tok, want_dec), (tok, dec) in zip(reference, fast):
        assert torch.equal(want_tok, tok)
        assert np.array_equal(want_dec, dec)


def test_the_runner_gives_the_reference_logits_at_every_step_and_a_wrong_fast_path_is_caught():
    gpt = tiny_gpt("t2i", seed=1, vocab=24, grid=4, dim=32, layers=2)
    cond, mask = caption(valid=4)
    seq = torch.randint(0, 24, (1, 16), generator=torch.Generator().manual_seed(2))

    def logits(target):
        target.start_sequence(1, mask)
        out = [target.prefill(cond)[0]]
        for first, width in ((0, 3), (3, 1), (4, 6), (10, 5)):  # a prefix, one token, verifies
            out.append(target.step(seq[:, first:first + width], first)[0])
        return out

    want = logits(gpt)
    runner = Runner(gpt)
    for a, b in zip(want, logits(runner)):
        assert torch.equal(a, b)
    # the mutant: a runner whose fused feed-forward swaps w1 and w3 must not pass the same comparison
    runner.w13 = [torch.cat([w[w.shape[0] // 2:], w[: w.shape[0] // 2]]) for w in runner.w13]
    assert not all(torch.equal(a, b) for a, b in zip(want, logits(runner)))


def _model_state(gpt):
    """Everything a decode could set on a model: attributes, buffers (the reference's caches and masks
    among them) and submodules, and the values of its weights."""
    return ({n: id(v) for n, v in vars(gpt).items() if not n.startswith("_")},
            {n: (id(b), b.data_ptr()) for n, b in gpt.named_buffers()}, [n for n, _ in gpt.named_modules()],
            {k: v.clone() for k, v in gpt.state_dict().items()})


def test_running_sets_nothing_on_the_model():
    gpt = tiny_gpt("c2i", seed=0, vocab=16, grid=2, dim=32, layers=2)
    before = _model_state(gpt)
    runner = Runner(gpt)
    runner.compile((1, 3))  # graphs belong to the runner (they compile on first use)
    generate_tokens(runner, torch.tensor([1]), GenerationSettings(seed=0, cfg_scale=1.0, drafter="none"))
    after = _model_state(gpt)
    assert after[:3] == before[:3] and all(torch.equal(v, before[3][k]) for k, v in after[3].items())
    assert gpt.layers[0].attention.kv_cache is None and gpt.attn_mask is None  # the caches are the runner's
    assert runner.caches is not None and runner.graphs is not None
    # the check can fail: the reference decoding by itself does set its caches on the model
    generate_tokens(gpt, torch.tensor([1]), GenerationSettings(seed=0, cfg_scale=1.0, drafter="none"))
    assert _model_state(gpt)[:3] != before[:3]


def test_two_runners_over_one_model_decode_side_by_side_in_two_threads():
    """A twin shares the weights and fused copies but not the caches: two threads decoding at once, over and
    over, each draw the tokens it draws alone (shared caches would mix the two sequences)."""
    gpt = tiny_gpt("c2i", seed=5, vocab=32, grid=4, dim=32, layers=2)
    runner = Runner(gpt)
    twin = runner.twin()
    assert twin.model is gpt and twin.w13 is runner.w13 and twin.caches is None and twin.graphs is None
    jobs = {"a": (runner, torch.tensor([2]), GenerationSettings(seed=1, top_k=0, cfg_scale=2.0)),
            "b": (twin, torch.tensor([7]), GenerationSettings(seed=2, top_k=0, drafter="jacobi", draft_length=4))}

    def decode(target, cond, s):
        return generate_tokens(target, cond, s, drafter=JacobiDrafter() if s.drafter == "jacobi" else None)[0]

    alone = {k: decode(*job) for k, job in jobs.items()}
    assert not torch.equal(alone["a"], alone["b"])
    got, errors = {k: [] for k in jobs}, []

    def loop(key):
        try:
            for _ in range(12):
                got[key].append(decode(*jobs[key]))
        except Exception as e:  # noqa: BLE001 - reported below, in the test's thread
            errors.append(e)

    threads = [threading.Thread(target=loop, args=(k,)) for k in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors and all(len(v) == 12 for v in got.values())
    assert all(torch.equal(tok, alone[k]) for k, toks in got.items() for tok in toks)
    assert runner.caches is not twin.caches and runner.caches.layers[0].k_cache.data_ptr() != \
        twin.caches.layers[0].k_cache.data_ptr()


def test_the_fused_weights_reach_a_compiled_step_as_parameters_it_freezes():
    """Inductor's freezing makes constants (prepacked for the CPU's matrix kernels) only of parameters;
    the fused [w1; w3] held as plain tensors reached the graph as inputs and were multiplied unpacked."""
    gpt = tiny_gpt("c2i", seed=0, vocab=16, grid=2, dim=32, layers=2)
    runner = Runner(gpt, fuse=True)
    seen = []

    def backend(gm, example_inputs):  # what the graph takes: dynamo lifts every tensor it reads as an input
        seen.extend(example_inputs)
        return gm.forward

    runner.start_sequence(1)
    pos = torch.arange(gpt.cls_token_num, gpt.cls_token_num + 2)
    step = torch.compile(runner.static_step, backend=backend, fullgraph=True, dynamic=False)
    with torch.inference_mode():
        step(torch.zeros(1, 2, dtype=torch.long), pos, runner.caches.mask[:1, :, pos])
    fused = [x for x in seen if x.shape == runner.w13[0].shape]
    assert len(fused) == len(gpt.layers)
    assert all(isinstance(x, torch.nn.Parameter) and not x.requires_grad for x in fused)
    w = gpt.layers[0].feed_forward
    assert torch.equal(runner.w13[0], torch.cat([w.w1.weight, w.w3.weight]))
