"""Neighbour lists with some codes ranked first (a model folder's proximity file): the order, and LANTERN's rule
on such lists (the draft's own padding entries carry no mass)."""

import numpy as np
import pytest
import torch

from lantern_studio.engine import acceptance
from lantern_studio.engine.acceptance import neighbourhood, verify_chain
from lantern_studio.engine.neighbours import ProximityTable, compute_neighbours, put_first
from lantern_studio.engine.relaxation import Relaxation
from lantern_studio.engine.step_bound import relaxed_target
from support.oracles import random_case, step_output_distribution

V = 9


def case(seed):
    codebook, p, q = random_case(seed, V)
    g = torch.Generator().manual_seed(1000 + seed)
    ranked = torch.full((V, 3), -1)
    for c in range(V):  # 0..3 distinct codes other than c, in a random order
        others = [o for o in torch.randperm(V, generator=g).tolist() if o != c]
        n = int(torch.randint(0, 4, (1,), generator=g))
        ranked[c, :n] = torch.tensor(others[:n], dtype=torch.long)
    return codebook, p, q, ranked


def expected_row(latent_row, ranked_row, code, rest, k):
    first = [int(r) for r in ranked_row if r >= 0]
    tail = [int(x) for x in latent_row if int(x) not in first] if rest == "latent" else []
    row = (first + tail)[:k]
    return row + [code] * (k - len(row))


@pytest.mark.parametrize("rest", ["latent", "none"])
@pytest.mark.parametrize("seed", range(4))
def test_ranked_codes_come_first_then_the_rest_and_beyond_the_cache_alike(seed, rest):
    codebook, _, _, ranked = case(seed)
    latent = compute_neighbours(codebook, V - 1)
    table = ProximityTable(codebook, k_cached=V - 1, ranked=ranked, rest=rest)
    small = ProximityTable(codebook, k_cached=2, ranked=ranked, rest=rest)  # k past 2 is computed on demand
    for c in range(V):
        want = expected_row(latent[c], ranked[c], c, rest, V - 1)
        assert table.table[c].tolist() == want
        assert small.neighbours(torch.tensor([c]), V - 1)[0].tolist() == want
        listed = [x for x in want if x != c]
        assert len(set(listed)) == len(listed)  # no code twice
    assert ProximityTable(codebook).order == "latent" and table.order == f"ranked, then {rest}"
    codes = torch.arange(V)
    assert torch.equal(put_first(latent, codes, torch.full((V, 2), -1), "latent"), latent)  # nothing ranked: latent
    with pytest.raises(ValueError, match="rest"):
        ProximityTable(codebook, ranked=ranked, rest="elsewhere")


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("k,delta", [(2, 0.1), (4, 0.3), (8, 1.0)])
def test_a_deterministic_draft_moves_exactly_the_mass_of_its_ranked_prefix(seed, k, delta):
    """With rest "none", A is the longest prefix of the ranked codes within δ and p̃ moves exactly their mass; the
    padding (the draft itself) adds nothing. Mutant: counting the padding's mass (p(x̃) per pad) fails here."""
    codebook, p, _, ranked = case(seed)
    table = ProximityTable(codebook, ranked=ranked, rest="none")
    relax = Relaxation(k, delta)
    for x in range(V):
        first = [int(r) for r in ranked[x] if r >= 0][:k]
        a = []
        for j in range(len(first) + 1):
            if float(p[first[:j]].sum()) <= delta:
                a = first[:j]
        mass, _, _ = neighbourhood(p[None], torch.tensor([x]), relax, table)
        assert abs(float(mass[0]) - float(p[a].sum())) < 1e-12
        out = step_output_distribution(p, None, relax, table, draft=x)
        p_tilde = p.clone()
        p_tilde[x] += p[a].sum()
        p_tilde[a] = 0
        assert torch.allclose(out, p_tilde, atol=1e-7)
        assert 0.5 * float((out - p).abs().sum()) <= delta + 1e-7


def test_the_padding_mutant_is_caught(monkeypatch):
    """The rule with the padding's mass counted (as before ranked tables) moves more than the ranked codes hold."""
    codebook, p, _, ranked = case(1)
    table = ProximityTable(codebook, ranked=ranked, rest="none")
    x = 0  # fewer than 8 ranked codes: its row is padded with itself
    first = [int(r) for r in ranked[x] if r >= 0]
    real = neighbourhood(p[None], torch.tensor([x]), Relaxation(8, 1.0), table)[0]
    assert abs(float(real[0]) - float(p[first].sum())) < 1e-12

    def unmasked(p_, drafts, relax, table_, budget=None):
        nb = table_.neighbours(drafts, relax.k)
        cum = p_.gather(1, nb).cumsum(1)
        count = (cum <= relax.delta).sum(1)
        return cum.gather(1, (count - 1).clamp(min=0)[:, None])[:, 0], nb, count

    monkeypatch.setattr(acceptance, "neighbourhood", unmasked)
    mutant = acceptance.neighbourhood(p[None], torch.tensor([x]), Relaxation(8, 1.0), table)[0]
    assert float(mutant[0]) - float(real[0]) >= float(p[x]) - 1e-12


@pytest.mark.parametrize("rest", ["latent", "none"])
def test_verify_chain_samples_the_enumerated_distribution_on_a_ranked_table(rest):
    """Monte Carlo of the real sampler with sampled drafts, 30,000 draws, against the enumeration: TV < 0.02."""
    codebook, p, q, ranked = case(5)
    table = ProximityTable(codebook, ranked=ranked, rest=rest)
    relax = Relaxation(4, 0.3)
    p32, q32 = p.float(), q.float()
    g = torch.Generator().manual_seed(7)
    n = 30_000
    counts = np.zeros(V)
    for _ in range(n):
        x = int(torch.multinomial(q32, 1, generator=g))
        v = verify_chain(torch.stack([p32, p32]), torch.tensor([x]), q32[None], relax, table, g)
        counts[x if v.n_accepted else v.next_token] += 1
    expected = step_output_distribution(p, q, relax, table)
    assert abs(float(expected.sum()) - 1) < 1e-9
    tv = 0.5 * np.abs(counts / n - expected.numpy()).sum()
    assert tv < 0.02, tv


@pytest.mark.parametrize("seed", range(4))
def test_the_step_bound_keeps_its_guarantee_on_a_ranked_table(seed):
    codebook, p, q, ranked = case(seed)
    table = ProximityTable(codebook, ranked=ranked, rest="none")
    pstar, moved = relaxed_target(p[None], q[None], table, 4, torch.tensor([0.3], dtype=p.dtype))
    assert abs(float(pstar.sum()) - 1) < 1e-9
    assert 0.5 * float((pstar[0] - p).abs().sum()) <= 0.3 + 1e-9
    assert abs(0.5 * float((pstar[0] - p).abs().sum()) - float(moved[0])) < 1e-9
