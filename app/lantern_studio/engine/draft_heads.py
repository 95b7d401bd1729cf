"""Medusa-style parallel draft heads: K small heads on the target's last hidden state.

Head i reads the target's final (post-norm) feature h at the last verified position
and the embedding of the token the verify just fixed there (the *pending* token,
which the next round feeds first) and proposes the token i + 1 positions after the
pending one. Conditioning on the token actually chosen (as Hydra does) costs one
embedding lookup: the target's own token embedding, shared and frozen. Each head is
a residual MLP ``h + W2·SiLU(W1·[h; e])`` followed by the target's own output head
(shared and frozen too), so an untrained head (W2 = 0) starts from the target's own
next-token distribution at h.

All K drafts come from the features the verify already computed: drafting adds no
sequential forward of anything (``Drafter.forwards`` stays 0). The heads' evaluations
are counted apart, in ``head_calls`` (one per round, all heads at once). Their cost is
reading their weights once a round (a one-row product is bound by memory): next to a
small target that is not nothing — K = 4 heads of hidden 256 are ~0.8 M parameters
beside the bundled model's ~5 M, about a fifth of a verify on a CPU — while next to a
LlamaGen-sized target it is negligible; a smaller ``hidden`` buys it back.

Each draft is sampled from its head's distribution after the same sampling transform
the target's p goes through (guidance, temperature, top-k, top-p), and that
distribution is the draft's q: exact (δ = 0) and LANTERN verification apply unchanged.
"""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn as nn

from .drafters import DecodeContext, Drafter
from .sampling import probs_from_logits, sample

KIND = "heads"  # the safetensors ``kind`` of a heads file

#: The widest hidden layer a heads file may declare, as a multiple of its target's width (trained
#: heads use about 1×: 256 beside the bundled model's 256).
HIDDEN_PER_WIDTH = 8
#: The most heads a file may declare: the longest draft window a decode asks for
#: (``GenerationSettings.draft_length`` ≤ 64); a head past it could never draft.
MAX_HEADS = 64


class HeadsConfigError(ValueError):
    """A heads configuration out of bounds; the message names the field and its allowed range."""


def _bounded_int(field: str, value, low: int, high: int, why: str = "") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise HeadsConfigError(f'draft heads "{field}" must be an integer in [{low}, {high}]{why}, got {value!r}')
    return value


def check_config(config, target_dim: int, file_values: Optional[int] = None) -> dict:
    """A heads file's (or a training checkpoint's) declared sizes, checked against the target they belong
    to before any tensor is made: ``dim`` the target's width, ``heads`` in [1, :data:`MAX_HEADS`],
    ``hidden`` in [1, :data:`HIDDEN_PER_WIDTH` × the width]; with ``file_values`` (the values the file
    holds), no more parameters than that. → {"dim", "heads", "hidden"}; else :class:`HeadsConfigError`."""
    if not isinstance(config, dict):
        raise HeadsConfigError(f"draft heads configuration must be a JSON object, got {type(config).__name__}")
    dim = config.get("dim")
    if dim != target_dim or isinstance(dim, bool) or not isinstance(dim, int):
        raise HeadsConfigError(f"draft heads of width {dim!r}, but the GPT's features are {target_dim} wide "
                               f'("dim" must be {target_dim})')
    heads = _bounded_int("heads", config.get("heads"), 1, MAX_HEADS, " (the longest draft window)")
    hidden = _bounded_int("hidden", config.get("hidden"), 1, HIDDEN_PER_WIDTH * dim,
                          f" ({HIDDEN_PER_WIDTH} × the target's width {dim})")
    want = parameter_count(dim, heads, hidden)
    if file_values is not None and want > file_values:
        raise HeadsConfigError(f"draft heads configuration (heads {heads}, hidden {hidden}) describes {want:,} "
                               f"parameters but the file holds {file_values:,} values (refused before allocating)")
    return {"dim": dim, "heads": heads, "hidden": hidden}


