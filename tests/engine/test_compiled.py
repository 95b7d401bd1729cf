"""Compiled decode steps (engine/compiled.py, run by engine/runner.py): the same tokens as eager for a
seed, actually used, and an eager fallback in one line when compiling fails."""

import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest
import torch

from lantern_studio.engine import compiled_decoding as bc
from lantern_studio.engine.compiled import NO_COMPILER, missing_compiler
from lantern_studio.engine.decode import generate_tokens
from lantern_studio.engine.decode_paths import SPECULATIVE, VANILLA, PathTiming
from lantern_studio.engine.drafters import JacobiDrafter
from lantern_studio.engine.neighbours import ProximityTable
from lantern_studio.engine.runner import Runner
from lantern_studio.engine.settings import GenerationSettings
from lantern_studio.models import load_pipeline
from lantern_studio.models.tiny import build_tiny_model_dir
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
    gpt.clear_cache()
    torch.testing.assert_close(logits(*cases[2]), want[2], rtol=1e-4, atol=1e-4)
    assert len(graphs._shapes) == 1 and sum("again" in m for m in said) == 1


# --------------------------------------------------------------------------- compiled in the background


def _tiny_pipeline(folder):
    return load_pipeline(str(build_tiny_model_dir(folder / "tiny")))


def test_a_background_compile_reports_each_graph_and_leaves_the_source_eager(monkeypatch, tmp_path):
    """The twin compiles in its own thread (here with torch.compile as the identity), saying graph i of n;
    the pipeline it copies keeps decoding eagerly, the twin through its graphs. (Their tokens may differ:
    in bf16 the fixed-shape step rounds differently near a tie, which is why records say which ran.)"""
    monkeypatch.setattr(torch, "compile", lambda fn, **_k: fn)
    monkeypatch.setattr(bc, "missing_compiler", lambda _device: None)
    pipe = _tiny_pipeline(tmp_path)
    heard, ended = [], []
    task = bc.BackgroundCompile(pipe, tmp_path / "cache", lambda i, n: heard.append((i, n)),
                                lambda: ended.append(True)).start()
    assert task.wait(60) and task.note is None and ended == [True]
    twin = task.result
    assert heard == [(1, 2), (2, 2)] and pipe.compiled is None and twin.compiled.compiled_calls == 2
    s = pipe.defaults.with_(seed=3)
    eager, compiled = pipe.generate("a red heart", s), twin.generate("a red heart", s)
    assert eager.stats.compiled_forwards == 0 and compiled.stats.compiled_forwards == compiled.stats.target_forwards
    assert (tmp_path / "cache").is_dir()  # inductor's cache folder, named for the next launch


def test_a_compiled_twin_shares_the_weights_and_keeps_caches_of_its_own(monkeypatch, tmp_path):
    """No copy of the model: every parameter (and the fused feed-forward copies) of the twin is the eager
    pipeline's own tensor, at the same address; the caches are separate."""
    monkeypatch.setattr(torch, "compile", lambda fn, **_k: fn)
    pipe = _tiny_pipeline(tmp_path)
    twin = pipe.with_compiled_steps()
    assert twin.gpt is pipe.gpt and twin.runner is not pipe.runner
    eager_params, twin_params = dict(pipe.gpt.named_parameters()), dict(twin.runner.model.named_parameters())
    assert eager_params.keys() == twin_params.keys()
    assert all(twin_params[n].data_ptr() == p.data_ptr() for n, p in eager_params.items())
    assert twin.runner.w13 is pipe.runner.w13
    pipe.generate("a red heart", pipe.defaults.with_(seed=0))
    assert twin.runner.caches is not None and pipe.runner.caches is not None  # warmed / decoded: both allocated
    assert twin.runner.caches.layers[0].k_cache.data_ptr() != pipe.runner.caches.layers[0].k_cache.data_ptr()


