"""LlamaGen's condition prefixes: a class label's vector, or caption token embeddings projected.

(The bundled model's factorised (identity, style, tone) class is :mod:`.class_embedding`.)
"""

from __future__ import annotations

import torch
import torch.nn as nn

from .class_embedding import FactorisedClassEmbedder


class LabelEmbedder(nn.Module):
    """Class id -> one prefix vector; row ``num_classes`` is the null class for CFG."""

    def __init__(self, num_classes: int, dim: int, dropout_prob: float):
        super().__init__()
        self.embedding_table = nn.Embedding(num_classes + int(dropout_prob > 0), dim)
        self.num_classes = num_classes
        self.dropout_prob = dropout_prob

    def null_condition(self, cond: torch.Tensor) -> torch.Tensor:
        return torch.full_like(cond, self.num_classes)

    def forward(self, labels: torch.Tensor, train: bool = False) -> torch.Tensor:
        if train and self.dropout_prob > 0:
            drop = torch.rand(labels.shape[0], device=labels.device) < self.dropout_prob
            labels = torch.where(drop, self.num_classes, labels)
        return self.embedding_table(labels).unsqueeze(1)


class CaptionMLP(nn.Module):
    def __init__(self, in_features: int, hidden: int, out_features: int):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden, bias=False)
        self.act = nn.GELU(approximate="tanh")
        self.fc2 = nn.Linear(hidden, out_features, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))


class CaptionEmbedder(nn.Module):
    """Caption token embeddings -> prefix vectors, with a learned unconditional caption."""

    def __init__(self, caption_dim: int, dim: int, uncond_prob: float, token_num: int):
        super().__init__()
        self.cap_proj = CaptionMLP(caption_dim, dim, dim)
        # A (persistent) buffer, as in the official checkpoints.
        self.register_buffer("uncond_embedding", torch.randn(token_num, caption_dim) / caption_dim**0.5)
        self.uncond_prob = uncond_prob

    def null_condition(self, cond: torch.Tensor) -> torch.Tensor:
        return self.uncond_embedding[: cond.shape[1]].to(cond.dtype).expand_as(cond)

    def forward(self, caption: torch.Tensor, train: bool = False) -> torch.Tensor:
        if train and self.uncond_prob > 0:
            drop = torch.rand(caption.shape[0], device=caption.device) < self.uncond_prob
            caption = torch.where(drop[:, None, None], self.null_condition(caption), caption)
        return self.cap_proj(caption)


def prefix_embedder(args) -> nn.Module:
    """The condition embedding a model's ``ModelArgs`` ask for: factorised class, class label or caption."""
    if args.model_type == "c2i" and args.num_styles > 0:
        if args.cls_token_num != 1:
            raise ValueError(f"a factorised class model has one prefix token, got cls_token_num {args.cls_token_num}")
        return FactorisedClassEmbedder(args.num_classes, args.num_styles, args.num_tones, args.dim,
                                       args.class_dropout_prob)
    if args.model_type == "c2i":
        return LabelEmbedder(args.num_classes, args.dim, args.class_dropout_prob)
    if args.model_type == "t2i":
        return CaptionEmbedder(args.caption_dim, args.dim, args.class_dropout_prob, args.cls_token_num)
    raise ValueError(f"model_type must be 'c2i' or 't2i', got {args.model_type!r}")