def parameter_count(dim: int, n_heads: int, hidden: int) -> int:
    """The parameters of :class:`DraftHeads` (dim, n_heads, hidden), computed without building it."""
    return n_heads * (2 * dim * hidden + hidden + hidden * dim + dim)


class DraftHead(nn.Module):
    """One head's residual MLP: [h; e] (2·dim) → hidden → dim, added to h."""

    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.fc1 = nn.Linear(2 * dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)
        nn.init.zeros_(self.fc2.weight)  # untrained: h itself, i.e. the target's own next-token guess
        nn.init.zeros_(self.fc2.bias)

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        return h + self.fc2(nn.functional.silu(self.fc1(x)))


class DraftHeads(nn.Module):
    """K heads over (feature h, pending token's embedding e) → K features for the target's output head."""

    def __init__(self, dim: int, n_heads: int, hidden: int):
        super().__init__()
        if n_heads < 1 or hidden < 1 or dim < 1:
            raise ValueError(f"draft heads: dim, heads and hidden must be ≥ 1, got {dim}, {n_heads}, {hidden}")
        self.dim, self.n_heads, self.hidden = int(dim), int(n_heads), int(hidden)
        self.heads = nn.ModuleList(DraftHead(dim, hidden) for _ in range(n_heads))

    @property
    def config(self) -> dict:
        """What a heads file's metadata records (and :meth:`from_config` reads)."""
        return {"dim": self.dim, "heads": self.n_heads, "hidden": self.hidden}

    @classmethod
    def from_config(cls, config: dict) -> "DraftHeads":
        return cls(int(config["dim"]), int(config["heads"]), int(config["hidden"]))

    def forward(self, h: torch.Tensor, e: torch.Tensor, n: Optional[int] = None) -> torch.Tensor:
        """h, e (..., dim) → (..., n, dim): the first ``n`` heads' features (default all K)."""
        x = torch.cat([h, e], dim=-1)
        heads = list(self.heads)[: self.n_heads if n is None else n]  # (slicing the ModuleList builds a new one)
        return torch.stack([head(x, h) for head in heads], dim=-2)


class HeadsDrafter(Drafter):
    """Drafts from :class:`DraftHeads`: at most K per round, all from the last verify's features.

    ``observe`` keeps the feature at the last accepted position (the one whose output
    fixed the pending token); ``propose`` runs the heads on it and the pending token, so
    their cost lands in the decode's drafter time. With guidance (``ctx.rows`` = 2) the
    heads run on the conditional and the unconditional feature and their logits are
    combined by the same transform as the target's, as the EAGLE drafter does.
    """

    name = "heads"

    def __init__(self, heads: DraftHeads):
        super().__init__()
        self.heads = heads
        self.max_draft = heads.n_heads  # a longer draft_length is clamped to K
        self.feature: Optional[torch.Tensor] = None  # (rows, dim) at the pending token's input position − 1

    def start(self, ctx: DecodeContext) -> None:
        super().start(ctx)
        self.feature = ctx.prefill_feature

    @torch.no_grad()
    def propose(self, ctx: DecodeContext, n: int):
        gpt, p = ctx.gpt, next(self.heads.parameters())
        n = min(n, self.heads.n_heads)
        pending = ctx.tokens[ctx.n_fixed - 1 : ctx.n_fixed]
        e = gpt.tok_embeddings(pending).expand(ctx.rows, -1)
        out = self.heads(self.feature.to(p.dtype), e.to(p.dtype), n)  # (rows, n, dim)
        self.head_calls += 1
        q = probs_from_logits(gpt.output(out.to(gpt.output.weight.dtype)).float(), ctx.params)[0]  # (n, V)
        deterministic = ctx.params.greedy or not self.sampled
        return sample(q, ctx.generator, deterministic), (None if deterministic else q)

    def observe(self, ctx, drafts, n_accepted, verify_probs, verify_features) -> None:
        # verify_features row j is the output at input j of [pending, drafts...]: row n_accepted fixed
        # the new pending token (the correction or the bonus).
        self.feature = verify_features[:, n_accepted].clone()  # a compiled step may reuse its output buffer
