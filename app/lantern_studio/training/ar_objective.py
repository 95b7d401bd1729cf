"""The AR model's training objective: next-token cross-entropy, optionally against the mixture of the jittered
copies' codes (``--mixture-targets``), and the corrupted contexts (neighbour substitution, style dropout) a run
may read.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..engine.model import Transformer
from ..engine.tokenizer import load_vq

def neighbour_table(vq_path, k: int) -> torch.Tensor:
    """(V, k) long: each code's k nearest other codes (Euclidean, in the codebook's own space)."""
    book = load_vq(vq_path).codebook().float()
    d = torch.cdist(book, book)
    d.fill_diagonal_(float("inf"))
    return d.topk(k, largest=False).indices


def nll(model: Transformer, tok, cond, mask, inputs: torch.Tensor | None = None, copies: torch.Tensor | None = None):
    """Next-token cross-entropy. ``inputs``: the context tokens read (default ``tok``;
    :func:`substitute_neighbours` makes contexts a relaxed acceptance creates), ``tok`` the targets.
    ``copies`` (B, C, T): every copy of each row's picture (clean and jittered); the target at each place is
    then their mixture — the codes imperceptibly different pictures put there — instead of ``tok``'s one."""
    # forward = teacher_forced_logits (through DDP's hooks when wrapped)
    logits = model((tok if inputs is None else inputs)[:, :-1], cond, mask)
    flat = logits.reshape(-1, logits.shape[-1])
    if copies is None:
        return F.cross_entropy(flat, tok.reshape(-1))
    logp = F.log_softmax(flat.float(), dim=-1)
    return -logp.gather(1, copies.permute(0, 2, 1).reshape(flat.shape[0], -1)).mean()


def substitute_neighbours(tok: torch.Tensor, neighbours: torch.Tensor, share: float,
                          gen: torch.Generator) -> torch.Tensor:
    """``tok`` (B, T) with about ``share`` of its tokens replaced by one of their k nearest codes
    (``neighbours`` (V, k), uniformly): the contexts LANTERN's relaxed acceptance leaves behind, which a
    model taught only clean sequences has never read."""
    if share <= 0:
        return tok
    where = torch.rand(tok.shape, generator=gen) < share
    pick = torch.randint(0, neighbours.shape[1], tok.shape, generator=gen)
    swapped = neighbours[tok.cpu(), pick].to(tok.device)
    return torch.where(where.to(tok.device), swapped, tok)


def drop_styles(cond: torch.Tensor, any_index: int, share: float, gen: torch.Generator) -> torch.Tensor:
    """Class conditions (B, 3) with about ``share`` of the rows' style set to ``any_index``: the rows that
    teach the "any style" vector (the identity's pictures of every style answer to it)."""
    drop = (torch.rand(cond.shape[0], generator=gen) < share).to(cond.device)
    out = cond.clone()
    out[drop, 1] = any_index
    return out
