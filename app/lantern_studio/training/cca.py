"""Condition Contrastive Alignment: fine-tune a class model so it draws without guidance.

Classifier-free guidance runs every position twice (the class and its null class), which doubles every
row a decode and a speculative verify run. CCA (Chen et al., arXiv 2410.09347) fine-tunes the model so
that its plain conditional distribution already is the guided one: against a frozen copy of itself (the
reference), it raises the likelihood of each training image under its own class and lowers it under
another class from the same batch. With ``g(x, c) = log p(x|c) − log p_ref(x|c)`` summed over the
image's tokens, the loss of one batch is

    − mean log σ(β g(x, c))  −  λ · mean log σ(−β g(x, c⁻))

divided by λ, where c⁻ is the batch's identities rolled by one. A share of rows (``uncond_ratio``) has its
class replaced by the null class on both sides and counts as a positive (weight 1), so the null class
keeps its meaning and guidance stays available as a setting. Only the identity is contrasted: style and
tone stay, as the null class keeps them (``class_embedding.null_condition``).

``lantern-studio train ar --objective cca --init-from GPT …``: the rest of the AR run (data, resume,
validation, export) is unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..engine.model import Transformer

#: the paper's β for LlamaGen and VAR; λ is the model's own (300–1000 for LlamaGen)
BETA = 0.02
LAMBDA = 300.0
UNCOND_RATIO = 0.1


@dataclass(frozen=True)
class ContrastPairs:
    """One batch's conditions: each image's own (``positive``) and another's (``negative``)."""

    positive: torch.Tensor  # (B, 3) [identity, style, tone]
    negative: torch.Tensor  # (B, 3)
    #: rows whose negative is no negative (null class, or the roll landed on the same identity)
    same: torch.Tensor  # (B,) bool


def contrast_pairs(model: Transformer, cond: torch.Tensor, gen: torch.Generator,
                   uncond_ratio: float = UNCOND_RATIO) -> ContrastPairs:
    """Negatives by rolling the batch's identities by one row (a random permutation biases small
    batches); ``uncond_ratio`` of the rows get the null class on both sides."""
    positive = cond.clone()
    negative = cond.clone()
    negative[:, 0] = torch.roll(cond[:, 0], shifts=-1)
    null = torch.rand(len(cond), generator=gen) < uncond_ratio
    null = null.to(cond.device)
    if null.any():
        positive[null] = model.null_condition(cond[null])
        negative[null] = positive[null]
    same = null | (negative[:, 0] == positive[:, 0])
    return ContrastPairs(positive, negative, same)


def sequence_logp(model: Transformer, tok: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
    """log p(image | class) summed over the image's tokens, (B,). The condition is taken as given
    (no class dropout: the caller chose which rows are null)."""
    feats = model.features(tok[:, :-1], cond, None, train=False)[:, model.cls_token_num - 1 :]
    logp = F.log_softmax(model.output(feats).float(), dim=-1)
    return logp.gather(2, tok[:, :, None]).squeeze(2).sum(1)


def cca_loss(gap_pos: torch.Tensor, gap_neg: torch.Tensor, same: torch.Tensor, beta: float = BETA,
             lam: float = LAMBDA) -> torch.Tensor:
    """The CCA loss from the log-likelihood gaps to the reference, (B,) each. Rows in ``same`` push
    their "negative" up like a positive, with weight 1 instead of λ."""
    sign = torch.where(same, 1.0, -1.0)
    weight = torch.where(same, 1.0, lam)
    loss = -F.logsigmoid(beta * gap_pos).mean() - (weight * F.logsigmoid(sign * beta * gap_neg)).mean()
    return loss / max(lam, 1.0)


def cca_step_loss(model: Transformer, reference: Transformer, tok: torch.Tensor, pairs: ContrastPairs,
                  beta: float = BETA, lam: float = LAMBDA) -> tuple[torch.Tensor, dict[str, float]]:
    """One batch's loss (positives and negatives in one forward of 2B rows) and what it shows:
    how often the image is likelier under its own class than under the other (``cca_acc``) and the
    mean margin between the two gaps."""
    both_tok = torch.cat([tok, tok])
    both_cond = torch.cat([pairs.positive, pairs.negative])
    with torch.no_grad():
        ref = sequence_logp(reference, both_tok, both_cond)
    gaps = sequence_logp(model, both_tok, both_cond) - ref
    gap_pos, gap_neg = gaps.chunk(2)
    loss = cca_loss(gap_pos, gap_neg, pairs.same, beta, lam)
    real = ~pairs.same
    margin = (gap_pos - gap_neg).detach()[real]
    stats = {"cca_acc": float((margin > 0).float().mean()) if real.any() else float("nan"),
             "cca_margin": float(margin.mean()) if real.any() else float("nan")}
    return loss, stats


class Contrast:
    """The CCA objective of an AR trainer: the frozen reference and the loss's settings."""

    def __init__(self, reference: Transformer, gen: torch.Generator, beta: float = BETA, lam: float = LAMBDA,
                 uncond_ratio: float = UNCOND_RATIO):
        if not reference.factorised:
            raise ValueError("CCA fine-tunes a class model (--condition class)")
        self.reference = reference.eval().requires_grad_(False)
        self.gen, self.beta, self.lam, self.uncond_ratio = gen, beta, lam, uncond_ratio

    def __call__(self, model: Transformer, tok: torch.Tensor, cond: torch.Tensor):
        pairs = contrast_pairs(model, cond, self.gen, self.uncond_ratio)
        return cca_step_loss(model, self.reference, tok, pairs, self.beta, self.lam)
