"""Parallel draft heads (engine/draft_heads.py): δ = 0 stays lossless with them (and two mutants
are caught by the same check), LANTERN relaxes their drafts through the one verify path, and
drafting costs no sequential forward."""

import numpy as np
import pytest
import torch

from lantern_studio.engine import acceptance
from lantern_studio.engine.decode import Decoding, generate_tokens
from lantern_studio.engine.draft_heads import DraftHeads, HeadsDrafter
from lantern_studio.engine.neighbours import ProximityTable
from lantern_studio.engine.sampling import probs_from_logits
from lantern_studio.engine.settings import GenerationSettings
from support.lossless import N_SAMPLES, SETTINGS, TV_TOLERANCE, VOCAB, empirical_joint3, exact_joint3, tv
from support.oracles import step_output_distribution
from support.tiny import tiny_gpt


@pytest.fixture(scope="module")
def model():
    torch.set_num_threads(1)  # tiny forwards: threads only add overhead
    return tiny_gpt("c2i", seed=3, vocab=VOCAB, grid=2, dim=16, layers=1, heads=2, output_std=0.7)


def random_heads(dim: int, k: int, hidden: int = 8, seed: int = 11, std: float = 0.5) -> DraftHeads:
    """Heads far from the target (every weight random): an honest but poor drafter."""
    torch.manual_seed(seed)
    h = DraftHeads(dim, k, hidden)
    with torch.no_grad():
        for p in h.parameters():
            p.normal_(0, std)
    return h.eval()


class ReportsUniformQ(HeadsDrafter):
    """Mutant: drafts drawn from the heads, but reported as drawn from the uniform distribution."""

    def propose(self, ctx, n):
        drafts, q = super().propose(ctx, n)
        return drafts, torch.full_like(q, 1.0 / q.shape[-1])


