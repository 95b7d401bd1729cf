"""The inference fast path of a :class:`~.model.Transformer`, apart from the reference model.

``model.py`` is the readable LlamaGen transformer: a training forward and one cached forward.
A :class:`Runner` decodes with the same weights faster on a CPU, on KV caches of its own (:class:`DecodeCaches`):

* each layer's feed-forward ``w1`` and ``w3`` as one matrix ``[w1; w3]`` (one product instead of
  two; each output is the same dot product, so the same numbers bit for bit), held as parameters
  (without gradients) so that a compiled graph freezes them like the model's own weights: as a plain
  tensor it was a graph input, multiplied unpacked, ~15 % of a compiled decode;
* normalisation, activations and residual sums in place, in the tensors the step makes;
* a fixed-shape step (:meth:`Runner.static_step`: attention over the whole cache under a bool mask,
  the rotation in real arithmetic) that ``torch.compile`` turns into graphs (:mod:`.compiled`);
  a step no graph covers, or a machine where compiling fails, runs the eager fast path.

The pipeline owns one runner per target and hands it to the decode loop (:class:`~.decode.Decoding`
takes any :class:`DecodeTarget`: a runner, or a bare Transformer, which decodes by its reference
forward). The runner sets nothing on the model: its caches, fused weights and graphs are its own, so
a second runner over the same weights (:meth:`Runner.twin`: the compiled path beside the eager one)
costs only its caches.
``tests/engine/test_runner.py`` checks that runner and reference give the same tokens.
"""

from __future__ import annotations

import copy
from typing import Callable, Optional, Sequence

import torch
import torch.nn.functional as F

from .compiled import StepGraphs
from .model import KVCache, Transformer, apply_rope, rope_complex
from .target import DecodeTarget


def target_for(model) -> DecodeTarget:
    """The decode target the pipeline decodes ``model`` with: the fast path (a :class:`Runner`) for the
    engine's own Transformer, or the target a foreign model brings itself (``model.decode_target()``:
    a transformers-backed one, ``models/janus.py``)."""
    make = getattr(model, "decode_target", None)
    return make() if callable(make) else Runner(model)


def rms_norm_(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """``model.RMSNorm`` in place where it can be (fp32): the same numbers, about half the cost a call."""
    if x.dtype == torch.float32:
        return (x * x.pow(2).mean(-1, keepdim=True).add_(eps).rsqrt_()).mul_(weight)
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).type_as(x) * weight


