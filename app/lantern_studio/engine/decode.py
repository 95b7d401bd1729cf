"""The decode loops: vanilla AR and draft → verify. Each step yields a StepEvent.

Invariant of the speculative loop: tokens[:n_fixed] are final, and the last of
them ("pending") has not been fed to the target yet. One round feeds
[pending, d1..dn] in a single target forward, accepts a prefix of the drafts,
and fixes one more token from the target (the correction on a rejection, the
bonus when every draft is kept). Rolling the KV cache back is implicit: the
next round writes from the first non-accepted position on.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Iterator, Optional

import numpy as np
import torch

from .acceptance import verify_chain
from .decisions import ACCEPTED_RELAXED, BY_TARGET
from .drafters import DecodeContext, Drafter
from .model import Transformer
from .neighbours import ProximityTable
from .runner import DecodeTarget
from .sampling import probs_from_logits, sample
from .settings import GenerationSettings


@dataclass
class StepEvent:
    """What one step fixed. Plain Python data: safe to hand to another thread."""

    positions: list  # image token indices fixed in this step (raster order)
    tokens: list  # their ids
    decisions: list  # BY_TARGET / ACCEPTED_EXACT / ACCEPTED_RELAXED per token
    drafted: int  # drafts proposed in this step
    n_fixed: int
    total: int
    target_forwards: int
    drafter_forwards: int
    step_seconds: float
    elapsed: float

    @property
    def done(self) -> bool:
        return self.n_fixed >= self.total


@dataclass
class DecodeStats:
    tokens: int = 0
    target_forwards: int = 0  # image-token forwards (the prefill is counted apart)
    compiled_forwards: int = 0  # of those, how many ran a compiled graph (engine/compiled.py)
    drafter_forwards: int = 0  # the drafter's sequential forwards (EAGLE: one a draft; Jacobi, heads: none)
    drafter_head_calls: int = 0  # parallel draft heads evaluated on the verify's features (one a round)
    drafted: int = 0
    accepted: int = 0
    accepted_relaxed: int = 0
    wall_seconds: float = 0.0
    drafter_seconds: float = 0.0
    target_seconds: float = 0.0  # inside target forwards after the prefill (the rest of a round is overhead)
    prefill_seconds: float = 0.0  # conditioning prefix + first token
    decode_image_seconds: float = 0.0  # the VQ decode of the picture, after the tokens (ImagePipeline.generate)
    # The relaxation's per-slot bound, summed over the positions fixed so far (0 for tokens sampled from
    # the target). For the step bound (and deterministic drafts) each is a TV bound on its step's output,
    # so the expected total bounds the TV between the image's token distribution and the target's.
    tv_budget_total: float = 0.0
    tv_budget_max: float = 0.0
    # Measured (settings.measure_tv): exact TV(step's output distribution, p) per deciding slot.
    step_tv_sum: float = 0.0
    step_tv_max: Optional[float] = None
    step_tv_slots: int = 0
    cancelled: bool = False
    settings: dict = field(default_factory=dict)

    @property
    def mean_accepted_length(self) -> float:
        """Tokens fixed per target forward (the prefill's first token included)."""
        return self.tokens / max(1, self.target_forwards + 1)

    def to_dict(self) -> dict:
        d = {k: v for k, v in self.__dict__.items()}
        d["mean_accepted_length"] = self.mean_accepted_length
        d["acceptance_rate"] = self.accepted / self.drafted if self.drafted else None
        d["tokens_per_second"] = self.tokens / self.wall_seconds if self.wall_seconds > 0 else None
        d["step_tv_mean"] = self.step_tv_sum / self.step_tv_slots if self.step_tv_slots else None
        return d


def cfg_batch(gpt: Transformer, cond: torch.Tensor, caption_mask, uses_cfg: bool):
    """The prefix rows a decode runs: the condition, and its null half after it when guidance is on."""
    if not uses_cfg:
        return cond, caption_mask
    cond2 = torch.cat([cond, gpt.null_condition(cond)])
    mask2 = None if caption_mask is None else torch.cat([caption_mask, caption_mask])
    return cond2, mask2


class Decoding:
    """One generation. Iterate it for StepEvents; afterwards read ``tokens``,
    ``decisions`` and ``stats``. ``cancel()`` (thread-safe) stops it between steps."""

    def __init__(
        self,
        target: DecodeTarget,
        cond: torch.Tensor,
        settings: GenerationSettings,
        caption_mask: Optional[torch.Tensor] = None,
        drafter: Optional[Drafter] = None,
        table: Optional[ProximityTable] = None,
        should_stop: Optional[Callable[[], bool]] = None,
    ):
        self.target = target  # a Runner (the pipeline's fast path) or a bare Transformer (its reference forward)
        self.gpt = gpt = target.model
        # validated here too: Decoding is the engine's lower-level entry (generate_tokens, trainers, scripts);
        # through ImagePipeline.decoding the settings arrive validated and this is a cheap no-op
        settings = self.settings = settings.validate(gpt.vocab_size)
        self.params = settings.sampling
        self.cond = cond
        self.caption_mask = caption_mask
        self.drafter = drafter if settings.drafter != "none" else None
        if settings.drafter != "none" and drafter is None:
            raise ValueError(f"drafter {settings.drafter!r} requested but none was given")
        self.table = table
        self._stop = False
        self._should_stop = should_stop
        self.total = gpt.block_size
        dev = next(gpt.parameters()).device
        self.tokens = torch.zeros(self.total, dtype=torch.long, device=dev)
        self.decisions = np.zeros(self.total, dtype=np.uint8)
        self.budgets = np.zeros(self.total, dtype=np.float64)  # per position: the bound of the slot that fixed it
        self.stats = DecodeStats(settings=settings.to_dict())
        self._compiled_before = target.compiled_calls

    def cancel(self):
        self._stop = True

    @property
    def cancelled(self) -> bool:
        return self.stats.cancelled

    def _stopping(self) -> bool:
        return self._stop or (self._should_stop is not None and self._should_stop())

    def __iter__(self) -> Iterator[StepEvent]:
        with torch.inference_mode():
            yield from self._run()

    def _event(self, positions, tokens, decisions, drafted, t_step, t0) -> StepEvent:
        now = time.perf_counter()
        s = self.stats
        s.tokens = positions[-1] + 1 if positions else s.tokens
        s.wall_seconds = now - t0
        s.compiled_forwards = self.target.compiled_calls - self._compiled_before
        for p, d in zip(positions, decisions):
            self.decisions[p] = d
        return StepEvent(
            positions=list(positions),
            tokens=list(tokens),
            decisions=list(decisions),
            drafted=drafted,
            n_fixed=s.tokens,
            total=self.total,
            target_forwards=s.target_forwards,
            drafter_forwards=s.drafter_forwards,
            step_seconds=now - t_step,
            elapsed=now - t0,
        )

    def _record_bounds(self, n: int, v) -> None:
        s = self.stats
        if v.budgets:
            self.budgets[n : n + len(v.budgets)] = v.budgets
            s.tv_budget_total += float(sum(v.budgets))
            s.tv_budget_max = max(s.tv_budget_max, float(max(v.budgets)))
        if v.tv:
            s.step_tv_sum += float(sum(v.tv))
            s.step_tv_slots += len(v.tv)
            s.step_tv_max = max(s.step_tv_max or 0.0, float(max(v.tv)))

    def _run(self):
        gpt, params, st = self.gpt, self.params, self.settings
        gen = torch.Generator(device=self.tokens.device)
        gen.manual_seed(st.seed)
        cond, mask = cfg_batch(gpt, self.cond, self.caption_mask, params.uses_cfg)
        rows = cond.shape[0]
        t0 = time.perf_counter()
        self.target.start_sequence(rows, mask)  # the last generation's caches, reused (and zeroed) when they fit
        logits, feat = self.target.prefill(cond)
        p = probs_from_logits(logits, params)
        tok = sample(p, gen, params.greedy)[0]
        self.tokens[0] = tok
        self.stats.prefill_seconds = time.perf_counter() - t0
        yield self._event([0], [int(tok)], [BY_TARGET], 0, t0, t0)
        if self.drafter is None:
            yield from self._vanilla(gen, rows, t0)
        else:
            yield from self._speculative(gen, rows, feat, t0)

    def _vanilla(self, gen, rows, t0):
        params = self.params
        for i in range(1, self.total):
            if self._stopping():
                self.stats.cancelled = True
                return
            t = time.perf_counter()
            logits, _ = self.target.step(self.tokens[i - 1 : i].expand(rows, 1), i - 1)
            self.stats.target_seconds += time.perf_counter() - t
            self.stats.target_forwards += 1
            tok = sample(probs_from_logits(logits[:, -1], params), gen, params.greedy)[0]
            self.tokens[i] = tok
            yield self._event([i], [int(tok)], [BY_TARGET], 0, t, t0)

    def _speculative(self, gen, rows, prefill_feature, t0):
        gpt, params, st, s = self.gpt, self.params, self.settings, self.stats
        ctx = DecodeContext(gpt, params, gen, rows, self.total, self.tokens, 1, prefill_feature)
        drafter = self.drafter
        drafter.start(ctx)
        relax = st.relaxation
        while ctx.n_fixed < self.total:
            if self._stopping():
                s.cancelled = True
                return
            t = time.perf_counter()
            n = ctx.n_fixed
            want = min(st.draft_length, self.total - n)
            if drafter.max_draft is not None:
                want = min(want, drafter.max_draft)
            drafts, q = drafter.propose(ctx, want)
            s.drafter_forwards = drafter.forwards
            s.drafter_head_calls = drafter.head_calls
            t_draft = time.perf_counter()
            s.drafter_seconds += t_draft - t
            inp = torch.cat([self.tokens[n - 1 : n], drafts]).expand(rows, -1)
            logits, feats = self.target.step(inp, n - 1)
            s.target_seconds += time.perf_counter() - t_draft
            s.target_forwards += 1
            p = probs_from_logits(logits, params)[0]  # CFG folds the batch to one row
            v = verify_chain(p, drafts, q, relax, self.table, gen, params.greedy, st.measure_tv)
            a = v.n_accepted
            s.drafted += want
            s.accepted += a
            s.accepted_relaxed += sum(1 for d in v.decisions if d == ACCEPTED_RELAXED)
            self._record_bounds(n, v)
            self.tokens[n : n + a] = drafts[:a]
            positions = list(range(n, n + a))
            toks = drafts[:a].tolist()
            decisions = list(v.decisions)
            if n + a < self.total:
                self.tokens[n + a] = v.next_token
                positions.append(n + a)
                toks.append(v.next_token)
                decisions.append(BY_TARGET)
            ctx.n_fixed = n + len(positions)
            if ctx.n_fixed < self.total:
                drafter.observe(ctx, drafts, a, p, feats)
            yield self._event(positions, toks, decisions, want, t, t0)


def generate_tokens(target: DecodeTarget, cond, settings, caption_mask=None, drafter=None, table=None):
    """Run a whole generation; returns (tokens (N,) tensor, decisions (N,) uint8, DecodeStats)."""
    run = Decoding(target, cond, settings, caption_mask, drafter, table)
    for _ in run:
        pass
    return run.tokens, run.decisions, run.stats
