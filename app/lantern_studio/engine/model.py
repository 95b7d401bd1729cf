"""LlamaGen-compatible autoregressive image transformer: the readable reference.

Parameter names and shapes match the official LlamaGen ``gpt.py`` so an official
checkpoint's ``{"model": state_dict}`` loads with strict key checking. Two forwards:
the teacher-forced training forward (``forward``) and one cached forward in gpt-fast's
manner — static KV caches allocated once (``allocate_caches``), written at positions,
a forward over any number of new tokens (prefill, one token, or a whole draft to
verify) and an O(1) rollback, which is all speculative decoding needs of a target.
The inference fast path (fused feed-forwards, a fixed-shape step, compiled graphs)
is :mod:`.runner`, tested token for token against this one; it keeps its KV caches
itself and sets nothing here, so the caches below serve only this reference forward.

Positions: the sequence is ``cls_token_num`` prefix slots (class embedding or
caption tokens) followed by the image tokens in raster order. Image token ``i``
sits at sequence position ``P + i`` where ``P = cls_token_num``. The rotary
table has cos = sin = 0 at prefix positions, as the official one does, so
queries and keys of the prefix are zero vectors there.
"""

from __future__ import annotations

import math
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

from .class_embedding import FactorisedClassEmbedder
from .model_args import GPT_PRESETS, ModelArgs, find_multiple, preset_args
from .prefix_embedders import prefix_embedder
from .rope import apply_rope, rope_complex, rope_table

__all__ = ["GPT_PRESETS", "KVCache", "ModelArgs", "Transformer", "TransformerBlock", "apply_rope", "preset_args",
           "rope_complex", "rope_table"]


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()  # statistics in fp32 whatever the weights' precision
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