def masked_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Softmax attention spelled out (scores in fp32), for the compiled fixed-shape step: q (B, H, S, D)
    over the whole cache k, v (B, H, L, D) with a bool ``mask`` (B or 1, 1, S, L). Compiled, this is
    one fused kernel per layer; the fused CPU attention kernel costs ~6x more for a few queries."""
    scores = torch.matmul(q, k.transpose(-1, -2)).float() * (q.shape[-1] ** -0.5)
    weights = scores.masked_fill(~mask, float("-inf")).softmax(dim=-1)
    return torch.matmul(weights.to(v.dtype), v)


class DecodeCaches:
    """What one decoder writes while it decodes a sequence over a target's weights: a static
    :class:`~.model.KVCache` per layer, and the sequence's attention mask as a bool (B, 1, L, L) and as an
    additive 0 / -inf bias in the caches' dtype (what attention would otherwise make of the bool mask at
    every layer of every step). Allocated for up to ``rows`` rows of the whole sequence (prefix + image)
    and reused while they fit; never shared between two decoders."""

    def __init__(self, model: Transformer, rows: int, dtype: torch.dtype, device):
        length = model.seq_len
        a = model.layers[0].attention
        self.layers = [KVCache(rows, length, a.n_kv_head, a.head_dim, dtype, device) for _ in model.layers]
        self.mask = torch.zeros(rows, 1, length, length, dtype=torch.bool, device=device)
        self.bias = torch.zeros(rows, 1, length, length, dtype=dtype, device=device)

    def fits(self, rows: int, dtype: torch.dtype, device) -> bool:
        return self.layers[0].fits(rows, self.mask.shape[-1], dtype, device)

    def start(self, mask: torch.Tensor) -> None:
        """A new sequence of ``mask.shape[0]`` rows under ``mask`` (B, 1, L, L): every cache zeroed (a new
        sequence never sees the last one's numbers, not even masked), the mask and its bias written."""
        for cache in self.layers:
            cache.reset()
        b = mask.shape[0]
        self.mask[:b] = mask
        self.bias[:b].zero_().masked_fill_(~mask, float("-inf"))


class Runner:
    """Decodes with ``model``'s weights through the fast path, on its own caches (see the module's doc).

    Build it after the model's precision and device are set (the fused weights are copies);
    ``fuse`` (default: on a CPU) holds ``[w1; w3]`` per layer, one more copy of those weights."""

    def __init__(self, model: Transformer, fuse: Optional[bool] = None):
        self.model = model.eval()
        p = next(model.parameters())
        fuse = p.device.type == "cpu" if fuse is None else fuse
        self.w13 = torch.nn.ParameterList(
            torch.nn.Parameter(torch.cat([layer.feed_forward.w1.weight.detach(), layer.feed_forward.w3.weight.detach()]),
                               requires_grad=False)
            for layer in model.layers) if fuse else None
        self.graphs: Optional[StepGraphs] = None
        self.caches: Optional[DecodeCaches] = None  # allocated by the first start_sequence

    def twin(self) -> "Runner":
        """A runner over the same weights (and the same fused copies), with caches and graphs of its own:
        it decodes beside this one, in another thread if need be, without touching this one's state."""
        other = copy.copy(self)
        other.graphs, other.caches = None, None
        return other

    def clear_cache(self) -> None:
        """Free the caches (the next ``start_sequence`` allocates them again; a compiled graph bound to
        them compiles again)."""
        self.caches = None

    # ---------------------------------------------------------------- compiled steps
    def compile(self, widths: Sequence[int], say: Optional[Callable[[str], None]] = None) -> StepGraphs:
        """Run steps of ``widths`` tokens through compiled graphs from now on (they compile on first use)."""
        self.graphs = StepGraphs(widths, say)
        return self.graphs

    def warm(self, rows_list: Sequence[int], on_graph: Optional[Callable[[int, int], None]] = None,
             should_stop: Optional[Callable[[], bool]] = None) -> None:
        """Compile every (rows, width) graph now, on a scratch sequence, under inference mode as
        ``Decoding`` runs (a graph is specialised to it), so no real image pays for it.

        ``on_graph(i, n)`` hears each graph before it compiles (1-based, of n: a progress line);
        ``should_stop()`` true stops between graphs (one being compiled cannot be interrupted)."""
        if self.graphs is None:
            return
        shapes = [(rows, width) for rows in rows_list for width in self.graphs.widths]
        with torch.inference_mode():
            for i, (rows, width) in enumerate(shapes, 1):
                if self.graphs.failed or (should_stop is not None and should_stop()):
                    return
                if on_graph is not None:
                    on_graph(i, len(shapes))
                if i == 1 or rows != shapes[i - 2][0]:
                    self.start_sequence(rows)
                self.step(torch.zeros(rows, width, dtype=torch.long, device=self.model.rope.device), 0)

    @property
    def compiled_calls(self) -> int:
        return self.graphs.compiled_calls if self.graphs is not None else 0

    # ---------------------------------------------------------------- the decode target
    def start_sequence(self, batch: int, caption_mask: Optional[torch.Tensor] = None) -> None:
        """Start a sequence of ``batch`` rows: the caches allocated (reused while they fit: the same rows
        or more, the weights' dtype and device) and zeroed, the mask written for this caption's padding."""
        m = self.model
        p = next(m.parameters())
        if self.caches is None or not self.caches.fits(batch, p.dtype, p.device):
            self.caches = DecodeCaches(m, batch, p.dtype, p.device)
        self.caches.start(m.sequence_mask(batch, caption_mask, m.seq_len, p.device))

    @torch.no_grad()
    def prefill(self, cond: torch.Tensor):
        """The prefix → (logits for image token 0 (B, V) fp32, feature (B, dim))."""
        last = self._forward(self.model.embed_condition(cond), 0)[:, -1]
        return self.model.output(last).float(), last

    @torch.no_grad()
    def step(self, tokens: torch.Tensor, first_index: int):
        """As ``Transformer.step``: image tokens (B, S) at image indices first_index… → (logits (B, S, V)
        where row j predicts image token first_index+j+1, features (B, S, dim))."""
        if self.graphs is not None:
            out = self.graphs.run(self, tokens, first_index)
            if out is not None:
                return out
        m = self.model
        feats = self._forward(m.tok_embeddings(tokens), m.cls_token_num + first_index)
        return m.output(feats).float(), feats

    def static_step(self, tokens: torch.Tensor, input_pos: torch.Tensor, mask: torch.Tensor):
        """The decode forward at fixed shapes, what ``compiled.StepGraphs`` compiles: image tokens
        (B, S) at sequence positions ``input_pos`` (S,), attending under ``mask`` (B, 1, S, L) (rows
        of the caches' ``mask``, passed in: a graph never holds a sequence's mask as a constant;
        it may hold the weights, and it is bound to this runner's KV caches) → (logits fp32, features)."""
        m = self.model
        h = m.tok_embeddings(tokens)
        rope = m.rope[input_pos]  # real (cos, sin): compiled code has no complex numbers
        for i, cache in enumerate(self.caches.layers):
            h = self._block(i, h, rope, mask, input_pos, (cache.k_cache, cache.v_cache))
        feats = rms_norm_(h, m.norm.weight, m.norm.eps)
        return m.output(feats).float(), feats

    # ---------------------------------------------------------------- the eager fast path
    def _forward(self, h: torch.Tensor, first: int) -> torch.Tensor:
        """Embedded inputs h (B, S, dim) at sequence positions first … first+S-1 → normed features;
        attention reads the cache only up to the last of them (the causal mask hides the rest)."""
        m = self.model
        b, s = h.shape[:2]
        end = first + s
        c = self.caches
        mask = c.bias[:b, :, first:end, :end] if c.bias.dtype == h.dtype else c.mask[:b, :, first:end, :end]
        rope = rope_complex(m.rope[first:end])
        for i in range(len(m.layers)):
            h = self._block(i, h, rope, mask, first)
        return rms_norm_(h, m.norm.weight, m.norm.eps)

    def _block(self, i: int, x: torch.Tensor, rope, mask, first, static: Optional[tuple] = None) -> torch.Tensor:
        """One layer: ``first`` an int (eager: the cache written and read as slices) or the positions
        (S,) with ``static`` = this layer's whole (key, value) caches (the compiled step)."""
        layer = self.model.layers[i]
        a = layer.attention
        b, s, _ = x.shape
        nh, nkv, hd = a.n_head, a.n_kv_head, a.head_dim
        qkv = F.linear(rms_norm_(x, layer.attention_norm.weight, layer.attention_norm.eps), a.wqkv.weight)
        qk = apply_rope(qkv[..., : (nh + nkv) * hd].unflatten(-1, (nh + nkv, hd)), rope)
        q, k = qk[:, :, :nh].transpose(1, 2), qk[:, :, nh:].transpose(1, 2)
        v = qkv[..., (nh + nkv) * hd:].unflatten(-1, (nkv, hd)).transpose(1, 2)
        if static is not None:
            k_cache, v_cache = static[0][:b], static[1][:b]
            k_cache.index_copy_(2, first, k.to(k_cache.dtype))
            v_cache.index_copy_(2, first, v.to(v_cache.dtype))
            k, v = k_cache, v_cache
        else:
            k, v = self.caches.layers[i].update(first, k, v)
            k, v = k[:, :, : first + s], v[:, :, : first + s]
        if nkv != nh:
            k, v = k.repeat_interleave(nh // nkv, dim=1), v.repeat_interleave(nh // nkv, dim=1)
        out = masked_attention(q, k, v, mask) if static is not None else \
            F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        h = F.linear(out.transpose(1, 2).reshape(b, s, a.dim), a.wo.weight).add_(x)
        ff = layer.feed_forward
        y = rms_norm_(h, layer.ffn_norm.weight, layer.ffn_norm.eps)
        if self.w13 is not None:
            gate, up = F.linear(y, self.w13[i]).chunk(2, dim=-1)
        else:
            gate, up = F.linear(y, ff.w1.weight), F.linear(y, ff.w3.weight)
        return F.linear(F.silu(gate, inplace=True).mul_(up), ff.w2.weight).add_(h)


