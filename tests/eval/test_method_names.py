"""Bench methods named outside the grid (a δ ladder): parsed, refused by name when malformed."""

import pytest

from lantern_studio.eval.bench.methods import BenchError, method_grid, parse_method, select_methods


def test_a_delta_ladder_outside_the_grid_is_parsed_and_selected():
    grid = method_grid(("none", "jacobi"), 1024)
    names = ["lantern-jacobi-k64-d0.3-L12", "lantern-jacobi-k64-d0.05-L12", "exact-jacobi-L12"]
    got = select_methods(grid, names)
    assert {m.name for m in got if m.family != "vanilla"} == set(names)
    m = parse_method("lantern-jacobi-k64-d0.3-L12")
    assert (m.k, m.delta, m.draft_length, m.drafter) == (64, 0.3, 12, "jacobi") and m.name == "lantern-jacobi-k64-d0.3-L12"


@pytest.mark.parametrize("bad", ["lantern-jacobi-k64-d1.5-L12", "lantern-jacobi-k64-d0.3-L99", "lantern-foo-k1-d0.1",
                                 "nonsense", "lantern-eagle-k64-d0.2"])
def test_a_name_that_is_not_a_method_is_refused_by_name(bad):
    with pytest.raises(BenchError, match="matches none of"):
        select_methods(method_grid(("none", "jacobi"), 1024), [bad])
