"""Decode loops: δ = 0 is lossless (statistically, with power), greedy equivalence, events, cancel."""

import pytest
import torch

from lantern_studio.engine import acceptance
from lantern_studio.engine.decisions import BY_TARGET
from lantern_studio.engine.decode import Decoding, generate_tokens
from lantern_studio.engine.drafters import EagleDrafter, JacobiDrafter
from lantern_studio.engine.neighbours import ProximityTable
from lantern_studio.engine.settings import GenerationSettings
from support.lossless import N_SAMPLES, SETTINGS, TV_TOLERANCE, VOCAB, PoorDrafter, empirical_joint3, exact_joint3, tv
from support.tiny import caption, tiny_eagle, tiny_gpt


@pytest.fixture(scope="module")
def model():
    torch.set_num_threads(1)  # tiny forwards: threads only add overhead
    return tiny_gpt("c2i", seed=3, vocab=VOCAB, grid=2, dim=16, layers=1, heads=2, output_std=0.7)


# CI runs the studio's default drafter (spatial Jacobi); the other two drafters' runs (each several
# minutes of 20k draws) are behind -m slow with the EAGLE-head run below.
@pytest.mark.parametrize("kind", [pytest.param("poor", marks=pytest.mark.slow), "jacobi",
                                  pytest.param("jacobi-uniform", marks=pytest.mark.slow)])
