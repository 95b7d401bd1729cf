"""A trained class model grown wider and deeper without changing what it computes.

A model too small for its data (model v5: 5.7 M parameters asked to hold 10,608 pictures of eight art sets)
can be continued as a larger one instead of trained again from nothing. The larger model starts as the same
function: every weight the small model has is kept in place, and every new weight that would *write* into the
computation starts at zero, so the new parts read the old ones but change nothing until training moves them:

* wider residual stream (``dim``): the new dimensions start at zero everywhere (embeddings, the prefix's
  tables, attention and feed-forward outputs write nothing there); weights that *read* them start random.
  RMSNorm averages over every dimension, so each norm's old weights are scaled by ``sqrt(dim_old / dim_new)``
  (exact but for the norm's ε, which then weighs as ε·dim_new/dim_old: 1.5e-5 for 1e-5 from 256 to 384, against
  a trained stream's mean square of order 1);
* more heads (the head size stays, so the rotary table and the attention's scale stay): new query, key and
  value rows start random, the output projection's columns that read the new heads start at zero;
* wider feed-forward: new hidden units read at random and are written out through zero columns;
* more layers: new blocks whose two output projections are zero (a block then adds nothing), spread evenly
  between the old ones.

Gradients reach every new weight from the first step (a zero writer's gradient comes through its random
reader). ``grown_state`` is the one mechanism; ``train ar --init-from`` uses it when the weights it is given
are smaller than the run's ``--dim``/``--layers``/``--heads``.
"""

from __future__ import annotations

import math

import torch

from ..engine.model import Transformer
from ..engine.model_args import ModelArgs
from .errors import TrainingError


def head_dim(cfg: ModelArgs) -> int:
    return cfg.dim // cfg.n_head


def check_growable(small: ModelArgs, big: ModelArgs) -> None:
    """The growth this module can make function-preservingly, else one line naming what differs."""
    if small.model_type != "c2i" or big.model_type != "c2i":
        raise TrainingError("train ar --init-from: only class models grow wider or deeper")
    if head_dim(small) != head_dim(big):
        raise TrainingError(f"train ar --init-from: the head size must stay {head_dim(small)} "
                            f"(dim {small.dim} / {small.n_head} heads) to grow, got dim {big.dim} / {big.n_head} "
                            f"heads = {head_dim(big)}; give --heads {big.dim // head_dim(small)}")
    if (small.n_kv_head or small.n_head) != small.n_head or (big.n_kv_head or big.n_head) != big.n_head:
        raise TrainingError("train ar --init-from: grouped-query attention does not grow")
    for what, a, b in (("dim", small.dim, big.dim), ("layers", small.n_layer, big.n_layer)):
        if b < a:
            raise TrainingError(f"train ar --init-from: the weights have {what} {a}, the run asks {b}: a model "
                                f"only grows")
    for what in ("vocab_size", "block_size", "cls_token_num", "multiple_of", "ffn_dim_multiplier"):
        if getattr(small, what) != getattr(big, what):
            raise TrainingError(f"train ar --init-from: {what} differs ({getattr(small, what)} against "
                                f"{getattr(big, what)}); only dim, heads and layers grow")


def new_layer_slots(old: int, new: int) -> list[int | None]:
    """For each layer of the grown model, the old layer it continues (None: a new, identity block); the
    new blocks spread evenly between the old ones, never first."""
    added = new - old
    after = sorted(round((m + 1) * old / (added + 1)) for m in range(added))
    slots: list[int | None] = []
    for i in range(old):
        slots.append(i)
        slots.extend(None for a in after if a == i + 1)
    slots.extend(None for _ in range(new - len(slots)))  # (no old layers at all)
    return slots


