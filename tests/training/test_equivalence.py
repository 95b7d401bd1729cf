"""Equivalence sets (model v6): which latent neighbours decode to the same picture, and how a run teaches them."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from lantern_studio.engine.neighbours import compute_neighbours
from lantern_studio.engine.tokenizer import VQArgs, VQModel
from lantern_studio.training.equivalence import (FORMAT, LEVELS, PairTable, compose, flat_positions, measure_sets,
                                                 patch_slice, read_sets, sets_from_table, window_start, write_sets)
from lantern_studio.training.equivalent_targets import (EquivalentTargets, check_rows, equivalent_nll,
                                                        member_weights, soft_targets, substitute_equivalents)
from lantern_studio.training.errors import TrainingError

TAU = 6.0


@pytest.fixture(scope="module")
def vq():
    torch.manual_seed(0)
    m = VQModel(VQArgs(ch=16, encoder_ch_mult=[1, 1, 1], decoder_ch_mult=[1, 1, 1], z_channels=8,
                       codebook_size=32, codebook_embed_dim=4, norm_groups=8)).eval()
    return m


@pytest.fixture(scope="module")
def grids():
    g = torch.randint(0, 32, (2, 6, 6), generator=torch.Generator().manual_seed(1))
    g[:, :3, :3] = 5  # a flat fill: repeated crops, decoded once
    return g


def crop_error(vq, grid, t, code, window):
    """The independent way: decode the crop around position t with and without ``code`` there; the max abs
    difference over the 3×3-patch window, in levels of 255."""
    gh, gw = grid.shape
    i, j = divmod(t, gw)
    r0, c0 = window_start(i, gh, window), window_start(j, gw, window)
    crop = grid[r0:r0 + window, c0:c0 + window].clone()
    alt = crop.clone()
    alt[i - r0, j - c0] = code
    with torch.no_grad():
        a, b = vq.decode_codes(torch.stack([crop, alt]).long()).float()
    f = a.shape[-1] // window
    rs, cs = patch_slice(i, r0, gh, f), patch_slice(j, c0, gw, f)
    return float((a[:, rs, cs] - b[:, rs, cs]).abs().max()) * LEVELS


def offenders(vq, grids, neighbours, members, tau, window):
    """Every (picture, position, rank) whose member decodes further than tau: what a correct set never holds."""
    bad = []
    for p, t, r in torch.nonzero(members).tolist():
        if crop_error(vq, grids[p], t, int(neighbours[grids[p].reshape(-1)[t], r]), window) > tau + 1e-3:
            bad.append((p, t, r))
    return bad


@pytest.mark.parametrize("window", [4, 6])
def test_every_code_in_a_measured_set_decodes_within_tau_and_a_code_past_tau_is_caught(vq, grids, window):
    nb = compute_neighbours(vq.codebook().float(), 8)
    moved = measure_sets(vq, grids, nb, window, batch=64)
    assert moved.shape == (2, 36, 8)
    tau = float(moved.median())  # a tolerance that splits the candidates: some in, some out
    members = moved <= tau
    assert 0 < int(members.sum()) < members.numel()
    assert offenders(vq, grids, nb, members, tau, window) == []
    # the measured errors are the crop decodes' own (spot-check every rank of a few positions)
    for t in (0, 7, 20, 35):
        for r in range(8):
            want = crop_error(vq, grids[1], t, int(nb[grids[1].reshape(-1)[t], r]), window)
            assert abs(float(moved[1, t, r]) - want) < 1e-3
    # mutant: one code past tau let into a set is caught by the same check
    out = torch.nonzero(~members)[0].tolist()
    mutant = members.clone()
    mutant[tuple(out)] = True
    assert offenders(vq, grids, nb, mutant, tau, window) == [tuple(out)]


def test_flat_positions_are_those_whose_neighbours_share_their_code(grids):
    flat = flat_positions(grids)
    assert bool(flat[0, 1, 1]) and bool(flat[0, 0, 0])  # inside the fill, and its corner (outside counts as same)
    assert not bool(flat[0, 2, 2]) or bool((grids[0, 1:4, 1:4] == 5).all())


def test_the_pair_table_gives_members_where_the_sample_saw_them_equivalent(vq, grids):
    nb = compute_neighbours(vq.codebook().float(), 8)
    moved = measure_sets(vq, grids, nb, 6, batch=64)
    tau = float(moved.median())
    table = PairTable.from_measured(grids, moved, 32, tau)
    members, error = sets_from_table(table, grids, nb, share=0.5, min_tries=1)
    # on the measured pictures themselves, a cell tried once is a member exactly where it was within tau
    once = table.tries[grids.reshape(2, -1).long()[..., None], torch.arange(8),
                       flat_positions(grids).reshape(2, -1).long()[..., None]] == 1
    assert torch.equal(members[once], (moved <= tau)[once])
    assert error.dtype == torch.uint8 and int(error.max()) <= 255
    never = sets_from_table(table, torch.full((1, 6, 6), 31), nb, share=0.5, min_tries=10 ** 6)[0]
    assert not bool(never.any())  # cells never tried often enough are never members


def test_compose_picks_only_own_codes_or_members(grids):
    nb = torch.randint(0, 32, (32, 4), generator=torch.Generator().manual_seed(2))
    members = torch.rand(2, 36, 4, generator=torch.Generator().manual_seed(3)) < 0.5
    drawn = compose(grids, nb, members, 8, torch.Generator().manual_seed(4)).reshape(2, 8, 36)
    g = grids.reshape(2, -1)
    for p in range(2):
        allowed = [{int(g[p, t])} | {int(nb[g[p, t], r]) for r in range(4) if members[p, t, r]} for t in range(36)]
        assert all(int(drawn[p, d, t]) in allowed[t] for d in range(8) for t in range(36))
    assert bool((drawn != g[:, None]).any())


def test_soft_targets_sum_to_one_and_keep_the_clean_share_and_the_loss_is_their_cross_entropy():
    gen = torch.Generator().manual_seed(0)
    V, k = 40, 6
    nb = torch.stack([torch.randperm(V, generator=gen)[:k] for _ in range(V)])
    nb = torch.where(nb == torch.arange(V)[:, None], (nb + 1) % V, nb)  # a code is never its own neighbour
    tok = torch.randint(0, V, (3, 10), generator=gen)
    members = torch.rand(3, 10, k, generator=gen) < 0.4
    members[0, 0] = False  # an empty set
    error = torch.randint(0, 7, (3, 10, k), generator=gen).to(torch.uint8)
    for weighting in ("uniform", "error"):
        w = member_weights(members, error, weighting, TAU)
        target = soft_targets(tok, nb, w, 0.3, V)
        assert torch.allclose(target.sum(-1), torch.ones(3, 10))
        has = members.any(-1)
        own = target.gather(-1, tok[..., None]).squeeze(-1)
        assert torch.allclose(own[has], torch.full_like(own[has], 0.3), atol=1e-6)
        assert float(own[0, 0]) == 1.0
        logits = torch.randn(3, 10, V, generator=gen)
        dense = -(target * torch.log_softmax(logits, -1)).sum(-1).mean()
        assert torch.allclose(equivalent_nll(logits, tok, nb, w, 0.3), dense, atol=1e-5)
    w_err = member_weights(members, error, "error", TAU)
    lo, hi = torch.nonzero(members & (error == 0))[0], torch.nonzero(members & (error == 6))
    # a member that moved the picture less weighs more than one that moved it more in the same set
    same = [h for h in hi.tolist() if h[:2] == lo.tolist()[:2]]
    if same:
        assert float(w_err[tuple(lo.tolist())]) > float(w_err[tuple(same[0])])


def test_context_substitution_draws_members_at_the_asked_share():
    """Statistical (seed 0, 32×256 positions): the share of substituted positions among those with a set is
    within 0.02 of the asked 0.3; a mutant that swaps every position with a set is rejected."""
    gen = torch.Generator().manual_seed(0)
    V, k = 64, 8
    nb = torch.stack([torch.randperm(V, generator=gen)[:k] for _ in range(V)])
    tok = torch.randint(0, V, (32, 256), generator=gen)
    members = torch.rand(32, 256, k, generator=gen) < 0.3
    out = substitute_equivalents(tok, nb, members, 0.3, torch.Generator().manual_seed(1))
    changed = out != tok
    has = members.any(-1)
    assert not bool(changed[~has].any())
    for b, t in torch.nonzero(changed).tolist()[:500]:
        assert int(out[b, t]) in {int(nb[tok[b, t], r]) for r in range(k) if members[b, t, r]}

    def share_ok(x):
        swapped = (x != tok)[has].float().mean()
        return abs(float(swapped) - 0.3) < 0.02

    assert share_ok(out)
    assert not share_ok(substitute_equivalents(tok, nb, members, 1.0, torch.Generator().manual_seed(1)))


def test_the_sets_file_round_trips_by_hash_and_hostile_files_are_one_line(tmp_path, grids):
    nb = torch.randint(0, 32, (32, 4))
    members = torch.zeros(2, 36, 4, dtype=torch.bool)
    members[0, 3, 1] = True
    path = tmp_path / "sets.safetensors"
    sha = write_sets(path, grids.reshape(2, -1), nb, members, torch.zeros_like(members, dtype=torch.uint8),
                     {"tau": 6.0})
    s = read_sets(path)
    assert s.sha256 == sha and s.meta["tau"] == 6.0 and bool(s.members[0, 3, 1]) and int(s.members.sum()) == 1
    check_rows(s, grids, str(path))
    with pytest.raises(TrainingError, match="not this run's"):
        check_rows(s, grids.flip(0), str(path))
    EquivalentTargets(s, 0.5, 0.3, "uniform")
    with pytest.raises(TrainingError, match="clean-share"):
        EquivalentTargets(s, 1.5, 0.3, "uniform")
    (tmp_path / "junk.safetensors").write_bytes(b"\x00" * 64)
    with pytest.raises(TrainingError, match="not a readable"):
        read_sets(tmp_path / "junk.safetensors")
    with pytest.raises(TrainingError, match="no such file"):
        read_sets(tmp_path / "absent.safetensors")
    from safetensors.torch import save_file
    save_file({"grids": torch.zeros(1, 4, dtype=torch.int16)}, str(tmp_path / "other.safetensors"))
    with pytest.raises(TrainingError, match="not an equivalence-sets file"):
        read_sets(tmp_path / "other.safetensors")
    json.dumps(s.meta)  # the metadata stays plain JSON
    # the hash is of the contents: the same sets written again hash alike, one member more does not
    again = write_sets(tmp_path / "again.safetensors", grids.reshape(2, -1), nb, members,
                       torch.zeros_like(members, dtype=torch.uint8), {"tau": 6.0})
    members[1, 0, 0] = True
    other = write_sets(tmp_path / "more.safetensors", grids.reshape(2, -1), nb, members,
                       torch.zeros_like(members, dtype=torch.uint8), {"tau": 6.0})
    assert again == sha and read_sets(tmp_path / "again.safetensors").sha256 == sha and other != sha
    save_file({"grids": torch.zeros(2, 36, dtype=torch.float32), "neighbours": nb.to(torch.int16),
               "members": members.to(torch.uint8), "error": torch.zeros_like(members, dtype=torch.uint8)},
              str(tmp_path / "typed.safetensors"), metadata={"format": FORMAT})
    with pytest.raises(TrainingError, match="types a sets file holds"):
        read_sets(tmp_path / "typed.safetensors")


def test_window_start_keeps_the_position_and_its_neighbours_inside():
    for grid, window in ((16, 6), (16, 8), (6, 6)):
        for i in range(grid):
            s = window_start(i, grid, window)
            assert 0 <= s <= grid - window
            assert s <= max(i - 1, 0) and min(i + 1, grid - 1) < s + window
    assert np.isclose(LEVELS, 127.5)


def test_a_class_run_taught_the_sets_puts_mass_on_them_and_records_their_hash(tmp_path):
    """Behaviour, seed fixed: a tiny class model trained 150 steps with --equivalents (clean share 0.3) puts over
    0.3 of its teacher-forced probability on the positions' set members; the same run without them (the mutant:
    plain one-hot targets) puts under 0.2 there, and under 1/2.5 of the taught run's. The run's metrics name the sets file by its sha256."""
    from test_class_model import VOCAB, _prepared, train_class

    prep = _prepared(shuffle_labels=False)
    codes = prep["codes"][0].long()  # (N, 4, 4)
    n = codes.shape[0]
    nb = torch.stack([torch.tensor([(v + d) % VOCAB for d in (1, 2, 3)]) for v in range(VOCAB)])
    members = torch.zeros(n, 16, 3, dtype=torch.bool)
    members[:, ::2, :2] = True  # every other position: its two next codes decode alike
    sets_file = tmp_path / "sets.safetensors"
    sha = write_sets(sets_file, codes.reshape(n, -1), nb, members, torch.zeros(n, 16, 3, dtype=torch.uint8),
                     {"tau": 6.0})

    def train(run, extra):
        gpt, metrics = train_class(tmp_path, prep, run, ["--shifts", "none", *extra], steps=150, warmup=10)
        return gpt.eval(), metrics

    def member_mass(gpt):
        with torch.no_grad():
            logits = gpt(codes.reshape(n, -1)[:, :-1], prep["cond"], None)
        probs = logits.float().softmax(-1)
        mass = (probs.gather(-1, nb[codes.reshape(n, -1)]) * members).sum(-1)
        return float(mass[:, ::2].mean())

    taught, metrics = train("eq", ["--equivalents", str(sets_file), "--clean-share", "0.3",
                                   "--equivalent-inputs", "0.3"])
    plain, _ = train("plain", [])
    taught_mass, plain_mass = member_mass(taught), member_mass(plain)
    print(f"mass on the sets' members: taught {taught_mass:.3f}, plain {plain_mass:.3f}")
    assert taught_mass > 0.3
    assert plain_mass < 0.2 and taught_mass > 2.5 * plain_mass
    eq = metrics["ambiguity"]["equivalents"]
    assert eq["sha256"] == sha and eq["clean_share"] == 0.3 and eq["k"] == 3


def test_train_only_leaves_every_other_weight_as_it_was(tmp_path):
    """--train-only tok_embeddings,output (run C's lever): the body's weights come out bit for bit as they went in,
    the named ones move; a name the model lacks is one clear line."""
    from test_class_model import _prepared, train_class

    prep = _prepared(shuffle_labels=False)

    def train(run, extra):
        return train_class(tmp_path, prep, run, ["--shifts", "none", *extra], steps=20, warmup=2, batch=8,
                           layers=1)[0].state_dict()

    start = train("start", [])
    moved = train("only", ["--init-from", str(tmp_path / "start" / "gpt.safetensors"),
                           "--train-only", "tok_embeddings,output"])
    for name, w in start.items():
        same = torch.equal(w, moved[name])
        assert same != name.startswith(("tok_embeddings", "output")), name
    with pytest.raises(TrainingError, match="no weight is named"):
        train("bad", ["--train-only", "decoder"])