@pytest.mark.slow  # 10k decodes and two mutants (~80 s): the same verify path as Jacobi's, whose test runs in CI
def test_delta_zero_is_lossless_with_heads_and_mutants_are_caught(model, monkeypatch):
    """With guidance (two rows: SETTINGS' cfg 1.5) and 3 heads drafting 3 tokens a round, the
    first three tokens' joint law matches the enumeration (10k decodes, the project's tolerance).
    The same check rejects a drafter that misreports q and a rule whose rejections draw from p."""
    cond = torch.tensor([4])
    settings = SETTINGS.with_(drafter="heads", draft_length=3)
    heads = random_heads(16, 3)
    exact = exact_joint3(model, cond, settings)
    got = empirical_joint3(model, cond, settings, HeadsDrafter(heads), N_SAMPLES // 2)
    assert tv(got, exact) < TV_TOLERANCE  # sampling noise at 10k draws ≈ 0.005

    mutant = empirical_joint3(model, cond, settings, ReportsUniformQ(heads), N_SAMPLES // 8)
    assert tv(mutant, exact) > TV_TOLERANCE + 0.02
    monkeypatch.setattr(acceptance, "residual_distribution", lambda p, d, nb, q=None: p / p.sum())
    mutant = empirical_joint3(model, cond, settings, HeadsDrafter(heads), N_SAMPLES // 8)
    assert tv(mutant, exact) > TV_TOLERANCE + 0.02


def exact_first_two(gpt, heads, cond, settings, table):
    """The exact joint law of image tokens 0 and 1 when token 1 is the first heads draft verified
    under ``settings.relaxation``: p(t0) · out(t1 | t0), out from the acceptance oracle with the
    heads' q for that slot; and per t0 the per-token bound p + m(·)."""
    params = settings.sampling
    joint, bound = np.zeros((VOCAB, VOCAB)), np.zeros((VOCAB, VOCAB))
    for t0 in range(VOCAB):
        c = torch.cat([cond, gpt.null_condition(cond)]) if params.uses_cfg else cond
        idx = torch.tensor([[t0]]).expand(c.shape[0], -1)
        logits, feats = gpt.teacher_forced_logits(idx, c, return_features=True)
        p = probs_from_logits(logits.detach(), params)[0].double()  # rows: token 0, token 1 | t0
        e = gpt.tok_embeddings(torch.tensor([t0])).expand(c.shape[0], -1)
        q = probs_from_logits(gpt.output(heads(feats[:, 0], e, 1)).detach().float(), params)[0, 0].double()
        out = step_output_distribution(p[1], q, settings.relaxation, table)
        mass, _, _ = acceptance.neighbourhood(p[1][None].expand(VOCAB, -1), torch.arange(VOCAB),
                                              settings.relaxation, table)
        joint[t0] = float(p[0, t0]) * out.numpy()
        bound[t0] = (p[1] + mass).numpy()
    return joint, bound


def empirical_first_two(gpt, cond, settings, heads, table, n):
    counts, accepted = np.zeros((VOCAB, VOCAB)), 0
    for seed in range(n):
        tokens, _, stats = generate_tokens(gpt, cond, settings.with_(seed=seed), drafter=HeadsDrafter(heads),
                                           table=table)
        counts[int(tokens[0]), int(tokens[1])] += 1
        accepted += stats.accepted
    return counts / n, accepted


def test_lantern_relaxes_heads_drafts_through_the_verify_path(model):
    """k = 2, δ = 0.4 on the heads' drafts (no guidance): tokens (0, 1) follow the enumerated relaxed
    law (the oracle of the acceptance tests, fed the heads' own q), each token's chance given t0
    stays within p + m, the law is far from p's (so the check has power: 0.13 apart in TV), and
    more drafts are accepted than at δ = 0 on the same seeds."""
    torch.manual_seed(2)
    table = ProximityTable(torch.randn(VOCAB, 2))
    cond = torch.tensor([4])
    heads = random_heads(16, 3, std=1.0)
    relaxed = SETTINGS.with_(drafter="heads", draft_length=3, k=2, delta=0.4, cfg_scale=1.0)
    exact, bound = exact_first_two(model, heads, cond, relaxed, table)
    n = N_SAMPLES // 4
    got, _ = empirical_first_two(model, cond, relaxed, heads, table, n)
    assert tv(got, exact) < TV_TOLERANCE  # 16 cells at 5k draws: noise ≈ 0.01
    p_exact, _ = exact_first_two(model, heads, cond, relaxed.with_(delta=0.0), table)
    assert tv(exact, p_exact) > TV_TOLERANCE + 0.05
    assert tv(got, p_exact) > TV_TOLERANCE + 0.05  # a rule that ignored δ would be caught
    p0 = exact.sum(1, keepdims=True)
    assert np.all(exact <= bound * p0 + 1e-6)  # P(t0, t1) ≤ p(t0) · (p(t1 | t0) + m(t1)), float32 rounding
    assert np.all(got / np.maximum(got.sum(1, keepdims=True), 1e-12) <= bound + 0.05)
    _, acc_exact = empirical_first_two(model, cond, relaxed.with_(delta=0.0), heads, table, 400)
    _, acc_relaxed_same = empirical_first_two(model, cond, relaxed, heads, table, 400)
    assert acc_relaxed_same > acc_exact


class CountingTarget:
    """A decode target that counts its forwards and passes them to the reference model."""

    def __init__(self, gpt):
        self.model, self.compiled_calls = gpt, 0
        self.prefills = self.steps = 0

    def start_sequence(self, batch, caption_mask=None):
        self.model.start_sequence(batch, caption_mask)

    def prefill(self, cond):
        self.prefills += 1
        return self.model.prefill(cond)

    def step(self, tokens, first_index):
        self.steps += 1
        return self.model.step(tokens, first_index)


@pytest.mark.parametrize("cfg", [1.0, 2.0])
def test_drafting_adds_no_sequential_forward(cfg):
    """One target forward a round and nothing else: the target's steps equal the rounds, its
    transformer layers run once per forward (the heads never run them), drafter.forwards stays 0,
    the heads are evaluated once a round, and a draft_length above K is clamped to K."""
    gpt = tiny_gpt("c2i", seed=5, vocab=32, grid=4, dim=32, layers=2)
    heads = random_heads(32, 4, hidden=16, std=0.1)
    layer_calls = []
    gpt.layers[0].register_forward_hook(lambda *a: layer_calls.append(1))
    target = CountingTarget(gpt)
    drafter = HeadsDrafter(heads)
    s = GenerationSettings(drafter="heads", draft_length=10, cfg_scale=cfg, seed=1)
    run = Decoding(target, torch.tensor([2]), s, drafter=drafter)
    events = list(run)
    rounds = len(events) - 1  # the first event is the prefill's token
    assert run.stats.tokens == 16
    assert target.prefills == 1 and target.steps == rounds == run.stats.target_forwards
    assert len(layer_calls) == 1 + rounds
    assert drafter.forwards == 0 and run.stats.drafter_forwards == 0
    assert drafter.head_calls == rounds == run.stats.drafter_head_calls
    assert all(ev.drafted <= 4 for ev in events)
    assert max(ev.drafted for ev in events) == 4


def test_greedy_heads_equal_vanilla_greedy():
    """Greedy decoding with heads drafts (q = 1) gives vanilla greedy's tokens, with guidance."""
    gpt = tiny_gpt("c2i", seed=5, vocab=32, grid=4, dim=32, layers=2)
    base = GenerationSettings(greedy=True, cfg_scale=2.0, draft_length=4)
    ref, _, ref_stats = generate_tokens(gpt, torch.tensor([2]), base)
    got, _, stats = generate_tokens(gpt, torch.tensor([2]), base.with_(drafter="heads"),
                                    drafter=HeadsDrafter(random_heads(32, 4, hidden=16, std=0.05)))
    assert torch.equal(ref, got)
    assert stats.target_forwards <= ref_stats.target_forwards


def test_untrained_heads_start_from_the_targets_own_guess():
    """Zero-initialised output layers: every head's feature is h itself."""
    heads = DraftHeads(8, 3, 5)
    h, e = torch.randn(2, 8), torch.randn(2, 8)
    assert torch.equal(heads(h, e), h[:, None].expand(-1, 3, -1))
    with pytest.raises(ValueError, match="heads"):
        DraftHeads(8, 0, 5)
