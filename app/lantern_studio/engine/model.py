"""LlamaGen-compatible autoregressive image transformer.

Parameter names and shapes match the official LlamaGen ``gpt.py`` so an official
checkpoint's ``{"model": state_dict}`` loads with strict key checking. The
inference path is our own, in gpt-fast's manner: static KV caches allocated
once and reused (``allocate_caches``), written at tensor positions, a forward over
any number of new tokens at given positions (prefill, one token, or a whole
draft to verify) and an O(1) rollback, which is all speculative decoding needs
from a target model.

Positions: the sequence is ``cls_token_num`` prefix slots (class embedding or
caption tokens) followed by the image tokens in raster order. Image token ``i``
sits at sequence position ``P + i`` where ``P = cls_token_num``. The rotary
table has cos = sin = 0 at prefix positions, as the official one does, so
queries and keys of the prefix are zero vectors there.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

from .class_embedding import FactorisedClassEmbedder


def find_multiple(n: int, k: int) -> int:
    return n if n % k == 0 else n + k - (n % k)


@dataclass
class ModelArgs:
    """Configuration with the official LlamaGen field names."""

    dim: int = 4096
    n_layer: int = 32
    n_head: int = 32
    n_kv_head: Optional[int] = None
    multiple_of: int = 256
    ffn_dim_multiplier: Optional[float] = None
    rope_base: float = 10000
    norm_eps: float = 1e-5
    initializer_range: float = 0.02
    token_dropout_p: float = 0.1
    attn_dropout_p: float = 0.0
    resid_dropout_p: float = 0.1
    ffn_dropout_p: float = 0.1
    drop_path_rate: float = 0.0
    num_classes: int = 1000
    # Not in LlamaGen: > 0 makes a c2i model's class factorised (class_embedding.py): num_classes
    # identities + num_styles art styles + num_tones skin tones, each a vector of its own, summed
    num_styles: int = 0
    num_tones: int = 0
    caption_dim: int = 2048
    class_dropout_prob: float = 0.1
    model_type: str = "c2i"
    vocab_size: int = 16384
    cls_token_num: int = 1
    block_size: int = 256
    max_batch_size: int = 32
    max_seq_len: int = 2048

    @classmethod
    def from_dict(cls, d: dict) -> "ModelArgs":
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"unknown ModelArgs fields: {', '.join(unknown)}")
        return cls(**d)

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def grid_size(self) -> int:
        return math.isqrt(self.block_size)


# Official presets (layers, heads, width).
GPT_PRESETS = {
    "GPT-B": dict(n_layer=12, n_head=12, dim=768),
    "GPT-L": dict(n_layer=24, n_head=16, dim=1024),
    "GPT-XL": dict(n_layer=36, n_head=20, dim=1280),
    "GPT-XXL": dict(n_layer=48, n_head=24, dim=1536),
    "GPT-XXXL": dict(n_layer=48, n_head=40, dim=2560),
    "GPT-1B": dict(n_layer=22, n_head=32, dim=2048),
    "GPT-3B": dict(n_layer=24, n_head=32, dim=3200),
    "GPT-7B": dict(n_layer=32, n_head=32, dim=4096),
}


def preset_args(name: str, **overrides) -> ModelArgs:
    if name not in GPT_PRESETS:
        raise ValueError(f"unknown GPT preset {name!r}; choose from {', '.join(GPT_PRESETS)}")
    return ModelArgs(**{**GPT_PRESETS[name], **overrides})


# --------------------------------------------------------------------------- embedders


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


# --------------------------------------------------------------------------- blocks


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # The ops F.rms_norm runs on a CPU, spelled out: the same numbers, bit for bit, at about half
        # its cost per call (a decode step makes 2 per layer + 1); in fp32 without autograd, in place
        # in the tensors made here.
        if x.dtype == torch.float32:
            if torch.is_grad_enabled():
                return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight
            return (x * x.pow(2).mean(-1, keepdim=True).add_(self.eps).rsqrt_()).mul_(self.weight)
        xf = x.float()
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
        self.register_module("w13", None)  # [w1; w3] as one Linear once fuse() ran (w1, w3 are then None)
        self.ffn_dropout = nn.Dropout(args.ffn_dropout_p)
        self._register_state_dict_hook(_unfuse_state_dict)
        self._register_load_state_dict_pre_hook(_fuse_state_dict, with_module=True)

    @property
    def fused(self) -> bool:
        return self.w13 is not None

    def fuse(self) -> "FeedForward":
        """Hold w1 and w3 as one Linear ``w13`` (rows [w1; w3]): one matrix product instead of two
        per call, the same numbers bit for bit (each output is the same dot product). The state
        dict keeps the official ``w1`` / ``w3`` keys both ways: ``state_dict()`` writes them (copies
        of w13's halves) and ``load_state_dict`` takes them, so files and training code see no
        difference. For inference (``ImagePipeline`` fuses its networks); a model being trained
        keeps its two parameters, so optimizer states stay as they were saved."""
        if self.w13 is None:
            w = torch.cat([self.w1.weight.detach(), self.w3.weight.detach()])
            self.w13 = nn.Linear(w.shape[1], w.shape[0], bias=False, device=w.device, dtype=w.dtype)
            self.w13.weight = nn.Parameter(w, requires_grad=self.w1.weight.requires_grad)
            self.w1 = self.w3 = None
        return self

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.w13 is not None:
            gate, up = F.linear(x, self.w13.weight).chunk(2, dim=-1)
        else:
            gate, up = F.linear(x, self.w1.weight), F.linear(x, self.w3.weight)
        if torch.is_grad_enabled():
            out = F.linear(F.silu(gate) * up, self.w2.weight)
        else:  # in place in the product's own tensor: the same numbers
            out = F.linear(F.silu(gate, inplace=True).mul_(up), self.w2.weight)
        return self.ffn_dropout(out) if self.training else out


def _unfuse_state_dict(module: FeedForward, state_dict, prefix, local_metadata) -> None:
    """A fused FeedForward's state dict under the official names: w13 → w1, w3."""
    w = state_dict.pop(prefix + "w13.weight", None)
    if w is not None:
        h = w.shape[0] // 2
        # copies, unless the caller asked for the live parameters (keep_vars): two halves of one storage
        # would be written whole twice by torch.save, and safetensors refuses tensors that share memory
        live = isinstance(w, nn.Parameter)
        state_dict[prefix + "w1.weight"] = w[:h] if live else w[:h].clone()
        state_dict[prefix + "w3.weight"] = w[h:] if live else w[h:].clone()


def _fuse_state_dict(module: FeedForward, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                     error_msgs) -> None:
    """w1, w3 in a state dict loading into a fused FeedForward → its w13 (load-time fusion)."""
    k1, k3 = prefix + "w1.weight", prefix + "w3.weight"
    if module.w13 is not None and k1 in state_dict and k3 in state_dict:
        w1, w3 = state_dict[k1], state_dict[k3]
        if w1.shape == w3.shape:
            del state_dict[k1], state_dict[k3]
            state_dict[prefix + "w13.weight"] = torch.cat([w1, w3])


def fuse_feed_forwards(module: nn.Module) -> nn.Module:
    """``FeedForward.fuse`` every feed-forward in ``module`` (a GPT, a drafter head); idempotent."""
    for sub in module.modules():
        if isinstance(sub, FeedForward):
            sub.fuse()
    return module


def rope_table(grid_size: int, head_dim: int, base: float, prefix_len: int) -> torch.Tensor:
    """2D rotary table of shape (prefix_len + grid_size**2, head_dim // 2, 2) holding (cos, sin).

    The first half of each head's rotary pairs encodes the row, the second half
    the column; prefix positions get cos = sin = 0 (the official convention).
    """
    half = head_dim // 2
    inv = 1.0 / (base ** (torch.arange(0, half, 2)[: half // 2].float() / half))
    ang = torch.outer(torch.arange(grid_size).float(), inv)  # (g, half/2)
    rows = ang[:, None, :].expand(-1, grid_size, -1)
    cols = ang[None, :, :].expand(grid_size, -1, -1)
    grid = torch.cat([rows, cols], dim=-1).reshape(grid_size * grid_size, -1)  # (g*g, half)
    table = torch.stack([grid.cos(), grid.sin()], dim=-1)
    return torch.cat([torch.zeros(prefix_len, head_dim // 2, 2), table])


def rope_complex(rope: torch.Tensor) -> torch.Tensor:
    """A rotary table slice (S, D/2, 2) as the complex factors (1, S, 1, D/2) ``apply_rope``
    multiplies by: made once per forward instead of once per layer."""
    return torch.view_as_complex(rope)[None, :, None, :]


def apply_rope(x: torch.Tensor, rope: torch.Tensor) -> torch.Tensor:
    """x: (B, S, H, D); rope: ``rope_complex`` of a table slice, or the slice (S, D/2, 2) (cos, sin)
    itself -> x with each interleaved pair (x[2i], x[2i+1]) rotated. A complex table is one complex
    multiplication (eager's fastest); a real one the same rotation in real arithmetic, which
    ``torch.compile`` generates code for (it has none for complex numbers)."""
    xf = x if x.dtype == torch.float32 else x.float()
    if rope.is_complex():
        out = torch.view_as_real(torch.view_as_complex(xf.unflatten(-1, (-1, 2))) * rope).flatten(-2)
    else:
        pairs = xf.unflatten(-1, (-1, 2))
        x0, x1 = pairs[..., 0], pairs[..., 1]
        cos, sin = rope[None, :, None, :, 0], rope[None, :, None, :, 1]
        out = torch.stack([x0 * cos - x1 * sin, x0 * sin + x1 * cos], dim=-1).flatten(-2)
    return out if out.dtype == x.dtype else out.type_as(x)


def masked_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Softmax attention spelled out (scores in fp32), for the compiled fixed-shape step: q (B, H, S, D)
    over the whole cache k, v (B, H, L, D) with a bool ``mask`` (B or 1, 1, S, L). Compiled, this is
    one fused kernel per layer; the fused CPU attention kernel costs ~6x more for a few queries."""
    scores = torch.matmul(q, k.transpose(-1, -2)).float() * (q.shape[-1] ** -0.5)
    weights = scores.masked_fill(~mask, float("-inf")).softmax(dim=-1)
    return torch.matmul(weights.to(v.dtype), v)


class KVCache(nn.Module):
    """Static key/value storage of one attention layer, indexed by absolute sequence position.

    Allocated once (``Transformer.allocate_caches``) and written in place at tensor
    positions (``update``), so shapes never change between steps — what
    ``torch.compile`` and CUDA graphs need. Attention reads the whole cache;
    the causal mask hides every entry past each query's own position, so stale
    entries (a rolled-back draft, the previous image) are never attended to and
    rolling back is free.
    """

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

    def forward(self, x, rope, mask, input_pos: "torch.Tensor | int | None" = None, kv_len: Optional[int] = None,
                static: Optional[tuple] = None):
        """x: (B, S, dim). Without a cache (training) ``mask`` covers the S×S block;
        with one, the new keys are written at ``input_pos`` (S,) (an int: the first of S
        consecutive positions) and the queries attend to the cache's first ``kv_len``
        positions (None: all of it); ``mask`` is (B or 1, 1, S, that many), bool or an
        additive float mask in the queries' dtype. ``static``: the compiled step's form
        (``Transformer.static_step``): this layer's whole (key, value) caches passed in,
        written at ``input_pos`` and attended to whole under the bool ``mask``."""
        b, s, _ = x.shape
        nh, nkv, hd = self.n_head, self.n_kv_head, self.head_dim
        # The Linears' weights are used directly (F.linear), here and in FeedForward: a module call
        # is Python work, and on a busy CPU a decode step's small costs are mostly cache misses.
        qkv = F.linear(x, self.wqkv.weight)
        # queries and keys rotated in one call (a view of their columns; the rotation is elementwise)
        qk = apply_rope(qkv[..., : (nh + nkv) * hd].unflatten(-1, (nh + nkv, hd)), rope)
        q = qk[:, :, :nh].transpose(1, 2)
        k = qk[:, :, nh:].transpose(1, 2)
        v = qkv[..., (nh + nkv) * hd :].unflatten(-1, (nkv, hd)).transpose(1, 2)
        if static is not None:
            k_cache, v_cache = static[0][:b], static[1][:b]
            k_cache.index_copy_(2, input_pos, k.to(k_cache.dtype))
            v_cache.index_copy_(2, input_pos, v.to(v_cache.dtype))
            k, v = k_cache, v_cache
        elif self.kv_cache is not None and input_pos is not None:
            k, v = self.kv_cache.update(input_pos, k, v)
            if kv_len is not None:
                k, v = k[:, :, :kv_len], v[:, :, :kv_len]
        if self.n_kv_head != self.n_head:
            rep = self.n_head // self.n_kv_head
            k = k.repeat_interleave(rep, dim=1)
            v = v.repeat_interleave(rep, dim=1)
        drop = self.attn_dropout_p if self.training else 0.0
        if static is not None:
            out = masked_attention(q, k, v, mask)
        elif mask is None:
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=drop)
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=drop)
        out = F.linear(out.transpose(1, 2).reshape(b, s, self.dim), self.wo.weight)
        return self.resid_dropout(out) if self.training else out


class TransformerBlock(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.attention = Attention(args)
        self.feed_forward = FeedForward(args)
        self.attention_norm = RMSNorm(args.dim, args.norm_eps)
        self.ffn_norm = RMSNorm(args.dim, args.norm_eps)

    def forward(self, x, rope, mask, input_pos=None, kv_len=None, static=None):
        if torch.is_grad_enabled():
            h = x + self.attention(self.attention_norm(x), rope, mask, input_pos, kv_len, static)
            return h + self.feed_forward(self.ffn_norm(h))
        # without autograd the residual sums go into the branches' own outputs (a + x is x + a, bit for bit)
        h = self.attention(self.attention_norm(x), rope, mask, input_pos, kv_len, static).add_(x)
        return self.feed_forward(self.ffn_norm(h)).add_(h)


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
        if args.model_type == "c2i" and args.num_styles > 0:
            if args.cls_token_num != 1:
                raise ValueError(f"a factorised class model has one prefix token, got cls_token_num {args.cls_token_num}")
            self.cls_embedding = FactorisedClassEmbedder(args.num_classes, args.num_styles, args.num_tones, args.dim,
                                                         args.class_dropout_prob)
        elif args.model_type == "c2i":
            self.cls_embedding = LabelEmbedder(args.num_classes, args.dim, args.class_dropout_prob)
        elif args.model_type == "t2i":
            self.cls_embedding = CaptionEmbedder(args.caption_dim, args.dim, args.class_dropout_prob, args.cls_token_num)
        else:
            raise ValueError(f"model_type must be 'c2i' or 't2i', got {args.model_type!r}")
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
        # compiled fixed-shape decode steps (engine.compiled.StepGraphs), set by ImagePipeline.compile_steps;
        # None: every step runs eagerly
        self.step_graphs = None
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

    def _full_mask(self, batch: int, caption_mask: Optional[torch.Tensor], length: int, device) -> torch.Tensor:
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
        mask = None if caption_mask is None else self._full_mask(h.shape[0], caption_mask, s, h.device)
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

    # ---------------------------------------------------------------- cached inference
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
        self.attn_mask[:batch] = self._full_mask(batch, caption_mask, self.seq_len, self.attn_mask.device)
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

    def forward_cached(self, h: torch.Tensor, input_pos: "torch.Tensor | int") -> torch.Tensor:
        """Run embedded inputs h (B, S, dim) at sequence positions ``input_pos`` through
        the cached stack; returns final (normed) hidden states (B, S, dim).

        A tensor ``input_pos`` (S,) attends over the whole cache: every shape is the
        same at every step, as ``torch.compile`` / CUDA graphs want (``static_step``). An
        int is the first of S consecutive positions, and attention then reads the cache
        only up to the last of them — what eager decoding runs (the causal mask hides the
        rest anyway, and skipping it saves ~5-10 % of a 25-token verify on a CPU).
        """
        b, s = h.shape[:2]
        if torch.is_tensor(input_pos):
            return self._forward_static(h, input_pos, self.attn_mask[:b, :, input_pos], self.cache_tensors())
        # slices (views) of the mask and the rotary table; the caches are written as slices too
        kv_len = input_pos + s
        bias = self.attn_bias
        if bias.dtype == h.dtype:
            mask = bias[:b, :, input_pos:kv_len, :kv_len]
        else:  # attention wants a float mask in the queries' dtype
            mask = self.attn_mask[:b, :, input_pos:kv_len, :kv_len]
        rope = rope_complex(self.rope[input_pos:kv_len])
        for layer in self.layers:
            h = layer(h, rope, mask, input_pos, kv_len)
        return self.norm(h)

    def cache_tensors(self) -> list:
        """Every layer's (key cache, value cache), whole: what ``static_step`` is handed."""
        return [(layer.attention.kv_cache.k_cache, layer.attention.kv_cache.v_cache) for layer in self.layers]

    def _forward_static(self, h: torch.Tensor, input_pos: torch.Tensor, mask: torch.Tensor, caches) -> torch.Tensor:
        """The fixed-shape stack: whole-cache attention under a bool ``mask`` (B, 1, S, L), the
        rotation in real arithmetic (what ``torch.compile`` generates code for)."""
        rope = self.rope[input_pos]
        for layer, cache in zip(self.layers, caches):
            h = layer(h, rope, mask, input_pos, None, cache)
        return self.norm(h)

    def static_step(self, tokens: torch.Tensor, input_pos: torch.Tensor, mask: torch.Tensor):
        """The decode forward at fixed shapes, what ``engine.compiled.StepGraphs`` compiles: image
        tokens (B, S) at sequence positions ``input_pos`` (S,), attending under ``mask`` (B, 1, S, L)
        (rows of ``attn_mask``, passed in: a graph never holds a sequence's mask as a constant; it
        may hold the weights, and it is bound to these KV caches) → (logits (B, S, V) fp32,
        features (B, S, dim))."""
        feats = self._forward_static(self.tok_embeddings(tokens), input_pos, mask, self.cache_tensors())
        return self.output(feats).float(), feats

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
        graphs = self.step_graphs
        if graphs is not None:
            out = graphs.run(self, tokens, first_index)
            if out is not None:
                return out
        feats = self.forward_cached(self.tok_embeddings(tokens), self.cls_token_num + first_index)
        return self.output(feats).float(), feats
