"""Reading classes (training/reading_classes.py): which codes a model reads as one, and a run that reads so."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from lantern_studio.engine.model import ModelArgs, Transformer
from lantern_studio.training.equivalence import write_sets
from lantern_studio.training.errors import TrainingError
from lantern_studio.training.reading_classes import classes, classmates, read_as, tie_rows

sys.path.insert(0, str(Path(__file__).parent))

V = 8
# latent neighbours: each code's two nearest are the next two (mod V)
NB = torch.tensor([[(v + 1) % V, (v + 2) % V] for v in range(V)])


def tiny_model(output_std: float) -> Transformer:
    """A one-layer class model over the V codes, seed 0, its output head large enough to read."""
    torch.manual_seed(0)
    model = Transformer(ModelArgs(dim=32, n_layer=1, n_head=2, vocab_size=V, block_size=9, num_classes=3,
                                  num_styles=1, num_tones=1, model_type="c2i", cls_token_num=1)).eval()
    torch.nn.init.normal_(model.output.weight, std=output_std)
    return model


def sets_for(pairs: dict[int, list[int]], counts: dict[int, int]):
    """Grids holding each code ``counts[c]`` times, every position of code c holding the ranks ``pairs[c]``."""
    codes = torch.cat([torch.full((n,), c) for c, n in counts.items()])
    members = torch.zeros(len(codes), 2, dtype=torch.bool)
    for i, c in enumerate(codes.tolist()):
        members[i, pairs.get(c, [])] = True
    return codes[None], members[None]


def test_codes_in_each_others_sets_read_as_one_and_a_one_way_frequent_code_does_not():
    """1 is in 0's set but 0 is not among 1's neighbours (1 → 2, 3): 1 joins 0 because it is rare. 5 is in 4's
    set, 4 not in 5's, and 5 is as used as 4: not merged (the mutant that ignores the way back merges it). 7 is
    rare and in 6's set: merged into 6."""
    grids, members = sets_for({0: [0], 4: [0], 6: [0]}, {0: 100, 1: 2, 4: 50, 5: 50, 6: 40, 7: 1, 2: 30, 3: 30})
    centre = classes(grids, NB, members, V)
    assert centre[1] == 0  # rare, in 0's set
    assert centre[5] == 5  # as used as 4, and 4 is not in its set
    assert centre[7] == 6
    assert torch.equal(centre[centre], centre)  # a centre reads as itself
    # the mutant: any neighbour in the centre's set joins it, however used
    loose = classes(grids, NB, members, V, rare=float("inf"))
    assert loose[5] == 4


def test_mutual_members_merge_and_share_is_the_bar():
    """2 and 3 each hold the other in most positions → one class; above the bar, not."""
    nb = torch.tensor([[(v + 1) % V, (v - 1) % V] for v in range(V)])  # rank 0: next, rank 1: previous
    codes = torch.tensor([2] * 10 + [3] * 10)[None]
    members = torch.zeros(1, 20, 2, dtype=torch.bool)
    members[0, :7, 0] = True  # 70 % of 2's positions hold 3
    members[0, 10:16, 1] = True  # 60 % of 3's positions hold 2
    assert classes(codes, nb, members, V, share=0.5)[3] == 2
    assert classes(codes, nb, members, V, share=0.65)[3] == 3


def test_classmates_keep_only_members_that_read_as_the_code():
    centre = torch.arange(V)
    centre[1] = 0
    tok = torch.tensor([0, 2])
    members = torch.ones(2, 2, dtype=torch.bool)  # 0: {1, 2}; 2: {3, 4}
    kept = classmates(tok, NB, members, centre)
    assert kept.tolist() == [[True, False], [False, False]]
    assert read_as(torch.tensor([1, 0, 5]), centre).tolist() == [0, 0, 5]


def test_tied_rows_read_a_classmate_exactly_as_its_centre():
    """A tiny model, rows tied: logits on a sequence and on it with classmates swapped in are identical; untied
    (the mutant), they differ."""
    model = tiny_model(0.2)
    centre = torch.arange(V)
    centre[[1, 2]] = 0
    seq = torch.tensor([[0, 3, 0, 5, 0, 6, 0, 4]])
    swapped = torch.tensor([[1, 3, 2, 5, 1, 6, 2, 4]])
    cond = torch.tensor([[1, 0, 0]])

    def logits(x):
        with torch.no_grad():
            return model(x, cond, None)

    assert not torch.allclose(logits(seq), logits(swapped))
    tie_rows(model.tok_embeddings.weight.data, centre)
    assert torch.equal(logits(seq), logits(swapped))


