"""The factorised class prefix: (identity, style, tone) → one prefix vector.

LlamaGen's class-conditional GPT reads one learned vector per class as its
prefix token (``model.LabelEmbedder``). The bundled emoji model's class is an
emoji *identity* drawn in one of a few art *styles*, with an optional skin
*tone*; a table of identity × style × tone rows would teach each row from
one or two images. Here the prefix is the sum of three vectors, so an
identity's renderings in every style and tone all teach its one identity
vector, and a style vector is learned from every identity drawn in it::

    prefix = identity_table[i] + style_table[s] + tone_table[t]

Tone row 0 is "no tone" (the default yellow, or an emoji without variants).
The condition tensor is (B, 3) long ``[identity, style, tone]``; an identity
of -1 is the unconditional (null) class for classifier-free guidance, a
learned vector of its own (``null_embedding``) rather than a table row, so
identity rows can be appended to a trained model (:meth:`grow`) without
moving any existing class's index or vector.
"""

from __future__ import annotations

import torch
import torch.nn as nn

#: The identity index that asks for the unconditional prefix (CFG's second half).
NULL_IDENTITY = -1


class FactorisedClassEmbedder(nn.Module):
    def __init__(self, num_identities: int, num_styles: int, num_tones: int, dim: int, dropout_prob: float):
        super().__init__()
        if num_identities < 1 or num_styles < 1 or num_tones < 0:
            raise ValueError(f"need ≥ 1 identity and style and ≥ 0 tones, got {num_identities}, {num_styles}, "
                             f"{num_tones}")
        self.identity_table = nn.Embedding(num_identities, dim)
        self.style_table = nn.Embedding(num_styles, dim)
        self.tone_table = nn.Embedding(num_tones + 1, dim)  # row 0: no tone
        self.null_embedding = nn.Parameter(torch.zeros(1, dim))
        self.dropout_prob = dropout_prob

    @property
    def num_identities(self) -> int:
        return self.identity_table.num_embeddings

    @property
    def num_styles(self) -> int:
        return self.style_table.num_embeddings

    @property
    def num_tones(self) -> int:
        return self.tone_table.num_embeddings - 1

    def null_condition(self, cond: torch.Tensor) -> torch.Tensor:
        null = cond.clone()
        null[:, 0] = NULL_IDENTITY
        return null

    def check(self, cond: torch.Tensor) -> None:
        """ValueError naming the factor when ``cond`` is not (B, 3) integer indices in range."""
        if cond.ndim != 2 or cond.shape[1] != 3 or cond.is_floating_point():
            raise ValueError(f"class condition must be (B, 3) integer [identity, style, tone], got "
                             f"{tuple(cond.shape)} {cond.dtype}")
        for col, name, hi, lo in ((0, "identity", self.num_identities, NULL_IDENTITY),
                                  (1, "style", self.num_styles, 0), (2, "tone", self.num_tones + 1, 0)):
            v = cond[:, col]
            if bool((v < lo).any()) or bool((v >= hi).any()):
                raise ValueError(f"class condition: {name} index out of range [{lo}, {hi - 1}]: {v.tolist()}")

    def forward(self, cond: torch.Tensor, train: bool = False) -> torch.Tensor:
        """(B, 3) → (B, 1, dim)."""
        ident, style, tone = cond[:, 0], cond[:, 1], cond[:, 2]
        null = ident < 0
        if train and self.dropout_prob > 0:
            null = null | (torch.rand(cond.shape[0], device=cond.device) < self.dropout_prob)
        emb = self.identity_table(ident.clamp(min=0)) + self.style_table(style) + self.tone_table(tone)
        emb = torch.where(null[:, None], self.null_embedding.to(emb.dtype), emb)
        return emb.unsqueeze(1)

    @torch.no_grad()
    def grow(self, new_identities: int, init_std: float = 0.02, generator: torch.Generator | None = None) -> None:
        """Append ``new_identities`` rows to the identity table (new classes for a trained model);
        every existing row, style, tone and the null vector keep their values bit for bit."""
        if new_identities <= 0:
            return
        old = self.identity_table.weight
        extra = torch.randn(new_identities, old.shape[1], generator=generator, dtype=torch.float32) * init_std
        table = nn.Embedding(old.shape[0] + new_identities, old.shape[1], device=old.device, dtype=old.dtype)
        table.weight.copy_(torch.cat([old, extra.to(old.device, old.dtype)]))
        self.identity_table = table
