"""Compiled only where faster (engine/decode_paths.py): timings per family, the choice and its memory."""

import json

import torch

from lantern_studio.engine import decode_paths as dp
from lantern_studio.engine.settings import GenerationSettings
from lantern_studio.models import load_pipeline
from lantern_studio.models.tiny import build_tiny_model_dir


def test_a_family_takes_compiled_only_when_it_measured_faster_by_the_margin():
    assert dp.PathTiming(eager=1.154, compiled=1.072).faster == "compiled"
    assert dp.PathTiming(eager=0.781, compiled=0.851).faster == "eager"
    assert dp.PathTiming(eager=1.0, compiled=0.99).faster == "eager"  # within the noise margin: eager
    assert dp.family_of(GenerationSettings(drafter="none")) == dp.VANILLA
    assert dp.family_of(GenerationSettings(drafter="jacobi", k=64, delta=0.2)) == dp.SPECULATIVE


def test_timing_runs_each_family_on_both_paths_and_leaves_the_graphs_in_place(monkeypatch, tmp_path):
    monkeypatch.setattr(torch, "compile", lambda fn, **_k: fn)  # a stand-in "graph": the fixed-shape step
    pipe = load_pipeline(str(build_tiny_model_dir(tmp_path / "tiny")))
    twin = pipe.with_compiled_steps(warm=False)
    graphs = twin.compiled
    timings = dp.time_paths(twin, rounds=2)
    assert set(timings) == {dp.VANILLA, dp.SPECULATIVE}
    assert all(t.eager > 0 and t.compiled > 0 for t in timings.values())
    assert twin.compiled is graphs and graphs.compiled_calls > 0  # the compiled decodes ran its graphs
    assert dp.time_paths(twin, rounds=2, should_stop=lambda: True) is None and twin.compiled is graphs
    assert dp.time_paths(pipe, rounds=1) is None  # an eager pipeline has nothing to time


def test_verdicts_are_kept_per_fingerprint_and_a_bad_file_counts_as_none(tmp_path):
    v = dp.PathVerdicts(tmp_path / "cache")
    assert v.get("machine A") is None
    t = {dp.VANILLA: dp.PathTiming(1.15, 1.07), dp.SPECULATIVE: dp.PathTiming(0.78, 0.85)}
    v.put("machine A", t)
    assert dp.PathVerdicts(tmp_path / "cache").get("machine A") == t and v.get("machine B") is None
    v.path.write_text("{not json", encoding="utf-8")
    assert v.get("machine A") is None
    v.path.write_text(json.dumps({"machine A": {"vanilla": {"eager": "x"}}}), encoding="utf-8")
    assert v.get("machine A") is None
    v.path.write_text(json.dumps({"machine A": {f: {"eager": -1, "compiled": 1} for f in dp.FAMILIES}}))
    assert v.get("machine A") is None
    assert "speculative (LANTERN): eager (0.85 s compiled vs 0.78 s eager)" in dp.describe(t)


def test_a_busy_machine_is_noted_and_its_verdict_not_kept(monkeypatch, tmp_path):
    """Timed while the load average exceeds the cores: the timings say so, and a relaunch measures again."""
    import os

    from lantern_studio.engine import compiled_decoding as cd

    monkeypatch.setattr(torch, "compile", lambda fn, **_k: fn)
    monkeypatch.setattr(os, "getloadavg", lambda: (99.0, 99.0, 99.0))
    pipe = load_pipeline(str(build_tiny_model_dir(tmp_path / "tiny")))
    timings = dp.time_paths(pipe.with_compiled_steps(warm=False), rounds=1)
    assert all(t.busy for t in timings.values()) and "machine busy" in dp.describe(timings)
    monkeypatch.setattr(os, "getloadavg", lambda: (0.1, 0.1, 0.1))
    assert not any(t.busy for t in dp.time_paths(pipe.with_compiled_steps(warm=False), rounds=1).values())

    kept = []
    monkeypatch.setattr(cd.PathVerdicts, "put", lambda self, key, t: kept.append(t))
    d = cd.CompiledDecoding.__new__(cd.CompiledDecoding)
    d.__dict__.update(eager=pipe, twin=None, note=None, timings=None, _fingerprint="fp",
                      task=type("T", (), {"done": True, "cancelled": False, "source": pipe, "note": None,
                                          "result": pipe, "timings": timings})())
    assert d.adopt() and d.timings is timings and kept == []
