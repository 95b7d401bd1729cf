"""Teaching every token sequence that decodes to the same picture (model v6): ``train ar --equivalents FILE``.

A training row's picture has, at each position, an equivalence set (:mod:`.equivalence`): latent neighbours of its
code that decode within τ/255 of it in context. Two levers teach them:

* **soft targets** (:func:`soft_targets`, :func:`equivalent_nll`): the target at a position keeps ``clean_share`` on
  the picture's own code and spreads the rest over its set (evenly, or weighted towards the codes that moved the
  picture least); a position with an empty set keeps its one-hot target;
* **contexts drawn from the same sets** (:func:`substitute_equivalents`): about ``share`` of the context tokens
  are replaced by a member of their own set, the sequences the model's own sampling and LANTERN's relaxation feed
  it once it spreads its mass;
* or **reading classes** (:mod:`.reading_classes`): the model reads every code as its class's centre and its
  targets spread only over classmates, so the re-tokenisations it samples read exactly as the clean picture.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .equivalence import EquivalenceSets, grids_hash
from .errors import TrainingError
from .reading_classes import classmates, read_as

WEIGHTINGS = ("uniform", "error")


def check_rows(sets: EquivalenceSets, grids: torch.Tensor, where: str) -> None:
    """The sets must be of exactly these rows (N, h, w): the same codes, in the same order."""
    flat = grids.reshape(grids.shape[0], -1)
    if tuple(flat.shape) != tuple(sets.grids.shape) or grids_hash(flat) != grids_hash(sets.grids):
        raise TrainingError(f"--equivalents {where}: its rows are not this run's (made for {sets.grids.shape[0]} "
                            f"rows, the run has {flat.shape[0]}); make it with `train equivalents` and this run's "
                            "--vq, --repertoire, --styles and --grow-from")


def member_weights(members: torch.Tensor, error: torch.Tensor, weighting: str, tau: float) -> torch.Tensor:
    """(…, k) bool members and their expected error (levels of 255) → (…, k) float weights summing to 1 over
    each non-empty set (0 over an empty one). ``error``: a member weighs 1 − error/(τ + 1)."""
    w = members.float()
    if weighting == "error":
        w = w * (1.0 - error.float() / (float(tau) + 1.0)).clamp(min=0.05)
    return w / w.sum(-1, keepdim=True).clamp(min=1e-12)


def soft_targets(tok: torch.Tensor, neighbours: torch.Tensor, weights: torch.Tensor, clean_share: float,
                 vocab: int) -> torch.Tensor:
    """The dense target distributions (B, T, V): ``clean_share`` on ``tok``, the rest over its members by
    ``weights`` (B, T, k); an empty set keeps all of it on ``tok``. (For tests and reading; the loss gathers.)"""
    out = torch.zeros(*tok.shape, vocab)
    has = weights.sum(-1) > 0
    keep = torch.where(has, torch.full(tok.shape, float(clean_share)), torch.ones(tok.shape))
    out.scatter_(-1, tok[..., None], keep[..., None])
    out.scatter_add_(-1, neighbours[tok], weights * (1 - keep)[..., None])
    return out


def equivalent_nll(logits: torch.Tensor, tok: torch.Tensor, neighbours: torch.Tensor, weights: torch.Tensor,
                   clean_share: float) -> torch.Tensor:
    """Cross-entropy of ``logits`` (B, T, V) against :func:`soft_targets`, without building them."""
    logp = F.log_softmax(logits.float(), dim=-1)
    hard = -logp.gather(-1, tok[..., None]).squeeze(-1)
    soft = -(logp.gather(-1, neighbours[tok]) * weights).sum(-1)
    has = weights.sum(-1) > 0
    return torch.where(has, clean_share * hard + (1 - clean_share) * soft, hard).mean()


def substitute_equivalents(tok: torch.Tensor, neighbours: torch.Tensor, members: torch.Tensor, share: float,
                           gen: torch.Generator) -> torch.Tensor:
    """``tok`` (B, T) with about ``share`` of the positions that have a non-empty set given one of its members,
    uniformly; the others keep their code."""
    if share <= 0:
        return tok
    has = members.any(-1)
    pick = torch.multinomial(members.reshape(-1, members.shape[-1]).float() + (~has).reshape(-1, 1).float(),
                             1, generator=gen).reshape(tok.shape)
    swapped = neighbours[tok.cpu(), pick].to(tok.device)
    where = (torch.rand(tok.shape, generator=gen) < share) & has
    return torch.where(where.to(tok.device), swapped, tok)


class EquivalentTargets:
    """A run's sets and levers, drawn per batch: ``batch(tok, rows, gen)`` → (inputs, weights)."""

    def __init__(self, sets: EquivalenceSets, clean_share: float, substitute: float, weighting: str,
                 centre: torch.Tensor | None = None):
        if not 0 <= clean_share <= 1:
            raise TrainingError(f"train ar --clean-share: must be in [0, 1], got {clean_share}")
        if not 0 <= substitute <= 1:
            raise TrainingError(f"train ar --equivalent-inputs: must be in [0, 1], got {substitute}")
        if weighting not in WEIGHTINGS:
            raise TrainingError(f"train ar --equivalent-weighting: one of {', '.join(WEIGHTINGS)}, got {weighting}")
        self.sets, self.clean_share, self.substitute, self.weighting = sets, clean_share, substitute, weighting
        self.centre = centre  # (V,) each code's reading-class centre, or None: codes are read as they are
        self.tau = float(sets.meta.get("tau", 6.0))

    def batch(self, tok: torch.Tensor, rows: torch.Tensor, gen: torch.Generator):
        members = self.sets.members[rows.cpu()].bool()
        if self.centre is not None:  # only the members that read as the clean code do
            members = classmates(tok.cpu(), self.sets.neighbours.long(), members, self.centre)
        weights = member_weights(members, self.sets.error[rows.cpu()], self.weighting, self.tau).to(tok.device)
        inputs = substitute_equivalents(tok, self.sets.neighbours, members, self.substitute, gen)
        if self.centre is not None:
            inputs = read_as(inputs, self.centre)
        return inputs, weights

    def loss(self, model, tok, cond, mask, inputs, weights) -> torch.Tensor:
        logits = model(inputs[:, :-1], cond, mask)
        return equivalent_nll(logits, tok, self.sets.neighbours.to(tok.device), weights, self.clean_share)
