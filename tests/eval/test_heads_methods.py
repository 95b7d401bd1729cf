"""The bench's parallel-draft-heads methods: offered where the model has heads, named by K, and
carrying the settings the engine needs."""

from lantern_studio.engine.settings import GenerationSettings
from lantern_studio.eval.bench.methods import heads_method, method_grid, select_methods


def test_heads_methods_are_offered_only_with_heads_and_select_by_name():
    assert not any("heads" in m.name for m in method_grid(("none", "jacobi"), 512))
    grid = method_grid(("none", "jacobi", "heads"), 512)
    assert {"exact-heads-K4", "lantern-heads-k64-d0.2-K4", "exact-heads-K6"} <= {m.name for m in grid}
    picked = select_methods(grid, ["exact-jacobi-L12", "exact-heads-K4", "lantern-heads-k64-d0.2-K4"])
    assert {m.name for m in picked} == {"vanilla-fp32", "exact-jacobi-L12", "exact-heads-K4",
                                        "lantern-heads-k64-d0.2-K4"}
    s = heads_method(64, 0.2, 4).settings(GenerationSettings(), seed=3)
    assert (s.drafter, s.k, s.delta, s.draft_length, s.seed) == ("heads", 64, 0.2, 4, 3)
    assert heads_method(0, 0.0, 6).family == "exact" and heads_method(0, 0.0, 6).name == "exact-heads-K6"
