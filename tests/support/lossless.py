"""The statistics behind "δ = 0 is lossless": the exact joint law of the first three
tokens by enumeration, the empirical one from many seeded decodes, their total
variation, and a deliberately poor drafter."""

import itertools

import numpy as np
import torch

from lantern_studio.engine.decode import generate_tokens
from lantern_studio.engine.drafters import Drafter
from lantern_studio.engine.sampling import probs_from_logits
from lantern_studio.engine.settings import GenerationSettings

N_SAMPLES = 20_000
TV_TOLERANCE = 0.025  # measured sampling noise of this 64-cell histogram at 4k draws: ≈ 0.007
VOCAB = 4


class PoorDrafter(Drafter):
    """Drafts sampled from a fixed, wrong distribution: the worst honest drafter."""

    def __init__(self):
        super().__init__()
        self.q = torch.tensor([0.1, 0.2, 0.3, 0.4])

    def propose(self, ctx, n):
        q = self.q.expand(n, -1)
        return torch.multinomial(q, 1, generator=ctx.generator)[:, 0], q


def exact_joint3(gpt, cond, settings):
    """p(t0, t1, t2) by enumeration through the teacher-forced forward."""
    params = settings.sampling
    joint = np.zeros((VOCAB,) * 3)
    for t0, t1 in itertools.product(range(VOCAB), repeat=2):
        idx = torch.tensor([[t0, t1, 0]])
        c = torch.cat([cond, gpt.null_condition(cond)]) if params.uses_cfg else cond
        logits = gpt.teacher_forced_logits(idx.expand(c.shape[0], -1), c)
        p = probs_from_logits(logits.detach(), params)[0].double().numpy()
        joint[t0, t1] = p[0, t0] * p[1, t1] * p[2]
    return joint


def empirical_joint3(gpt, cond, settings, drafter, n):
    counts = np.zeros((VOCAB,) * 3)
    for seed in range(n):
        tokens, _, _ = generate_tokens(gpt, cond, settings.with_(seed=seed), drafter=drafter)
        t = tokens[:3].tolist()
        counts[t[0], t[1], t[2]] += 1
    return counts / n


def tv(a, b):
    return 0.5 * float(np.abs(a - b).sum())


SETTINGS = GenerationSettings(cfg_scale=1.5, temperature=1.0, draft_length=3)
