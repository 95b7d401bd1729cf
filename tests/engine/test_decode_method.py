"""One name per decoding method: over every combination of drafter × bound × k × δ × λ (small value sets with
0 and the edges), the label, the chart group, the PNG's parameters and the bench's name and family agree with
each other and with ``Relaxation.active`` (the rule of when a run is relaxed). A mutant label rule (the old
one: k > 0 is LANTERN whatever δ) is caught."""

import itertools
import re

import pytest

from lantern_studio.engine import decode_method as dm
from lantern_studio.engine.decode_method import DecodeMethod
from lantern_studio.engine.relaxation import Relaxation
from lantern_studio.engine.settings import DRAFTERS, GenerationSettings, SettingsError
from lantern_studio.eval.bench.methods import parse_method
from lantern_studio.eval.sweep import family_of
from lantern_studio.export import a1111_parameters
from lantern_studio.studio.tradeoff import KINDS, point_of

BOUNDS = ("lantern", "lantern++", "step")
KS = (0, 1, 64)
DELTAS = (0.0, 1e-9, 0.2, 1.0)
LAMS = (None, 1.0, 1.5)


def combinations():
    for drafter, bound, k, delta, lam in itertools.product(DRAFTERS, BOUNDS, KS, DELTAS, LAMS):
        try:
            s = GenerationSettings(drafter=drafter, bound=bound, k=k, delta=delta, lam=lam).validate(1024)
        except SettingsError:
            continue  # refused combinations (step with a λ, lantern++ without one) never run
        yield s


CASES = list(combinations())


def record_of(s):
    return {"prompt": "a heart", "model": "m", "settings": s.to_dict(),
            "stats": {"mean_accepted_length": 2.0, "wall_seconds": 1.0, "target_forwards": 10,
                      "tokens": 16, "tv_budget_total": 1.6}}


def png_fields(s) -> dict:
    text = a1111_parameters(record_of(s)).split("\n", 1)[1]
    return dict(re.findall(r"(Sampler|Bound|TV budget per token): ((?:[^,(]|\([^)]*\))+)", text))


def test_the_table_covers_every_family_and_every_refusal_is_skipped_not_named():
    assert {DecodeMethod.of(s).family for s in CASES} == set(dm.FAMILIES)
    assert len(CASES) > 200


@pytest.mark.parametrize("s", CASES, ids=lambda s: f"{s.drafter}-{s.bound}-k{s.k}-d{s.delta:g}-l{s.lam}")
def test_every_place_names_a_method_the_same_and_as_relaxation_active_rules(s):
    m = DecodeMethod.of(s)
    relaxed = s.drafter != "none" and Relaxation(s.k, s.delta, s.lam, s.bound).active
    assert m.relaxed is relaxed and m.exact is (not relaxed)
    # the family follows the rule: no drafter is vanilla, not relaxed is exact, else the bound that runs
    want = ("vanilla" if s.drafter == "none" else "exact speculative" if not relaxed else
            {"lantern": "LANTERN", "lantern++": "LANTERN++", "step": "step bound"}[s.effective_bound])
    assert m.label == m.chart_group == m.family == want
    # the chart places the point in that group, and has a shape for it
    point = point_of(record_of(s), "p", s)
    assert point.kind == m.label and point.kind in KINDS
    assert (point.delta, point.lam) == ((0.0, None) if not relaxed else (s.delta, s.lam))
    # the PNG: the Sampler starts with the label, the Bound is there exactly when relaxed, and names the family
    fields = png_fields(s)
    sampler = fields["Sampler"]
    assert sampler.startswith("vanilla AR" if want == "vanilla" else want)
    assert ("Bound" in fields) is relaxed
    if relaxed:
        assert fields["Bound"] == {"LANTERN": "lantern", "LANTERN++": "lantern++", "step bound": "step"}[want]
        assert ("λ=" in sampler) is (want == "LANTERN++") and ("per step" in sampler) is (want == "step bound")
        assert ("TV budget per token" in fields) is (want != "LANTERN++")
    else:
        assert "TV budget per token" not in fields and "k=" not in sampler
    # the bench: the family the batch report groups by, and a name of that family
    bench = {"vanilla": "vanilla", "exact speculative": "exact", "LANTERN": "lantern", "LANTERN++": "lantern++",
             "step bound": "step"}[want]
    assert m.bench_family == family_of(s.to_dict()) == bench
    assert m.bench_name().startswith(bench + "-" if bench != "vanilla" else "vanilla")
    assert DecodeMethod.of_dict(s.to_dict()) == m  # a record's dict reads back as the same method


@pytest.mark.parametrize("name, family", [("lantern-jacobi-k64-d0-L12", "exact"),
                                          ("lantern-jacobi-k0-d0.3", "exact"),
                                          ("lantern-jacobi-k64-d0.3-L12", "jacobi-relaxed"),
                                          ("lantern-eagle-k64-d0.2", "lantern")])
def test_a_bench_method_named_outside_the_grid_is_in_the_family_its_settings_make(name, family):
    m = parse_method(name)
    assert (m.name, m.family) == (name, family)
    assert m.method.exact is (family == "exact")


def test_old_or_foreign_record_dicts_still_get_a_name():
    assert DecodeMethod.of_dict({}).family == "vanilla"
    assert DecodeMethod.of_dict({"drafter": "eagle", "k": "64", "delta": 0.2}).family == "exact speculative"
    # a λ beside bound "step" (before the rules) was read as the step bound with its δ
    assert DecodeMethod.of_dict({"drafter": "jacobi", "k": 64, "delta": 0.2, "lam": 2.0, "bound": "step"}).family \
        == "step bound"
    assert DecodeMethod.of_dict(None).family == "vanilla"


def test_the_table_catches_a_mutant_label_rule(monkeypatch):
    """The label rule before this module (k > 0 is LANTERN, whatever δ) fails the table."""

    def old_family(self):
        if self.drafter == "none":
            return dm.VANILLA
        if self.k == 0:
            return dm.EXACT
        return dm.LANTERN_PP if self.lam is not None else dm.LANTERN

    monkeypatch.setattr(DecodeMethod, "family", property(old_family))
    failures = 0
    for s in CASES:
        try:
            test_every_place_names_a_method_the_same_and_as_relaxation_active_rules(s)
        except AssertionError:
            failures += 1
    assert failures > 0