def test_delta_zero_is_lossless_and_the_test_has_power(model, kind, monkeypatch):
    cond = torch.tensor([4])
    drafter = {"poor": PoorDrafter(), "jacobi": JacobiDrafter("spatial"), "jacobi-uniform": JacobiDrafter("uniform")}[kind]
    settings = SETTINGS.with_(drafter="eagle" if kind == "poor" else "jacobi")
    exact = exact_joint3(model, cond, settings)
    got = empirical_joint3(model, cond, settings, drafter, N_SAMPLES)
    assert tv(got, exact) < TV_TOLERANCE

    # A mutant rule (a rejected draft is replaced by a fresh draw from p, instead of from
    # norm(max(p_A − q, 0))) must fail the same check.
    monkeypatch.setattr(acceptance, "residual_distribution", lambda p, d, nb, q=None: p / p.sum())
    mutant = empirical_joint3(model, cond, settings, drafter, N_SAMPLES // 4)
    assert tv(mutant, exact) > TV_TOLERANCE + 0.02


@pytest.mark.slow
def test_delta_zero_is_lossless_with_an_untrained_eagle_head(model):
    cond = torch.tensor([4])
    settings = SETTINGS.with_(drafter="eagle")
    drafter = EagleDrafter(tiny_eagle(model, seed=7))
    got = empirical_joint3(model, cond, settings, drafter, N_SAMPLES)
    assert tv(got, exact_joint3(model, cond, settings)) < TV_TOLERANCE


def test_vanilla_sampler_matches_enumeration(model):
    cond = torch.tensor([4])
    exact = exact_joint3(model, cond, SETTINGS)
    got = empirical_joint3(model, cond, SETTINGS, None, N_SAMPLES // 2)
    assert tv(got, exact) < TV_TOLERANCE


@pytest.mark.parametrize("kind", ["eagle", "jacobi"])
@pytest.mark.parametrize("model_type", ["c2i", "t2i"])
def test_greedy_delta_zero_equals_vanilla_greedy(kind, model_type):
    gpt = tiny_gpt(model_type, seed=5, vocab=32, grid=4, dim=32, layers=2)
    if model_type == "c2i":
        cond, mask = torch.tensor([2]), None
    else:
        cond, mask = caption(valid=3)
    base = GenerationSettings(greedy=True, cfg_scale=2.0, draft_length=4)
    ref, _, ref_stats = generate_tokens(gpt, cond, base, mask)
    drafter = EagleDrafter(tiny_eagle(gpt)) if kind == "eagle" else JacobiDrafter()
    got, decisions, stats = generate_tokens(gpt, cond, base.with_(drafter=kind), mask, drafter=drafter)
    assert torch.equal(ref, got)
    assert stats.target_forwards <= ref_stats.target_forwards
    assert set(decisions.tolist()) <= {0, 1}


def test_events_cover_every_position_once_and_stats_add_up():
    gpt = tiny_gpt("c2i", vocab=32, grid=4)
    table = ProximityTable(torch.randn(32, 4))
    s = GenerationSettings(drafter="jacobi", draft_length=5, k=8, delta=0.3, top_k=10, seed=3)
    run = Decoding(gpt, torch.tensor([1]), s, drafter=JacobiDrafter(), table=table)
    seen = []
    for ev in run:
        seen += ev.positions
        assert len(ev.tokens) == len(ev.positions) == len(ev.decisions)
        assert ev.decisions[-1] == BY_TARGET or ev.done
        assert run.tokens[ev.positions].tolist() == ev.tokens
    assert seen == list(range(16))
    st = run.stats.to_dict()
    assert st["tokens"] == 16 and not st["cancelled"]
    assert st["mean_accepted_length"] == 16 / (st["target_forwards"] + 1)
    assert st["accepted"] <= st["drafted"]


def test_same_seed_same_tokens_and_relaxation_accepts_more():
    gpt = tiny_gpt("c2i", vocab=64, grid=4, output_std=0.3)
    torch.manual_seed(0)
    table = ProximityTable(torch.randn(64, 4))
    cond = torch.tensor([1])
    exact = GenerationSettings(drafter="jacobi", draft_length=6, seed=0)
    a, _, _ = generate_tokens(gpt, cond, exact, drafter=JacobiDrafter(), table=table)
    b, _, _ = generate_tokens(gpt, cond, exact, drafter=JacobiDrafter(), table=table)
    assert torch.equal(a, b)
    acc = {}
    for delta in (0.0, 0.5):
        total = 0
        for seed in range(30):
            _, _, st = generate_tokens(gpt, cond, exact.with_(seed=seed, k=20, delta=delta), drafter=JacobiDrafter(), table=table)
            total += st.accepted
        acc[delta] = total
    assert acc[0.5] > acc[0.0]


def test_cancel_stops_between_steps():
    gpt = tiny_gpt("c2i", vocab=32, grid=4)
    run = Decoding(gpt, torch.tensor([1]), GenerationSettings())
    n = 0
    for ev in run:
        n += 1
        if n == 3:
            run.cancel()
    assert run.cancelled and run.stats.tokens == 3


def test_eagle_without_head_is_a_clear_error():
    gpt = tiny_gpt("c2i", vocab=32, grid=2)
    with pytest.raises(ValueError, match="drafter 'eagle'"):
        Decoding(gpt, torch.tensor([1]), GenerationSettings(drafter="eagle"))


def test_coupled_jacobi_is_lossless_and_a_coupling_mutant_is_caught(model, monkeypatch):
    """MC-SJD's coupling keeps each new draft distributed as its new q: δ = 0 stays
    lossless. A mutant that keeps every previous draft (no residual draw) must fail."""
    from lantern_studio.engine import drafters

    cond = torch.tensor([4])
    settings = SETTINGS.with_(drafter="jacobi", draft_length=3)
    exact = exact_joint3(model, cond, settings)
    got = empirical_joint3(model, cond, settings, JacobiDrafter("uniform", coupled=True), N_SAMPLES // 2)
    assert tv(got, exact) < TV_TOLERANCE  # sampling noise at 10k draws ≈ 0.005
    monkeypatch.setattr(drafters, "couple", lambda prev, pq, nq, g: torch.cat([prev, drafters.sample(nq[prev.shape[0]:], g)]))
    mutant = empirical_joint3(model, cond, settings, JacobiDrafter("uniform", coupled=True), N_SAMPLES // 8)
    assert tv(mutant, exact) > TV_TOLERANCE + 0.02


def test_couple_keeps_drafts_when_distributions_agree_and_is_exact_per_slot():
    from lantern_studio.engine.drafters import couple

    g = torch.Generator().manual_seed(0)
    q = torch.tensor([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]])
    prev = torch.tensor([1, 2])
    assert torch.equal(couple(prev, q, q, g), prev)  # same distribution: never moves
    # Per-slot marginal: prev ~ q_old, coupled draw ~ q_new (20k draws, 3 cells, tol 0.015).
    q_old = torch.tensor([[0.7, 0.2, 0.1]])
    q_new = torch.tensor([[0.2, 0.3, 0.5], [0.6, 0.2, 0.2]])
    n = 20_000
    prevs = torch.multinomial(q_old.expand(n, -1), 1, replacement=True, generator=g)[:, 0]
    outs = torch.stack([couple(prevs[i : i + 1], q_old, q_new, g) for i in range(n)])
    for slot in range(2):
        freq = torch.bincount(outs[:, slot], minlength=3).float() / n
        assert (freq - q_new[slot]).abs().max() < 0.015
    # and it moves as little as a coupling can: P(unchanged) = Σ min(q_old, q_new) = 0.2 + 0.2 + 0.1
    stay = (outs[:, 0] == prevs).float().mean()
    assert abs(float(stay) - 0.5) < 0.015


def test_eagle_chain_is_capped_at_its_own_length_while_jacobi_takes_the_window():
    gpt = tiny_gpt("c2i", vocab=16, grid=8, dim=32, layers=1)
    s = GenerationSettings(seed=1, draft_length=24, cfg_scale=1.0)
    seen = {}
    for name, drafter in (("eagle", EagleDrafter(tiny_eagle(gpt))), ("jacobi", JacobiDrafter())):
        run = Decoding(gpt, torch.tensor([1]), s.with_(drafter=name), drafter=drafter)
        seen[name] = max(ev.drafted for ev in run)
    assert seen["eagle"] == EagleDrafter.max_draft == 10 and seen["jacobi"] == 24
