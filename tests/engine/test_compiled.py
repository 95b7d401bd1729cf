"""Compiled decode steps (engine/compiled.py, run by engine/runner.py): the same tokens as eager for a
seed, actually used, and an eager fallback in one line when compiling fails."""

import numpy as np
import pytest
import torch

from lantern_studio.engine.decode import generate_tokens
from lantern_studio.engine.drafters import JacobiDrafter
from lantern_studio.engine.neighbours import ProximityTable
from lantern_studio.engine.runner import Runner
from lantern_studio.engine.settings import GenerationSettings
from support.compiler import needs_cxx
from support.tiny import caption, tiny_gpt

WINDOW = 4


def _runs(gpt, cond, mask, table, cfgs):
    """(tokens, decisions, stats) of a vanilla and a relaxed speculative decode per CFG scale, two seeds each."""
    base = GenerationSettings(top_k=0, temperature=1.0, draft_length=WINDOW)
    out = []
    for cfg in cfgs:  # 2.0: two rows, 1.0: one; the graphs are per row count
        for seed in (0, 1):
            s = base.with_(seed=seed, cfg_scale=cfg)
            out.append(generate_tokens(gpt, cond, s, mask))
            out.append(generate_tokens(gpt, cond, s.with_(drafter="jacobi", k=8, delta=0.2), mask,
                                       drafter=JacobiDrafter(), table=table))
    return out


# Each graph compiles in ~10-20 s on a 2-core CPU: CI compiles the class model's two CFG shapes; the
# caption model (padding in its mask) and the one-row graphs are behind -m slow.
@needs_cxx
@pytest.mark.parametrize("model_type,cfgs", [("c2i", (2.0,)),
                                             pytest.param("t2i", (2.0, 1.0), marks=pytest.mark.slow)])
def test_compiled_steps_give_the_eager_tokens_and_are_used(model_type, cfgs):
    torch.set_num_threads(1)
    gpt = Runner(tiny_gpt(model_type, seed=2, vocab=32, grid=4, dim=32, layers=2))
    cond, mask = (torch.tensor([3]), None) if model_type == "c2i" else caption(valid=3)
    table = ProximityTable(torch.randn(32, 4, generator=torch.Generator().manual_seed(0)))
    eager = _runs(gpt, cond, mask, table, cfgs)

    graphs = gpt.compile((1, WINDOW + 1))
    got = _runs(gpt, cond, mask, table, cfgs)
    assert not graphs.failed, graphs.note
    for (want_tok, want_dec, _), (tok, dec, _) in zip(eager, got):
        assert torch.equal(want_tok, tok)
        assert np.array_equal(want_dec, dec)
    # every step ran compiled: vanilla steps (width 1) and verifies (≤ window + 1, padded), each row count
    forwards = sum(st.target_forwards for _, _, st in got)
    assert graphs.compiled_calls == forwards and graphs.eager_calls == 0
    assert all(st.compiled_forwards == st.target_forwards for _, _, st in got)
    assert all(st.compiled_forwards == 0 for _, _, st in eager)
    rows = {2 if cfg > 1 else 1 for cfg in cfgs}
    assert {s[:2] for s in graphs._shapes} == {(r, w) for r in rows for w in (1, WINDOW + 1)}


def test_a_width_without_a_graph_runs_eagerly_and_a_failed_compile_says_so_once(monkeypatch):
    gpt = Runner(tiny_gpt("c2i", seed=2, vocab=32, grid=4, dim=32, layers=2))
    cond = torch.tensor([3])
    s = GenerationSettings(drafter="jacobi", draft_length=WINDOW, seed=0)
    want, _, _ = generate_tokens(gpt, cond, s, drafter=JacobiDrafter())

    graphs = gpt.compile((1,))  # verifies are wider than 1: all eager
    got, _, st = generate_tokens(gpt, cond, s, drafter=JacobiDrafter())
    assert torch.equal(got, want) and graphs.compiled_calls == 0 and graphs.eager_calls == st.target_forwards

    said = []

    def broken(*_a, **_k):
        raise RuntimeError("no C++ compiler found\nlong traceback")

    monkeypatch.setattr(torch, "compile", broken)
    graphs = gpt.compile((WINDOW + 1,), say=said.append)
    got, _, st = generate_tokens(gpt, cond, s, drafter=JacobiDrafter())
    assert torch.equal(got, want)
    assert graphs.failed and graphs.compiled_calls == 0 and graphs.eager_calls == st.target_forwards
    assert said == [graphs.note] and "no C++ compiler found" in graphs.note and "\n" not in graphs.note


@needs_cxx
def test_padding_never_reaches_a_real_query():
    """A verify padded to a wider graph returns the eager logits of its real rows, at the start,
    the middle and the last positions of the sequence (where the padding is clamped)."""
    torch.set_num_threads(1)
    gpt = Runner(tiny_gpt("c2i", seed=4, vocab=32, grid=4, dim=32, layers=2))
    gen = torch.Generator().manual_seed(1)
    seq = torch.randint(0, 32, (2, 16), generator=gen)
    cond = torch.tensor([1, 10])

    def logits(first, width):
        gpt.start_sequence(2)
        gpt.prefill(cond)
        if first:
            gpt.step(seq[:, :first], 0)
        return gpt.step(seq[:, first:first + width], first)[0]

    cases = [(0, 3), (6, 2), (13, 3), (15, 1)]
    want = [logits(f, w) for f, w in cases]
    said = []
    graphs = gpt.compile((8,), say=said.append)
    for (f, w), ref in zip(cases, want):
        calls = graphs.compiled_calls
        got = logits(f, w)
        assert graphs.compiled_calls > calls, graphs.note
        torch.testing.assert_close(got, ref, rtol=1e-4, atol=1e-4)
    # caches allocated anew (a graph is bound to its caches): compiled again, once, and still right
    gpt.model.clear_cache()
    torch.testing.assert_close(logits(*cases[2]), want[2], rtol=1e-4, atol=1e-4)
    assert len(graphs._shapes) == 1 and sum("again" in m for m in said) == 1
