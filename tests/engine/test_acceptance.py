"""LANTERN's rule checked by exact enumeration, and the sampler against it."""

import numpy as np
import pytest
import torch

from lantern_studio.engine.acceptance import neighbourhood, verify_chain
from lantern_studio.engine.decisions import ACCEPTED_EXACT, ACCEPTED_RELAXED
from lantern_studio.engine.neighbours import ProximityTable, compute_neighbours
from lantern_studio.engine.relaxation import Relaxation
from support.oracles import random_case, step_output_distribution

V = 9


def brute_neighbours(codebook, x):
    d = ((codebook - codebook[x]) ** 2).sum(1)
    order = [int(i) for i in np.lexsort((np.arange(V), d.numpy())) if i != x]
    return order


def brute_neighbourhood(codebook, p, x, k, bound):
    """Longest prefix of the k nearest neighbours with mass ≤ bound (by definition)."""
    nb = brute_neighbours(codebook, x)[:k]
    best = []
    for j in range(len(nb) + 1):
        if float(p[nb[:j]].sum()) <= bound:
            best = nb[:j]
    return best


def test_neighbour_table_is_nearest_first_self_excluded_and_chunk_independent(tmp_path):
    codebook, _, _ = random_case(0, V)
    table = compute_neighbours(codebook, V - 1, chunk=2)
    assert torch.equal(table, compute_neighbours(codebook, V - 1, chunk=1000))
    for x in range(V):
        assert table[x].tolist() == brute_neighbours(codebook, x)
    pt = ProximityTable(codebook, k_cached=3, cache_dir=tmp_path)
    # beyond the cached k the table computes on demand, in the same order
    assert pt.neighbours(torch.tensor([4]), 7)[0].tolist() == brute_neighbours(codebook, 4)[:7]
    assert list(tmp_path.glob("neighbours-*.npy"))
    again = ProximityTable(codebook, k_cached=3, cache_dir=tmp_path)
    assert torch.equal(again.table, pt.table)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("k,delta", [(1, 0.05), (3, 0.1), (5, 0.3), (8, 0.6), (8, 1.0)])
def test_deterministic_draft_gives_exactly_p_tilde(seed, k, delta):
    codebook, p, _ = random_case(seed, V)
    table = ProximityTable(codebook)
    relax = Relaxation(k, delta)
    for x in range(V):
        a = brute_neighbourhood(codebook, p, x, k, delta)
        mass, nb, count = neighbourhood(p[None], torch.tensor([x]), relax, table)
        assert nb[0, : int(count[0])].tolist() == a  # the nearest prefix with mass ≤ δ
        assert abs(float(mass[0]) - float(p[a].sum())) < 1e-12
        p_tilde = p.clone()
        p_tilde[x] += p[a].sum()
        p_tilde[a] = 0
        out = step_output_distribution(p, None, relax, table, draft=x)
        assert torch.allclose(out, p_tilde, atol=1e-7)  # float rounding when A ∪ {x} is everything
        assert 0.5 * float((out - p).abs().sum()) <= delta + 1e-7


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("k,delta", [(2, 0.1), (4, 0.25), (8, 0.5)])
def test_sampled_drafts_bound_holds_per_token(seed, k, delta):
    codebook, p, q = random_case(seed, V)
    table = ProximityTable(codebook)
    relax = Relaxation(k, delta)
    out = step_output_distribution(p, q, relax, table)
    assert abs(float(out.sum()) - 1) < 1e-12
    mass, _, _ = neighbourhood(p[None].expand(V, -1), torch.arange(V), relax, table)
    assert torch.all(out <= p + mass + 1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_delta_zero_is_exact_speculative_sampling(seed):
    codebook, p, q = random_case(seed, V)
    table = ProximityTable(codebook)
    for relax in (Relaxation(0, 0.3), Relaxation(5, 0.0)):
        assert torch.allclose(step_output_distribution(p, q, relax, table), p, atol=1e-12)
        for x in range(V):
            out = step_output_distribution(p, None, relax, table, draft=x)
            assert torch.allclose(out, p, atol=1e-12)


def test_lantern_pp_uses_multiplicative_bound():
    codebook, p, _ = random_case(3, V)
    table = ProximityTable(codebook)
    x = int(p.argmax())
    lam = 1.7
    a = brute_neighbourhood(codebook, p, x, 6, (lam - 1) * float(p[x]))
    mass, nb, count = neighbourhood(p[None], torch.tensor([x]), Relaxation(6, 0.0, lam), table)
    assert nb[0, : int(count[0])].tolist() == a
    assert float(mass[0]) <= (lam - 1) * float(p[x]) + 1e-12
    # λ = 1 is exact
    assert not Relaxation(6, 0.0, 1.0).active


@pytest.mark.parametrize("sampled", [False, True])
def test_verify_chain_samples_the_enumerated_distribution(sampled):
    """Monte Carlo of the real sampler vs the enumeration, 40,000 draws, TV < 0.015."""
    codebook, p, q = random_case(11, V)
    table = ProximityTable(codebook)
    relax = Relaxation(4, 0.2)
    p32, q32 = p.float(), q.float()
    g = torch.Generator().manual_seed(5)
    n = 40_000
    counts = np.zeros(V)
    x_fixed = 2
    for _ in range(n):
        x = int(torch.multinomial(q32, 1, generator=g)) if sampled else x_fixed
        v = verify_chain(torch.stack([p32, p32]), torch.tensor([x]), q32[None] if sampled else None, relax, table, g)
        counts[x if v.n_accepted else v.next_token] += 1
    expected = step_output_distribution(p, q if sampled else None, relax, table, None if sampled else x_fixed)
    tv = 0.5 * np.abs(counts / n - expected.numpy()).sum()
    assert tv < 0.015, tv


def test_decisions_mark_relaxed_acceptances():
    p = torch.tensor([0.05, 0.5, 0.45])
    codebook = torch.tensor([[0.0], [10.0], [0.1]])  # 0 and 2 are neighbours
    table = ProximityTable(codebook)
    g = torch.Generator().manual_seed(0)
    kinds = set()
    for _ in range(200):
        v = verify_chain(torch.stack([p, p]), torch.tensor([0]), None, Relaxation(1, 0.5), table, g)
        if v.n_accepted:
            kinds.add(v.decisions[0])
        else:
            assert v.next_token == 1  # neighbour 2 lost its mass to the draft
    assert kinds == {ACCEPTED_EXACT, ACCEPTED_RELAXED}


def test_greedy_acceptance():
    p = torch.tensor([0.30, 0.35, 0.35 - 1e-3, 0.0 + 1e-3])
    codebook = torch.tensor([[0.0], [5.0], [0.1], [9.0]])
    table = ProximityTable(codebook)
    exact = verify_chain(torch.stack([p, p]), torch.tensor([0]), None, Relaxation(), table, None, greedy=True)
    assert exact.n_accepted == 0 and exact.next_token == 1
    relaxed = verify_chain(torch.stack([p, p]), torch.tensor([0]), None, Relaxation(1, 0.4), table, None, greedy=True)
    assert relaxed.n_accepted == 1 and relaxed.decisions == [ACCEPTED_RELAXED]
