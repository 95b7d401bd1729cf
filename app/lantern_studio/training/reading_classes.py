"""Reading classes: the codes a model *reads* as one, so that sampling among equivalents feeds it nothing new.

A model taught to spread its mass over each position's equivalence set (:mod:`.equivalent_targets`) samples
re-tokenisations of its pictures, and then reads them back as its context. Measured on v4.1 (docs/results.md,
2026-12-06): a model that memorised one tokenisation per picture tracks *which* picture through the exact codes of
flat fills and the white ground, and loses a third of its next-token accuracy on a re-tokenised context; every run
that taught it the re-tokenisations as contexts lost its pictures.

Here the model is spared that reading altogether. The codes are grouped into **reading classes** (:func:`classes`):
each class is a centre code (the most used first) and the latent neighbours that stand in for it in most of the
training pictures' positions (its equivalence sets) and for which it stands in as well (or that are rare). The
model reads every code as its class's centre (:func:`read_as`; in a shipped model the embedding rows of a class
are the centre's row, :func:`tie_rows`, so the engine needs nothing new), and its soft targets spread only over
the members of a position's set that share the clean code's class (:func:`classmates`): whatever it samples among
them, its next context is the one it was taught.
"""

from __future__ import annotations

import torch

from .equivalence import EquivalenceSets


def pair_shares(grids: torch.Tensor, neighbours: torch.Tensor, members: torch.Tensor, vocab: int) -> torch.Tensor:
    """(V, k): for each code and neighbour rank, the share of the positions holding that code (``grids`` (N, T))
    whose set has that neighbour (``members`` (N, T, k)); 0 for a code no position holds."""
    k = neighbours.shape[1]
    codes = grids.reshape(-1).long()
    count = torch.bincount(codes, minlength=vocab).float()
    hits = torch.zeros(vocab, k).index_add_(0, codes, members.reshape(-1, k).float())
    return hits / count[:, None].clamp(min=1)


def classes(grids: torch.Tensor, neighbours: torch.Tensor, members: torch.Tensor, vocab: int,
            share: float = 0.5, rare: float = 0.05) -> torch.Tensor:
    """(V,) long: each code's class centre (a centre maps to itself). Codes are visited most used first; an
    unassigned code becomes a centre and takes each unassigned latent neighbour that is in its set at least
    ``share`` of the times and that either holds it in its own set as often or is rare (used less than ``rare``
    times as often as the centre)."""
    nb = neighbours.long()
    k = nb.shape[1]
    count = torch.bincount(grids.reshape(-1).long(), minlength=vocab).float()
    fwd = pair_shares(grids, nb, members, vocab)
    back = torch.zeros(vocab, k)  # back[c, r]: how often nb[c, r]'s sets hold c
    for r in range(k):
        other = nb[:, r]
        hit = nb[other] == torch.arange(vocab)[:, None]
        back[:, r] = torch.where(hit.any(1), fwd[other, hit.float().argmax(1)], torch.zeros(vocab))
    centre = torch.arange(vocab)
    taken = torch.zeros(vocab, dtype=torch.bool)
    for c in torch.argsort(count, descending=True, stable=True).tolist():
        if taken[c] or count[c] == 0:
            continue
        taken[c] = True
        for r in range(k):
            o = int(nb[c, r])
            if not taken[o] and fwd[c, r] >= share and (back[c, r] >= share or count[o] < rare * count[c]):
                centre[o], taken[o] = c, True
    return centre


def classes_of(sets: EquivalenceSets, share: float = 0.5) -> torch.Tensor:
    """:func:`classes` of stored sets."""
    return classes(sets.grids, sets.neighbours, sets.members.bool(), sets.neighbours.shape[0], share)


def read_as(tokens: torch.Tensor, centre: torch.Tensor) -> torch.Tensor:
    """Each token replaced by its class centre: what the model reads."""
    return centre.to(tokens.device)[tokens]


def classmates(tokens: torch.Tensor, neighbours: torch.Tensor, members: torch.Tensor,
               centre: torch.Tensor) -> torch.Tensor:
    """``members`` (…, k) of the codes ``tokens`` (…) kept only where the neighbour reads as the token does."""
    c = centre.to(tokens.device)
    return members & (c[neighbours.to(tokens.device)[tokens]] == c[tokens][..., None])


@torch.no_grad()
def tie_rows(embedding: torch.Tensor, centre: torch.Tensor) -> torch.Tensor:
    """Every row of ``embedding`` (V, D) set to its class centre's row, in place → ``embedding``. A model whose
    input rows are tied reads a code exactly as its centre, with no change to the engine."""
    moved = torch.nonzero(centre != torch.arange(len(centre)), as_tuple=True)[0].to(embedding.device)
    embedding[moved] = embedding[centre.to(embedding.device)[moved]]
    return embedding


def summary_line(centre: torch.Tensor, grids: torch.Tensor, neighbours: torch.Tensor, members: torch.Tensor) -> str:
    """How many codes read as another, and how much of the sets the classes keep."""
    size = torch.bincount(centre, minlength=len(centre))
    kept = classmates(grids.long(), neighbours.long(), members.bool(), centre)
    m = members.bool()
    return (f"reading classes: {int((centre != torch.arange(len(centre))).sum())} codes read as another code, "
            f"{int((size > 1).sum())} classes (largest {int(size.max())}); positions with a classmate in their set "
            f"{float(kept.any(-1).float().mean()):.0%} (with any member {float(m.any(-1).float().mean()):.0%}); "
            f"clean tokens read as another {float((centre[grids.long()] != grids.long()).float().mean()):.1%}")