def grown_state(small: Transformer, big_cfg: ModelArgs, generator: torch.Generator) -> dict[str, torch.Tensor]:
    """The state dict of a ``big_cfg`` model that computes what ``small`` computes (see the module's text).
    Row counts of the prefix's tables (identities, styles, tones) stay the small model's."""
    cfg = small.config
    check_growable(cfg, big_cfg)
    d, D = cfg.dim, big_cfg.dim
    std = big_cfg.initializer_range
    shrink = math.sqrt(d / D)
    src = {k: v.detach().float() for k, v in small.state_dict().items()}

    def rand(*shape):
        return torch.randn(*shape, generator=generator) * std

    def pad_cols(t: torch.Tensor, width: int, fill=None) -> torch.Tensor:
        """(R, d) → (R, width): the new columns zero (a writer) or random (a reader)."""
        out = torch.zeros(t.shape[0], width) if fill is None else fill(t.shape[0], width)
        out[:, : t.shape[1]] = t
        return out

    def norm(w: torch.Tensor) -> torch.Tensor:
        out = torch.full((D,), shrink)
        out[:d] = w * shrink
        return out

    out: dict[str, torch.Tensor] = {}
    for k, v in src.items():
        if k.startswith("cls_embedding."):  # the prefix's tables write into the stream
            if v.dim() != 2 or v.shape[-1] != d:
                raise TrainingError(f"train ar --init-from: cannot grow the prefix tensor {k} {tuple(v.shape)}")
            out[k] = pad_cols(v, D)
    out["tok_embeddings.weight"] = pad_cols(src["tok_embeddings.weight"], D)
    out["norm.weight"] = norm(src["norm.weight"])
    out["output.weight"] = pad_cols(src["output.weight"], D, rand)

    probe = Transformer(big_cfg)  # the grown shapes (FFN width) without guessing them
    hd, nh, NH = head_dim(cfg), cfg.n_head, big_cfg.n_head
    for i, old in enumerate(new_layer_slots(cfg.n_layer, big_cfg.n_layer)):
        p = f"layers.{i}."
        shapes = {k[len(p):]: t.shape for k, t in probe.state_dict().items() if k.startswith(p)}
        hidden = shapes["feed_forward.w1.weight"][0]
        if old is None:  # a block that adds nothing: random readers, zero writers
            out[p + "attention.wqkv.weight"] = rand(*shapes["attention.wqkv.weight"])
            out[p + "attention.wo.weight"] = torch.zeros(D, D)
            out[p + "feed_forward.w1.weight"] = rand(hidden, D)
            out[p + "feed_forward.w3.weight"] = rand(hidden, D)
            out[p + "feed_forward.w2.weight"] = torch.zeros(D, hidden)
            out[p + "attention_norm.weight"] = torch.full((D,), shrink)
            out[p + "ffn_norm.weight"] = torch.full((D,), shrink)
            continue
        q = f"layers.{old}."
        wqkv = src[q + "attention.wqkv.weight"]  # rows: queries of every head, then keys, then values
        grown = rand(3 * NH * hd, D)
        for part in range(3):
            grown[part * NH * hd: part * NH * hd + nh * hd, :d] = wqkv[part * nh * hd: (part + 1) * nh * hd]
        out[p + "attention.wqkv.weight"] = grown
        wo = torch.zeros(D, D)  # reads the heads' outputs (old heads first), writes the stream
        wo[:d, : nh * hd] = src[q + "attention.wo.weight"]
        out[p + "attention.wo.weight"] = wo
        for name in ("w1", "w3"):
            w = src[q + f"feed_forward.{name}.weight"]
            g = rand(hidden, D)
            g[: w.shape[0], :d] = w
            out[p + f"feed_forward.{name}.weight"] = g
        w2 = torch.zeros(D, hidden)
        old_w2 = src[q + "feed_forward.w2.weight"]
        w2[:d, : old_w2.shape[1]] = old_w2
        out[p + "feed_forward.w2.weight"] = w2
        out[p + "attention_norm.weight"] = norm(src[q + "attention_norm.weight"])
        out[p + "ffn_norm.weight"] = norm(src[q + "ffn_norm.weight"])
    missing = set(probe.state_dict()) - set(out) - {k for k in probe.state_dict() if k.startswith("cls_embedding.")}
    if missing:  # a tensor this module does not know how to grow
        raise TrainingError(f"train ar --init-from: cannot grow {sorted(missing)[0]}")
    return out


def needs_growth(small: ModelArgs, big: ModelArgs) -> bool:
    """Whether weights of ``small`` must grow to fit a ``big`` model (any of dim, heads, layers differ)."""
    return (small.dim, small.n_head, small.n_layer) != (big.dim, big.n_head, big.n_layer)
