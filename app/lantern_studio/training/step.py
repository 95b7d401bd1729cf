"""One optimiser step, the same block in every trainer: the schedule's learning rate into every
parameter group, gradients cleared, the loss backpropagated, the gradient norm clipped, the step taken.

The trainers differ in what they compute before (the loss) and after (an EMA, a codebook's upkeep);
this block between is written once."""

from __future__ import annotations

from typing import Iterable

import torch


def set_lr(opt: torch.optim.Optimizer, lr: float) -> None:
    """The learning rate of every parameter group of ``opt``."""
    for group in opt.param_groups:
        group["lr"] = lr


def optimizer_step(opt: torch.optim.Optimizer, loss: torch.Tensor, params: Iterable[torch.nn.Parameter], *,
                   lr: float, clip: float) -> torch.Tensor | None:
    """Set ``lr``, clear the gradients, backpropagate ``loss``, clip the gradient norm of ``params`` to
    ``clip`` (``clip`` ≤ 0: no clipping) and step ``opt``. → the total gradient norm before clipping
    (None when not clipped)."""
    set_lr(opt, lr)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(params, clip) if clip > 0 else None
    opt.step()
    return norm
