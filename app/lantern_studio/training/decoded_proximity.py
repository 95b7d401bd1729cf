"""Neighbours ranked by decoded likeness: ``lantern-studio train proximity``.

LANTERN relaxes a drafted code towards its latent nearest codes. On our tokenizer many of those decode to a
different picture, and for a model that reads a code as its reading class (:mod:`.reading_classes`) a
non-classmate also changes what it reads next. From a model's equivalence sets (:mod:`.equivalence`) this ranks,
for every code, the latent neighbours that decode alike: those in its positions' sets at least ``bar`` of the
time, ordered by their mean decoded error (levels of 255) there, most alike first; with ``rank="classes"`` only
its classmates. The model folder's proximity file (:mod:`..models.proximity_file`) puts them first in LANTERN's
lists, followed by the latent neighbours (``rest="latent"``) or by nothing (``rest="none"``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from ..engine.checkpoints import CheckpointError
from ..models.local import install_proximity
from ..models.proximity_file import write_proximity
from .equivalence import EquivalenceSets, read_sets
from .errors import TrainingError, command
from .reading_classes import classes_of, pair_shares

RANKS = ("decoded", "classes")


def mean_errors(grids: torch.Tensor, error: torch.Tensor, vocab: int) -> torch.Tensor:
    """(V, k): each (code, neighbour rank)'s mean decoded error over the positions holding the code (inf where
    none does)."""
    k = error.shape[-1]
    codes = grids.reshape(-1).long()
    count = torch.bincount(codes, minlength=vocab).float()
    total = torch.zeros(vocab, k).index_add_(0, codes, error.reshape(-1, k).float())
    return torch.where(count[:, None] > 0, total / count[:, None].clamp(min=1), torch.full_like(total, float("inf")))


def rank_alike(neighbours: torch.Tensor, share: torch.Tensor, error: torch.Tensor, bar: float = 0.5,
               allowed: torch.Tensor | None = None) -> torch.Tensor:
    """(V, k) long: each code's neighbours with ``share`` ≥ ``bar`` (and ``allowed``), by ``error`` then rank;
    −1 after them."""
    keep = share >= bar
    if allowed is not None:
        keep &= allowed
    key = torch.where(keep, error, torch.full_like(error, float("inf")))
    order = torch.sort(key, dim=1, stable=True).indices
    ranked = neighbours.long().gather(1, order)
    return torch.where(keep.gather(1, order), ranked, torch.full_like(ranked, -1))


def ranked_from_sets(sets: EquivalenceSets, rank: str = "decoded", bar: float = 0.5,
                     class_share: float = 0.5) -> torch.Tensor:
    """The proximity file's ``ranked`` (V, A) from stored sets (A: the longest row's count, at least 1)."""
    if rank not in RANKS:
        raise ValueError(f"rank must be one of {RANKS}, got {rank!r}")
    nb = sets.neighbours.long()
    vocab = nb.shape[0]
    share = pair_shares(sets.grids, nb, sets.members.bool(), vocab)
    error = mean_errors(sets.grids, sets.error, vocab)
    allowed = None
    if rank == "classes":
        centre = classes_of(sets, class_share)
        allowed = centre[nb] == centre[:, None]
    ranked = rank_alike(nb, share, error, bar, allowed)
    width = max(1, int((ranked >= 0).sum(1).max()))
    return ranked[:, :width]


def summary(ranked: torch.Tensor, grids: torch.Tensor) -> str:
    n = (ranked >= 0).sum(1)
    weight = torch.bincount(grids.reshape(-1).long(), minlength=len(n)).float()
    used = weight > 0
    return (f"{int((n > 0).sum())} of {int(used.sum())} used codes have codes that decode alike "
            f"(mean {float(n[used].float().mean()):.1f}, most {int(n.max())}); a training position's code has "
            f"{float((n.float() * weight).sum() / weight.sum()):.1f} on average")


@command
def run(args) -> int:
    if not 0 < args.bar <= 1 or not 0 < args.class_share <= 1:
        raise TrainingError("train proximity: --bar and --class-share must be in (0, 1]")
    sets = read_sets(args.equivalents)
    ranked = ranked_from_sets(sets, args.rank, args.bar, args.class_share)
    out = Path(args.out) if args.out else Path(args.model) / "proximity.safetensors"
    write_proximity(out, ranked, args.rest, {"rank": args.rank, "bar": args.bar, "class_share": args.class_share,
                                             "equivalents_sha256": sets.sha256})
    print(f"rank {args.rank}, bar {args.bar}: {summary(ranked, sets.grids)}; then {args.rest}")
    try:
        install_proximity(args.model, out)
    except (CheckpointError, OSError) as e:
        raise TrainingError(f"train proximity --model: {e}") from None
    print(f"installed {out.name} in {args.model} (sets {sets.sha256[:12]}…)")
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--equivalents", required=True, help="the model's equivalence sets (`train equivalents`)")
    p.add_argument("--model", required=True, help="the model folder to install the proximity file in")
    p.add_argument("--rank", choices=RANKS, default="decoded",
                   help="decoded: every neighbour that decodes alike; classes: only reading classmates")
    p.add_argument("--bar", type=float, default=0.5, help="share of a code's positions a neighbour must be "
                   "equivalent at (default 0.5)")
    p.add_argument("--class-share", type=float, default=0.5, help="the reading classes' share (--rank classes)")
    p.add_argument("--rest", choices=("latent", "none"), default="latent",
                   help="what follows the ranked codes in LANTERN's lists (default latent)")
    p.add_argument("--out", default=None, help="where to write the file (default MODEL/proximity.safetensors)")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="lantern-studio train proximity", description=__doc__.split("\n")[0])
    add_arguments(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
