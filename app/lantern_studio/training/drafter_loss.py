"""The EAGLE drafter's training loss and trainer, shared by the bundled recipe
(training/drafter.py) and self-distillation for any model (training/self_distill.py).

For a batch of sequences the frozen target gives its final hidden states f
(post-norm, what its output head reads) for the conditional and the
unconditional prefix (the CFG batch). The head reads (f_{t-1} + noise, e(x_t))
and is trained to predict f_t (smooth-L1) and, through the target's head, the
target's *guided* next-token distribution (KL between the CFG-combined drafter
and target logits): it learns what the sampler will actually ask of it.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..engine.drafters import EagleHead
from ..engine.model import rope_complex
from ..engine.sampling import guided_logits
from .common import cosine_lr
from .step import optimizer_step


def drafter_losses(gpt, head, tok, emb, mask, cfg_scale: float, noise: float, gen=None):
    """→ (feature loss, distribution loss, top-1 agreement) for one batch, on any device.

    ``mask`` (B, P) marks the valid prefix slots (None: all valid). The input
    noise is uniform in ±``noise``, drawn on the CPU from ``gen`` (a CPU
    generator, so runs are reproducible whatever the device) and then moved to
    the features' device.
    """
    cond = torch.cat([emb, gpt.null_condition(emb)])
    cmask = None if mask is None else torch.cat([mask, mask])
    idx = torch.cat([tok, tok])
    with torch.no_grad():
        logits_t, feats = gpt.teacher_forced_logits(idx[:, :-1], cond, cmask, return_features=True)
        # feats row t = f_{t-1} (row 0: last prefix position); logits row t predicts x_t
    inp = feats[:, :-1]  # f_{-1} .. f_{T-2}
    target_f = feats[:, 1:]  # f_0 .. f_{T-1}
    if noise > 0:
        inp = inp + ((torch.rand(inp.shape, generator=gen) - 0.5) * 2 * noise).to(inp.device, inp.dtype)
    s = inp.shape[1]
    p0 = gpt.cls_token_num
    rope = rope_complex(gpt.rope[p0 : p0 + s])
    pred = head(inp, gpt.tok_embeddings(idx[:, :s]), rope)  # causal (mask None)
    loss_f = F.smooth_l1_loss(pred, target_f)
    d_logits = gpt.output(pred).float()
    t_logits = logits_t[:, 1:]
    dg = guided_logits(d_logits, cfg_scale)
    tg = guided_logits(t_logits, cfg_scale)
    loss_p = F.kl_div(dg.log_softmax(-1), tg.log_softmax(-1), log_target=True, reduction="batchmean") / s
    agree = (dg.argmax(-1) == tg.argmax(-1)).float().mean()
    return loss_f, loss_p, agree


class HeadTrainer:
    """An EAGLE head trained against a frozen target on the loop driver (:mod:`.loop`): one AdamW step
    of :func:`drafter_losses` per ``train_step``, the held-out numbers in ``evaluate``. Subclasses say
    where the batches come from (``batch()``, ``held_out_batch()``)."""

    def __init__(self, gpt, head: EagleHead, *, lr: float, steps: int, warmup: int, cfg: float, noise: float,
                 p_weight: float, seed: int):
        self.gpt, self.model = gpt, head
        self.lr, self.steps, self.warmup = lr, steps, warmup
        self.cfg, self.noise, self.p_weight = cfg, noise, p_weight
        self.model.train()
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.0)
        self.gen = torch.Generator().manual_seed(seed)
        self.step = 0

    def batch(self):
        raise NotImplementedError

    def held_out_batch(self):
        raise NotImplementedError

    def train_step(self) -> dict[str, float]:
        lr = cosine_lr(self.step, self.steps, self.lr, self.warmup)
        tok, emb, mask = self.batch()
        lf, lp, ag = drafter_losses(self.gpt, self.model, tok, emb, mask, self.cfg, self.noise, self.gen)
        loss = lf + self.p_weight * lp
        optimizer_step(self.opt, loss, self.model.parameters(), lr=lr, clip=1.0)
        self.step += 1
        return {"feat": float(lf.detach()), "kl": float(lp.detach()), "top1": float(ag), "lr": lr}

    @torch.no_grad()
    def evaluate(self) -> tuple[dict, str]:
        self.model.eval()
        tok, emb, mask = self.held_out_batch()
        lf, lp, ag = drafter_losses(self.gpt, self.model, tok, emb, mask, self.cfg, 0.0)
        self.model.train()
        row = {"heldout_feature_loss": float(lf), "heldout_kl": float(lp), "heldout_top1": float(ag)}
        return row, f"held-out top-1 agreement {float(ag):.3f}, KL {float(lp):.3f}"

    def extra_state(self) -> dict:
        return {}

    def load_extra_state(self, extra: dict) -> None:
        pass