def test_compiled_decoding_swaps_the_twin_in_between_jobs_per_family(monkeypatch, tmp_path):
    """The engine's one switch: eager until the twin is adopted, then the twin for the families measured
    faster compiled, what was compiled said (widths, rows), a replayed path honoured, the verdict kept."""
    monkeypatch.setattr(torch, "compile", lambda fn, **_k: fn)
    monkeypatch.setattr(bc, "missing_compiler", lambda _device: None)
    timings = {VANILLA: PathTiming(eager=1.15, compiled=1.07), SPECULATIVE: PathTiming(eager=0.78, compiled=0.85)}
    monkeypatch.setattr(bc, "time_paths", lambda *_a, **_k: timings)
    pipe = _tiny_pipeline(tmp_path)
    heard = []
    d = bc.CompiledDecoding(tmp_path / "cache", lambda: heard.append("start"), lambda i, n: heard.append((i, n)))
    d.model_loaded(pipe)
    vanilla, speculative = pipe.defaults.with_(drafter="none"), pipe.defaults.with_(drafter="jacobi")
    assert d.for_job(None, lambda: False, vanilla) is pipe and d.widths == () and d.rows == ()
    assert d.start() and not d.start()  # one compile at a time
    assert d.task.wait(60) and d.adopt() and d.note is None and heard == ["start", (1, 2), (2, 2)]
    assert d.widths == (1, pipe.defaults.draft_length + 1) and d.rows == (2 if pipe.defaults.sampling.uses_cfg else 1,)
    assert d.for_job(None, lambda: False, vanilla) is d.twin and d.twin.gpt is pipe.gpt
    assert d.for_job(None, lambda: False, speculative) is pipe  # eager measured faster for this family
    assert d.for_job("compiled", lambda: False, speculative) is d.twin and d.for_job("eager", None) is pipe
    again = bc.CompiledDecoding(tmp_path / "cache")
    again.model_loaded(pipe)
    assert again.timings == timings and again.worth_compiling  # the verdict was kept for a relaunch


def test_a_background_compile_without_a_compiler_fails_at_once_and_a_stopped_one_is_dropped(monkeypatch, tmp_path):
    def no_compile(*_a, **_k):
        raise AssertionError("compiled without a compiler")

    monkeypatch.setattr(torch, "compile", no_compile)
    monkeypatch.setattr(bc, "missing_compiler", lambda _device: NO_COMPILER)
    pipe = _tiny_pipeline(tmp_path)
    task = bc.BackgroundCompile(pipe, None).start()
    assert task.wait(60) and task.note == NO_COMPILER and task.result is None

    gate, ended = threading.Event(), []

    def held(fn, **_k):
        gate.wait(60)
        return fn

    monkeypatch.setattr(torch, "compile", held)
    monkeypatch.setattr(bc, "missing_compiler", lambda _device: None)
    task = bc.BackgroundCompile(pipe, None, on_done=lambda: ended.append(True)).start()
    task.cancel()
    gate.set()
    assert task.wait(60) and task.result is None and ended == []  # stopped after its first graph, unheard
    assert task.twin.compiled.compiled_calls == 1


def test_missing_compiler_asks_inductors_own_search(monkeypatch):
    from torch._inductor import cpp_builder, exc  # noqa: PLC0415 - the compiler stack, only for this test

    assert missing_compiler("meta") is None  # only a CPU graph is C++

    def none_found():
        raise exc.InvalidCxxCompiler()

    monkeypatch.setattr(cpp_builder, "get_cpp_compiler", none_found)
    assert missing_compiler("cpu") == NO_COMPILER


_LAUNCH = """
import json, sys, torch
torch.set_num_threads(1)
from lantern_studio.engine.compiled_decoding import BackgroundCompile
from lantern_studio.studio.compiled_steps import compile_cache
from lantern_studio.models import load_pipeline
cache = compile_cache()
before = set(cache.rglob("*.so")) if cache.exists() else set()
task = BackgroundCompile(load_pipeline(sys.argv[1]), cache).start()
task.wait()
print(json.dumps({"note": task.note, "compiled": task.result is not None, "seconds": task.seconds,
                  "cxx_builds": len(set(cache.rglob("*.so")) - before)}))
"""


@pytest.mark.slow
@needs_cxx
def test_a_relaunch_reaches_compiled_steps_from_the_studios_cache_without_building_code(tmp_path):
    """Two launches with one studio cache folder, as the studio compiles (its cache, its background compile):
    the first builds the steps' C++ kernels, the second builds none. (With the weights frozen and prepacked
    into the graph, inductor's FX graph cache cannot keep the graph itself — 'mkldnn tensors unpickleable' —
    so each launch still traces and lowers; what the cache spares is the C++ build, most of a CPU compile.)"""
    folder = build_tiny_model_dir(tmp_path / "tiny")
    env = dict(os.environ, LANTERN_STUDIO_CACHE=str(tmp_path / "cache"), OMP_NUM_THREADS="1")
    env.pop("TORCHINDUCTOR_CACHE_DIR", None)
    runs = [json.loads(subprocess.run([sys.executable, "-c", _LAUNCH, str(folder)], env=env, check=True,
                                      capture_output=True, text=True, timeout=1800).stdout.strip().splitlines()[-1])
            for _ in range(2)]
    print(runs)
    assert all(r["compiled"] and r["note"] is None for r in runs)
    assert runs[0]["cxx_builds"] > 0 and runs[1]["cxx_builds"] == 0
    assert (tmp_path / "cache" / "compiled").is_dir()
