"""The one seam behind every decode loop: what a loop asks of its target model.

The loops (:mod:`.decode`: vanilla and draft → verify, with every acceptance rule and the training-free
drafters) never name a model class. They ask a :class:`DecodeTarget` for four things:

* ``start_sequence(rows, mask)`` — a new sequence of ``rows`` rows (2 under guidance: conditional, then
  unconditional), its caches emptied;
* ``prefill(cond)`` — the conditioning rows through the model → the logits of image token 0;
* ``step(tokens, first_index)`` — a window of image tokens (rows, S) at image indices first_index … →
  the image head's logits for the next token after each. Stepping from ``first_index`` discards whatever
  the cache held for positions at and past it: that is how the cache is cut back to the accepted length
  after a verify (the engine's static caches overwrite, a transformers cache is cropped);
* ``model`` — the :class:`TargetModel` facts a loop reads: the image vocabulary, the number of image tokens
  and their grid, where the weights live, the unconditional rows of a condition.

Two kinds satisfy it: the engine's own LlamaGen GPT (:class:`~.model.Transformer`, decoding by its
reference forward, or a :class:`~.runner.Runner`, its fast path) and transformers-backed targets built by
the model loaders (``models/janus.py``: Janus-Pro), which the engine never imports. A target model
that brings its own decode target says so with ``decode_target()`` (``runner.target_for``).
"""

from __future__ import annotations

from typing import Any, Iterator, Optional, Protocol, runtime_checkable

import torch


@runtime_checkable
class TargetModel(Protocol):
    """The facts of a target model that decode loops and training-free drafters read."""

    vocab_size: int  # image tokens' vocabulary (the VQ codebook)
    block_size: int  # image tokens a picture has (grid × grid)
    config: Any  # ``grid_size`` at least

    def parameters(self) -> Iterator[torch.nn.Parameter]: ...  # where (device) and in what dtype the weights are

    def null_condition(self, cond: torch.Tensor) -> torch.Tensor: ...  # the guidance's unconditional rows


class DecodeTarget(Protocol):
    """What a decode loop asks of its target (see the module's doc)."""

    model: TargetModel
    compiled_calls: int  # steps a compiled graph ran so far (0 where there are none)

    def start_sequence(self, batch: int, caption_mask: Optional[torch.Tensor] = None) -> None: ...
    def prefill(self, cond: torch.Tensor) -> tuple: ...  # → (logits (B, V) fp32, features (B, dim))
    def step(self, tokens: torch.Tensor, first_index: int) -> tuple: ...  # → (logits (B, S, V) fp32, features)
