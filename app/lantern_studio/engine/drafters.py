"""Drafters: who proposes the next tokens for the target to verify.

A drafter sees a :class:`DecodeContext` (the target, the tokens fixed so far,
the sampling transform, the random generator) and answers ``propose(n)`` with
n drafted tokens and the distributions they were drawn from (None when the
drafts are picked deterministically, i.e. q = 1). After the target verified
them, ``observe`` tells the drafter what was kept.

* :class:`JacobiDrafter` — training-free Speculative Jacobi Decoding: a window
  of drafts refined by the target's own parallel forward; each draft's q is the
  distribution it was drawn from in the previous iteration. By default a slot's
  new draft is *coupled* to its previous one (MC-SJD's maximal coupling): it
  stays put with probability min(1, q_new(x)/q_old(x)) and is otherwise drawn
  from norm(max(q_new − q_old, 0)), so it is still distributed exactly as
  q_new (δ = 0 stays lossless) but changes only as much as its distribution did.
* :class:`EagleDrafter` — a learned one-layer head over the target's last
  hidden state and the next token's embedding (EAGLE), sharing the target's
  token embedding, rotary table and output head.
* :class:`~.draft_heads.HeadsDrafter` (engine/draft_heads.py) — Medusa-style
  parallel heads on the verify's own features: no sequential forward at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn as nn

from .model import KVCache, ModelArgs, Transformer, TransformerBlock, rope_complex
from .sampling import SamplingParams, probs_from_logits, sample


@dataclass
class DecodeContext:
    """Per-generation state shared by the decode loop and the drafter."""

    gpt: Transformer
    params: SamplingParams
    generator: Optional[torch.Generator]
    rows: int  # 2 with CFG ([cond; uncond]), else 1
    total: int  # image tokens to produce
    tokens: torch.Tensor  # (total,) fixed tokens (valid up to n_fixed)
    n_fixed: int = 0
    prefill_feature: Optional[torch.Tensor] = None  # (rows, dim) at the last prefix position

    @property
    def device(self):
        return self.tokens.device


class Drafter:
    """Interface. ``forwards`` counts the drafter's own (sequential) forward passes; ``head_calls`` the
    evaluations of heads over features the verify already computed (parallel heads: one a round)."""

    name = "none"
    sampled = True  # drafts drawn from q (False: deterministic, q = 1)
    # The longest chain worth drafting (None: the settings' draft_length). A Jacobi window
    # costs nothing to extend; each EAGLE draft is a sequential forward of its head.
    max_draft: Optional[int] = None

    def __init__(self):
        self.forwards = 0
        self.head_calls = 0

    def start(self, ctx: DecodeContext) -> None:
        self.forwards = 0
        self.head_calls = 0

    def propose(self, ctx: DecodeContext, n: int):
        raise NotImplementedError

    def observe(self, ctx: DecodeContext, drafts, n_accepted: int, verify_probs, verify_features) -> None:
        """drafts (n,), verify_probs (n+1, V), verify_features (rows, n+1, dim) for the
        inputs [pending, drafts...]; ctx.tokens / n_fixed are already updated."""


# --------------------------------------------------------------------------- Jacobi


class JacobiDrafter(Drafter):
    """Speculative Jacobi Decoding: the window's drafts come from the target's
    previous parallel forward (q = the distribution they were drawn from).

    Fresh slots at the end of the window are initialised by ``init``:
    "uniform" (SJD's random tokens, q uniform) or "spatial" (default): copy the
    token one row above (on the first row, the one to the left), a deterministic
    draft with q = 1 — images repeat vertically, backgrounds above all, so such
    drafts are often accepted. Both keep δ = 0 lossless: every draft is drawn
    from its q before its acceptance coin is tossed.
    """

    name = "jacobi"

    def __init__(self, init: str = "spatial", coupled: bool = True):
        super().__init__()
        if init not in ("spatial", "uniform"):
            raise ValueError(f"init: 'spatial' or 'uniform', got {init!r}")
        self.init = init
        self.coupled = coupled
        self.window: Optional[torch.Tensor] = None
        self.q: Optional[torch.Tensor] = None

    def start(self, ctx):
        super().start(ctx)
        v = ctx.gpt.vocab_size
        self.window = torch.empty(0, dtype=torch.long, device=ctx.device)
        self.q = torch.empty(0, v, device=ctx.device)

    def _fresh(self, ctx, need):
        v = ctx.gpt.vocab_size
        if self.init == "uniform":
            if ctx.params.greedy:
                tokens = torch.zeros(need, dtype=torch.long, device=ctx.device)
            else:
                tokens = torch.randint(0, v, (need,), generator=ctx.generator, device=ctx.device)
            return tokens, torch.full((need, v), 1.0 / v, device=ctx.device)
        grid = ctx.gpt.config.grid_size
        known = torch.cat([ctx.tokens[: ctx.n_fixed], self.window])  # fixed tokens, then the window's drafts
        out = []
        for j in range(known.shape[0], known.shape[0] + need):
            src = j - grid if j >= grid else j - 1
            out.append(known[src] if src < known.shape[0] else out[src - known.shape[0]])
        tokens = torch.stack(out)
        return tokens, torch.nn.functional.one_hot(tokens, v).float()

    def _fill(self, ctx, n):
        need = n - self.window.shape[0]
        if need > 0:
            fresh, q = self._fresh(ctx, need)
            self.window = torch.cat([self.window, fresh])
            self.q = torch.cat([self.q, q])

    def propose(self, ctx, n):
        self._fill(ctx, n)
        drafts, q = self.window[:n], self.q[:n]
        return drafts, (None if ctx.params.greedy else q)

    def observe(self, ctx, drafts, n_accepted, verify_probs, verify_features):
        # Rows after the accepted prefix (and its correction) become the next drafts.
        rest = verify_probs[n_accepted + 1 :]
        if not rest.shape[0]:
            self.window, self.q = rest.new_zeros(0, dtype=torch.long), rest
            return
        if ctx.params.greedy or not self.coupled:
            self.window = sample(rest, ctx.generator, ctx.params.greedy)
        else:
            # The same image positions held drafts[n_accepted+1:] drawn from q[n_accepted+1:].
            prev = drafts[n_accepted + 1 :]
            self.window = couple(prev, self.q[n_accepted + 1 : n_accepted + 1 + prev.shape[0]], rest, ctx.generator)
        self.q = rest


def couple(prev: torch.Tensor, prev_q: torch.Tensor, new_q: torch.Tensor, generator) -> torch.Tensor:
    """Maximal coupling of each slot's new draft with its previous one (MC-SJD).

    prev (m,) were drawn from prev_q (m, V); new_q (n ≥ m, V) are the slots' new
    distributions. Slot i keeps prev[i] with probability min(1, new_q(x)/prev_q(x))
    and otherwise draws from norm(max(new_q − prev_q, 0)); slots past m draw from
    new_q. Every returned token is distributed exactly as its new_q row.
    """
    m = prev.shape[0]
    fresh = sample(new_q, generator)
    if m == 0:
        return fresh
    nq, pq = new_q[:m], prev_q
    p_new = nq.gather(1, prev[:, None])[:, 0]
    p_old = pq.gather(1, prev[:, None])[:, 0]
    u = torch.rand(m, generator=generator, device=new_q.device)
    keep = u * p_old < p_new  # u < min(1, p_new / p_old)
    resid = (nq - pq).clamp(min=0.0)
    mass = resid.sum(1, keepdim=True)
    # Where new_q == prev_q the residual is empty, but then keep is always true.
    resid = torch.where(mass > 0, resid / mass.clamp(min=1e-30), nq)
    moved = sample(resid, generator)
    out = fresh.clone()
    out[:m] = torch.where(keep, prev, moved)
    return out


# --------------------------------------------------------------------------- EAGLE


class EagleHead(nn.Module):
    """The learned drafter's weights: fuse [feature; token embedding] and one block.

    Trained to predict the target's next final hidden state (and through the
    target's output head, the token after it).
    """

    def __init__(self, args: ModelArgs):
        super().__init__()
        self.config = args
        self.fc = nn.Linear(2 * args.dim, args.dim, bias=True)
        self.layer = TransformerBlock(args)
        self.register_buffer("attn_mask", None, persistent=False)  # (1, 1, L, L) causal, set by start_sequence

    def forward(self, features: torch.Tensor, token_emb: torch.Tensor, rope, mask=None, input_pos=None):
        """features (B, S, dim) of the previous position, token_emb (B, S, dim) -> (B, S, dim);
        with ``input_pos`` (S,) image indices, through the KV cache (see ``start_sequence``)."""
        h = self.fc(torch.cat([features, token_emb], dim=-1))
        return self.layer(h, rope, mask, input_pos)

    def start_sequence(self, max_batch_size: int, length: int) -> None:
        """The head's own KV cache over ``length`` image positions and its causal mask,
        allocated once and reused while they fit (zeroed for each sequence)."""
        p = next(self.parameters())
        a = self.layer.attention
        if a.kv_cache is None or not a.kv_cache.fits(max_batch_size, length, p.dtype, p.device):
            a.kv_cache = KVCache(max_batch_size, length, a.n_kv_head, a.head_dim, p.dtype, p.device)
            self.attn_mask = torch.ones(length, length, dtype=torch.bool, device=p.device).tril()[None, None]
        a.kv_cache.reset()


class EagleDrafter(Drafter):
    name = "eagle"
    # Session 2's measurement on the bundled model: EAGLE at chain 10 beat chain 4 (1.67× vs 1.34×, k256 δ0.4);
    # the window-24 default of coupled Jacobi would make EAGLE run 24 sequential head steps per round.
    max_draft = 10

    def __init__(self, head: EagleHead):
        super().__init__()
        self.head = head
        self.valid = 0  # image indices processed with true target features
        self.feats: Optional[torch.Tensor] = None  # (rows, total + 1, dim); slot i+1 holds f_i

    def start(self, ctx):
        super().start(ctx)
        gpt = ctx.gpt
        p = next(self.head.parameters())
        self.head.start_sequence(ctx.rows, ctx.total)
        self.feats = torch.zeros(ctx.rows, ctx.total + 1, gpt.config.dim, dtype=p.dtype, device=p.device)
        self.feats[:, 0] = ctx.prefill_feature
        self.valid = 0

    def _run(self, ctx, feats, tokens, start):
        gpt = ctx.gpt
        pos = gpt.positions(start, tokens.shape[1])  # image indices: the head's cache has no prefix
        rope = rope_complex(gpt.rope[gpt.cls_token_num + pos])
        mask = self.head.attn_mask[:, :, pos]
        out = self.head(feats, gpt.tok_embeddings(tokens), rope, mask, pos)
        self.forwards += 1
        return out

    def _q(self, ctx, out_last):
        return probs_from_logits(ctx.gpt.output(out_last).float(), ctx.params)[0]

    @torch.no_grad()
    def propose(self, ctx, n):
        # Catch up on fixed tokens with the target's true features, then roll forward.
        lo, hi = self.valid, ctx.n_fixed
        toks = ctx.tokens[lo:hi].expand(ctx.rows, -1)
        out = self._run(ctx, self.feats[:, lo:hi], toks, lo)[:, -1:]
        self.valid = hi
        drafts, qs = [], []
        for i in range(n):
            q = self._q(ctx, out[:, -1])
            d = sample(q, ctx.generator, ctx.params.greedy or not self.sampled)
            drafts.append(d)
            qs.append(q)
            if i + 1 < n:
                out = self._run(ctx, out, d.view(1, 1).expand(ctx.rows, 1), hi + i)
        drafts = torch.stack(drafts)
        deterministic = ctx.params.greedy or not self.sampled
        return drafts, (None if deterministic else torch.stack(qs))

    def observe(self, ctx, drafts, n_accepted, verify_probs, verify_features):
        # verify_features row j is f at image index (old n_fixed - 1 + j).
        first = ctx.n_fixed - n_accepted - 1  # image index of the pending input
        self.feats[:, first + 1 : first + 2 + n_accepted] = verify_features[:, : n_accepted + 1]