def test_a_run_with_reading_classes_ships_tied_rows_and_records_the_share(tmp_path):
    """A tiny class run taught with --reading-classes: the exported input rows of every class are its centre's,
    its metrics say the share; the option without --equivalents is one clear line."""
    from test_class_model import VOCAB, _prepared, train_class

    prep = _prepared(shuffle_labels=False)
    codes = prep["codes"][0].long()
    n = codes.shape[0]
    nb = torch.stack([torch.tensor([(v + d) % VOCAB for d in (1, 2, 3)]) for v in range(VOCAB)])
    members = torch.ones(n, 16, 3, dtype=torch.bool)  # every code's next codes decode alike
    sets_file = tmp_path / "sets.safetensors"
    write_sets(sets_file, codes.reshape(n, -1), nb, members, torch.zeros(n, 16, 3, dtype=torch.uint8), {"tau": 6.0})
    gpt, metrics = train_class(tmp_path, prep, "rc", ["--shifts", "none", "--equivalents", str(sets_file),
                                                      "--reading-classes", "0.5", "--clean-share", "0.5"],
                               steps=20, warmup=2, batch=8, layers=1)
    centre = classes(codes.reshape(n, -1), nb, members, VOCAB, 0.5)
    assert (centre != torch.arange(VOCAB)).any()
    rows = gpt.tok_embeddings.weight.data
    assert torch.equal(rows, rows[centre])
    assert metrics["ambiguity"]["equivalents"]["reading_classes"] == 0.5
    with pytest.raises(TrainingError, match="--reading-classes"):
        train_class(tmp_path, prep, "bad", ["--shifts", "none", "--reading-classes", "0.5"], steps=2, warmup=1,
                    batch=8, layers=1)


def test_the_reading_probe_scores_mass_and_what_each_class_costs():
    """``train reading``'s measures on made-up probabilities, and class costs on a tiny model: a class whose rows
    are tied costs nothing; the same class untied (the mutant) costs NLL."""
    from lantern_studio.training.reading_probe import class_costs, scores, spread

    tok = torch.tensor([[0, 1, 2]])
    probs = torch.zeros(1, 3, V)
    probs[0, 0, 0], probs[0, 0, 1] = 0.5, 0.5  # right (argmax ties go to the first)
    probs[0, 1, 1], probs[0, 1, 3] = 0.25, 0.75  # wrong
    probs[0, 2, 2] = 1.0
    has_set = torch.tensor([[True, True, False]])
    s = scores(probs, tok, has_set)
    assert s["set"] == 0.5 and s["no_set"] == 1.0
    assert abs(s["nll"] - (-(torch.tensor(0.5).log() + torch.tensor(0.25).log()) / 3)) < 1e-6
    mates = torch.zeros(1, 3, 2, dtype=torch.bool)
    mates[0, 0, 0] = True  # position 0: code 0's rank 0 (code 1) reads as it
    m = spread(probs, tok, NB, mates)
    assert abs(m["share"] - 1 / 3) < 1e-6 and m["own"] == 0.5 and m["classmates"] == 0.5 and m["largest"] == 0.5

    model = tiny_model(0.5)
    centre = torch.arange(V)
    centre[[1, 2]] = 0
    centre[5] = 4
    seqs = torch.tensor([[0, 1, 2, 4, 5, 3, 1, 5, 2], [5, 4, 1, 0, 2, 6, 7, 1, 4]])
    cond = torch.tensor([[0, 0, 0], [1, 0, 0]])
    tie_rows(model.tok_embeddings.weight.data[:, :], torch.tensor([0, 0, 0, 3, 4, 5, 6, 7]))  # class 0 tied only
    costs = {c: cost for c, _, cost in class_costs(model, seqs, cond, centre)}
    assert abs(costs[0]) < 1e-6 and costs[4] != 0
