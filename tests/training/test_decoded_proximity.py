"""Neighbours ranked by decoded likeness (training/decoded_proximity.py) from equivalence sets, and the command
that installs them in a model folder."""

from __future__ import annotations

import torch

from lantern_studio.models.local import load_model_dir
from lantern_studio.models.proximity_file import read_proximity
from lantern_studio.training.decoded_proximity import mean_errors, rank_alike, ranked_from_sets, run
from lantern_studio.training.equivalence import read_sets, write_sets
from support.tiny import tiny_v3_folder

V = 12
NB = torch.tensor([[(v + 1) % V, (v + 2) % V, (v + 3) % V] for v in range(V)])


def sets_file(path):
    """Code 0 at 15 positions of 4 pictures, code 1 at the last: 0's neighbour 1 is always equivalent (error 5),
    2 at 12 of 15 (error 2 there, 9 elsewhere), 3 at 4 (error 1 there, 40 elsewhere); 1 has no equivalent."""
    grids = torch.zeros(4, 4, dtype=torch.long)
    grids[3, 3] = 1
    members = torch.zeros(4, 4, 3, dtype=torch.bool)
    error = torch.full((4, 4, 3), 40, dtype=torch.uint8)
    zero = grids == 0
    members[..., 0] = zero
    error[..., 0] = torch.where(zero, 5, 40)
    members[:3, :, 1] = zero[:3]
    error[:3, :, 1] = 2
    error[3, :3, 1] = 9
    members[0, :, 2] = True
    error[0, :, 2] = 1
    write_sets(path, grids, NB, members, error, {"tau": 6.0})
    return read_sets(path)


def test_alike_codes_are_those_past_the_bar_most_alike_first(tmp_path):
    sets = sets_file(tmp_path / "sets.safetensors")
    ranked = ranked_from_sets(sets, "decoded", bar=0.5)
    # code 0: neighbours 1 (share 1, mean error 5) and 2 (share 0.8, mean error ~3): 2 first; 3 (share 0.27) out
    assert ranked[0].tolist()[:2] == [2, 1] and (ranked[0, 2:] == -1).all()
    assert (ranked[1:] == -1).all()  # no other code has an equivalent past the bar
    assert ranked_from_sets(sets, "decoded", bar=0.2)[0].tolist()[:3] == [2, 1, 3]  # a lower bar lets 3 in, last
    err = mean_errors(sets.grids, sets.error, V)
    assert err[5].isinf().all() and abs(float(err[0, 0]) - 5.0) < 1e-6
    # the share is a bar, not an order: by share alone 1 would come first
    share = torch.tensor([[1.0, 0.8, 0.3]])
    assert rank_alike(NB[:1], share, torch.tensor([[5.0, 3.0, 1.0]]), 0.5).tolist() == [[2, 1, -1]]
    assert rank_alike(NB[:1], share, torch.tensor([[5.0, 3.0, 1.0]]), 0.5,
                      torch.tensor([[True, False, True]])).tolist() == [[1, -1, -1]]


def test_the_command_installs_the_ranking_in_a_model_folder_and_refuses_a_bad_bar(tmp_path, capsys):
    path = tmp_path / "sets.safetensors"
    sets = sets_file(path)
    folder = tiny_v3_folder(tmp_path / "m")

    class Args:
        equivalents, model, rank, bar, class_share, rest, out = str(path), str(folder), "decoded", 0.5, 0.5, "none", None

    assert run(Args) == 0
    ranked, rest = read_proximity(folder / "proximity.safetensors", V)
    assert rest == "none" and ranked[0].tolist()[:2] == [2, 1]
    assert "1 of 2 used codes" in capsys.readouterr().out
    pipe = load_model_dir(folder)
    assert pipe.table.neighbours(torch.tensor([0]), 4).tolist() == [[2, 1, 0, 0]]
    from safetensors import safe_open
    with safe_open(str(folder / "proximity.safetensors"), "pt") as fh:
        assert fh.metadata()["equivalents_sha256"] == sets.sha256
    Args.bar = 0.0
    assert run(Args) == 2
    assert "--bar" in capsys.readouterr().err
