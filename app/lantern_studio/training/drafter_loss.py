"""The EAGLE drafter's training loss, shared by the bundled recipe
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

from ..engine.sampling import guided_logits


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
    rope = gpt.rope[p0 : p0 + s]
    pred = head(inp, gpt.tok_embeddings(idx[:, :s]), rope)  # causal (mask None)
    loss_f = F.smooth_l1_loss(pred, target_f)
    d_logits = gpt.output(pred).float()
    t_logits = logits_t[:, 1:]
    dg = guided_logits(d_logits, cfg_scale)
    tg = guided_logits(t_logits, cfg_scale)
    loss_p = F.kl_div(dg.log_softmax(-1), tg.log_softmax(-1), log_target=True, reduction="batchmean") / s
    agree = (dg.argmax(-1) == tg.argmax(-1)).float().mean()
    return loss_f, loss_p, agree