class FeedForward(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        hidden = int(2 * 4 * args.dim / 3)
        if args.ffn_dim_multiplier is not None:
            hidden = int(args.ffn_dim_multiplier * hidden)
        hidden = find_multiple(hidden, args.multiple_of)
        self.w1 = nn.Linear(args.dim, hidden, bias=False)
        self.w3 = nn.Linear(args.dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, args.dim, bias=False)
        self.ffn_dropout = nn.Dropout(args.ffn_dropout_p)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ffn_dropout(self.w2(F.silu(self.w1(x)) * self.w3(x)))


class KVCache(nn.Module):
    """Static key/value storage of one attention layer, indexed by absolute sequence position:
    allocated once (``Transformer.allocate_caches``), written in place, so shapes never change
    between steps. The causal mask hides every entry past each query's own position, so stale
    entries (a rolled-back draft, the previous image) are never attended to: rolling back is free."""

    def __init__(self, max_batch_size: int, max_seq_len: int, n_kv_head: int, head_dim: int, dtype, device=None):
        super().__init__()
        shape = (max_batch_size, n_kv_head, max_seq_len, head_dim)
        self.register_buffer("k_cache", torch.zeros(shape, dtype=dtype, device=device), persistent=False)
        self.register_buffer("v_cache", torch.zeros(shape, dtype=dtype, device=device), persistent=False)

    def fits(self, max_batch_size: int, max_seq_len: int, dtype, device) -> bool:
        b, _, length, _ = self.k_cache.shape
        want, have = torch.device(device), self.k_cache.device
        same_device = want.type == have.type and (want.index is None or want.index == have.index)
        return b >= max_batch_size and length == max_seq_len and self.k_cache.dtype == dtype and same_device

    def reset(self) -> None:
        """Zero both caches in place: a new sequence never sees the last one's numbers, not even
        masked (a masked non-finite value would still poison attention's sums)."""
        self.k_cache.zero_()
        self.v_cache.zero_()

    def update(self, input_pos: "torch.Tensor | int", k: torch.Tensor, v: torch.Tensor):
        """Write k, v (B, H, S, D) at positions ``input_pos`` (S,) of the first B rows (an int:
        the first of S consecutive positions, written as a slice); → this layer's whole
        (B, H, max_seq_len, D) keys and values."""
        b = k.shape[0]
        k_out, v_out = self.k_cache[:b], self.v_cache[:b]
        if torch.is_tensor(input_pos):
            k_out.index_copy_(2, input_pos, k.to(k_out.dtype))
            v_out.index_copy_(2, input_pos, v.to(v_out.dtype))
        else:
            end = input_pos + k.shape[2]
            k_out[:, :, input_pos:end].copy_(k)
            v_out[:, :, input_pos:end].copy_(v)
        return k_out, v_out


class Attention(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        if args.dim % args.n_head:
            raise ValueError("dim must be divisible by n_head")
        self.dim = args.dim
        self.n_head = args.n_head
        self.n_kv_head = args.n_kv_head or args.n_head
        self.head_dim = args.dim // args.n_head
        self.wqkv = nn.Linear(args.dim, (self.n_head + 2 * self.n_kv_head) * self.head_dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout_p = args.attn_dropout_p
        self.resid_dropout = nn.Dropout(args.resid_dropout_p)
        self.kv_cache: Optional[KVCache] = None

    def forward(self, x, rope, mask, input_pos: "torch.Tensor | int | None" = None, kv_len: Optional[int] = None):
        """x: (B, S, dim). Without a cache (training) ``mask`` covers the S×S block (None: causal);
        with one, the new keys are written at ``input_pos`` (see ``KVCache.update``) and the queries
        attend to the cache's first ``kv_len`` positions (None: all of it) under ``mask``."""
        b, s, _ = x.shape
        nh, nkv, hd = self.n_head, self.n_kv_head, self.head_dim
        qkv = self.wqkv(x)
        # queries and keys rotated in one call (a view of their columns; the rotation is elementwise)
        qk = apply_rope(qkv[..., : (nh + nkv) * hd].unflatten(-1, (nh + nkv, hd)), rope)
        q, k = qk[:, :, :nh].transpose(1, 2), qk[:, :, nh:].transpose(1, 2)
        v = qkv[..., (nh + nkv) * hd :].unflatten(-1, (nkv, hd)).transpose(1, 2)
        if self.kv_cache is not None and input_pos is not None:
            k, v = self.kv_cache.update(input_pos, k, v)
            if kv_len is not None:
                k, v = k[:, :, :kv_len], v[:, :, :kv_len]
        if nkv != nh:
            k, v = k.repeat_interleave(nh // nkv, dim=1), v.repeat_interleave(nh // nkv, dim=1)
        drop = self.attn_dropout_p if self.training else 0.0
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=mask is None, dropout_p=drop)
        return self.resid_dropout(self.wo(out.transpose(1, 2).reshape(b, s, self.dim)))


class TransformerBlock(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.attention = Attention(args)
        self.feed_forward = FeedForward(args)
        self.attention_norm = RMSNorm(args.dim, args.norm_eps)
        self.ffn_norm = RMSNorm(args.dim, args.norm_eps)

    def forward(self, x, rope, mask, input_pos=None, kv_len=None):
        h = x + self.attention(self.attention_norm(x), rope, mask, input_pos, kv_len)
        return h + self.feed_forward(self.ffn_norm(h))


# --------------------------------------------------------------------------- the model


class Transformer(nn.Module):
    """The LlamaGen GPT. ``forward`` is the teacher-forced training forward."""

    fp32_buffers = ("rope",)  # kept fp32 whatever the weights' precision (precision.cast_transformer)

    def __init__(self, args: ModelArgs):
        super().__init__()
        if math.isqrt(args.block_size) ** 2 != args.block_size:
            raise ValueError(f"block_size must be a square number of tokens, got {args.block_size}")
        self.config = args
        self.vocab_size = args.vocab_size
        self.cls_token_num = args.cls_token_num
        self.block_size = args.block_size
        self.model_type = args.model_type
        self.cls_embedding = prefix_embedder(args)
        self.tok_embeddings = nn.Embedding(args.vocab_size, args.dim)
        self.tok_dropout = nn.Dropout(args.token_dropout_p)
        self.layers = nn.ModuleList(TransformerBlock(args) for _ in range(args.n_layer))
        self.norm = RMSNorm(args.dim, args.norm_eps)
        self.output = nn.Linear(args.dim, args.vocab_size, bias=False)
        head_dim = args.dim // args.n_head
        self.register_buffer(
            "rope", rope_table(args.grid_size, head_dim, args.rope_base, args.cls_token_num), persistent=False
        )
        # (max batch, 1, L, L) bool: which keys each query may attend to; allocated by allocate_caches,
        # filled for each sequence by start_sequence (causal, caption padding masked out)
        self.register_buffer("attn_mask", None, persistent=False)
        # The same mask as an additive one (0 / -inf) in the caches' dtype: what attention would
        # otherwise convert the bool mask into at every layer of every step
        self.register_buffer("attn_bias", None, persistent=False)
        self.cache_batch = 0
        self.reset_parameters()

    # ---------------------------------------------------------------- init / misc
    def reset_parameters(self):
        std = self.config.initializer_range
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, 0.0, std)
        nn.init.zeros_(self.output.weight)

    @property
    def factorised(self) -> bool:
        """Whether the class is (identity, style, tone) (class_embedding.py) rather than one id."""
        return isinstance(self.cls_embedding, FactorisedClassEmbedder)

    def grow_identities(self, new: int, generator: Optional[torch.Generator] = None) -> None:
        """Append ``new`` identity rows to a factorised class model; old classes keep their outputs."""
        if not self.factorised:
            raise ValueError("only a factorised class model grows identity rows")
        self.cls_embedding.grow(new, self.config.initializer_range, generator)
        self.config.num_classes = self.cls_embedding.num_identities

    @property
    def seq_len(self) -> int:
        return self.cls_token_num + self.block_size

    def null_condition(self, cond: torch.Tensor) -> torch.Tensor:
        return self.cls_embedding.null_condition(cond)

    def embed_condition(self, cond: torch.Tensor, train: bool = False) -> torch.Tensor:
        return self.cls_embedding(cond, train=train)[:, : self.cls_token_num]

    def _prefix_key_mask(self, batch: int, caption_mask: Optional[torch.Tensor], device) -> torch.Tensor:
        """(B, L) bool: which key positions may be attended (caption padding masked out)."""
        valid = torch.ones(batch, self.seq_len, dtype=torch.bool, device=device)
        if caption_mask is not None:
            valid[:, : self.cls_token_num] = caption_mask.to(device=device, dtype=torch.bool)[:, : self.cls_token_num]
        return valid

    def sequence_mask(self, batch: int, caption_mask: Optional[torch.Tensor], length: int, device) -> torch.Tensor:
        """(B, 1, length, length) bool: which keys each query of a sequence may attend to (causal, caption
        padding masked out)."""
        causal = torch.ones(length, length, dtype=torch.bool, device=device).tril()
        keys = self._prefix_key_mask(batch, caption_mask, device)[:, :length]
        mask = causal[None] & keys[:, None, :]
        # A fully masked row (a padded prefix query) attends to itself, as upstream does.
        mask |= torch.eye(length, dtype=torch.bool, device=device)[None]
        return mask.unsqueeze(1)

    # ---------------------------------------------------------------- training forward
    def features(self, idx: Optional[torch.Tensor], cond: torch.Tensor, caption_mask=None, train=None):
        """Teacher-forced final hidden states (after the last norm): (B, P + T, dim)."""
        train = self.training if train is None else train
        h = self.embed_condition(cond, train=train)
        if idx is not None and idx.shape[1] > 0:
            h = torch.cat([h, self.tok_embeddings(idx)], dim=1)
        h = self.tok_dropout(h)
        s = h.shape[1]
        mask = None if caption_mask is None else self.sequence_mask(h.shape[0], caption_mask, s, h.device)
        rope = rope_complex(self.rope[:s])
        for layer in self.layers:
            h = layer(h, rope, mask)
        return self.norm(h)

    def teacher_forced_logits(self, idx, cond, caption_mask=None, return_features=False):
        """idx: the first T-1 image tokens (B, T-1) -> logits (B, T, V).

        Row t predicts image token t; row 0 comes from the last prefix position,
        as the official training forward returns.
        """
        feats = self.features(idx, cond, caption_mask)[:, self.cls_token_num - 1 :]
        logits = self.output(feats).float()
        return (logits, feats) if return_features else logits

    def forward(self, idx, cond, caption_mask=None):
        return self.teacher_forced_logits(idx, cond, caption_mask)

    # ---------------------------------------------------------------- cached inference (engine/runner.py: the fast path)
    def allocate_caches(self, max_batch_size: int, max_seq_len: Optional[int] = None, dtype=None, device=None) -> None:
        """Allocate the static KV caches and the mask buffer for up to ``max_batch_size``
        rows of ``max_seq_len`` positions (default: prefix + image). Idempotent: when
        the caches already fit (as many rows or more, as long, same dtype and device),
        nothing is allocated and what they hold is left to the next ``start_sequence``."""
        p = next(self.parameters())
        dtype = dtype or p.dtype
        device = device or p.device
        length = max_seq_len or self.seq_len
        if not 1 <= length <= self.seq_len:
            raise ValueError(f"max_seq_len must be in [1, {self.seq_len}] (prefix + image), got {length}")
        caches = [layer.attention.kv_cache for layer in self.layers]
        if all(c is not None and c.fits(max_batch_size, length, dtype, device) for c in caches):
            return
        for layer in self.layers:
            a = layer.attention
            a.kv_cache = KVCache(max_batch_size, length, a.n_kv_head, a.head_dim, dtype, device)
        self.attn_mask = torch.zeros(max_batch_size, 1, length, length, dtype=torch.bool, device=device)
        self.attn_bias = torch.zeros(max_batch_size, 1, length, length, dtype=dtype, device=device)

    def start_sequence(self, batch: int, caption_mask: Optional[torch.Tensor] = None, dtype=None, device=None):
        """Start a sequence of ``batch`` rows: the caches allocated (reused when they fit, see allocate_caches)
        and zeroed, the attention mask written for this caption's padding."""
        self.allocate_caches(batch, self.seq_len, dtype, device)
        for layer in self.layers:
            layer.attention.kv_cache.reset()
        self.attn_mask[:batch] = self.sequence_mask(batch, caption_mask, self.seq_len, self.attn_mask.device)
        bias = self.attn_bias[:batch]
        bias.zero_().masked_fill_(~self.attn_mask[:batch], float("-inf"))
        self.cache_batch = batch

    def clear_cache(self):
        """Free the KV caches (the next start_sequence allocates them again)."""
        for layer in self.layers:
            layer.attention.kv_cache = None
        self.attn_mask = None
        self.attn_bias = None
        self.cache_batch = 0

    def positions(self, first: int, count: int) -> torch.Tensor:
        """Sequence positions first .. first+count-1 as a tensor on the model's device."""
        return torch.arange(first, first + count, device=self.rope.device)

    def forward_cached(self, h: torch.Tensor, first: int) -> torch.Tensor:
        """Embedded inputs h (B, S, dim) at sequence positions first … first+S-1 through the cached
        stack → final (normed) hidden states (B, S, dim); attention reads the cache only up to the
        last of them (the causal mask hides the rest anyway)."""
        b, s = h.shape[:2]
        end = first + s
        bias = self.attn_bias  # the mask as 0 / -inf in the caches' dtype; a bool one for other inputs
        mask = bias[:b, :, first:end, :end] if bias.dtype == h.dtype else self.attn_mask[:b, :, first:end, :end]
        rope = rope_complex(self.rope[first:end])
        for layer in self.layers:
            h = layer(h, rope, mask, first, end)
        return self.norm(h)

    @torch.no_grad()
    def prefill(self, cond: torch.Tensor):
        """Process the prefix. Returns (logits for image token 0 (B, V), feature (B, dim))."""
        feats = self.forward_cached(self.embed_condition(cond), 0)
        last = feats[:, -1]
        return self.output(last).float(), last

    @torch.no_grad()
    def step(self, tokens: torch.Tensor, first_index: int):
        """Feed image tokens (B, S) holding image indices first_index..first_index+S-1.

        Returns logits (B, S, V) where row j predicts image token first_index+j+1,
        and the features (B, S, dim). Entries past the new end are left stale and
        never read, so "rolling back" to an accepted length just means calling
        ``step`` again from that index.
        """
        feats = self.forward_cached(self.tok_embeddings(tokens), self.cls_token_num + first_index)
        return self.output(feats).float(), feats

    # ---------------------------------------------------------------- as a decode target (runner.DecodeTarget)
    compiled_calls = 0  # the reference never runs a compiled graph

    @property
    def model(self) -> "Transformer":
        """A bare Transformer decodes by its own reference forward (``Decoding(gpt, …)``)."""
        return self
