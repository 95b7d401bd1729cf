"""Tiny random Janus-Pro models for tests (built offline by models/janus_tiny.py), and the exact
distributions a decode is checked against: transformers' own full forward, no cache."""

import itertools

import numpy as np
import torch

from lantern_studio.engine.decode import Decoding
from lantern_studio.engine.sampling import probs_from_logits
from lantern_studio.models.janus import load_janus_dir
from lantern_studio.models.janus_tiny import build_tiny_janus_dir, tiny_janus

PROMPT = "a red heart"

__all__ = ["PROMPT", "build_tiny_janus_dir", "tiny_janus", "janus_pipeline", "full_forward_logits",
           "exact_joint", "empirical_joint", "tv"]


def janus_pipeline(folder, **kw):
    """A tiny Janus folder written and loaded through the studio's own loader (fp32)."""
    build_tiny_janus_dir(folder, **kw)
    return load_janus_dir(folder, precision="fp32")


def cfg_rows(model, cond, mask, uses_cfg):
    if not uses_cfg:
        return cond, mask
    return torch.cat([cond, model.null_condition(cond)]), torch.cat([mask, mask])


@torch.no_grad()
def full_forward_logits(model, cond, mask, tokens, uses_cfg=True):
    """Image-head logits of every image slot, recomputed from scratch (no cache): tokens (N, T) fed after
    the prompt → (rows·N, T+1, V) where slot t predicts image token t (rows = 2 under guidance, cond first)."""
    cond, mask = cfg_rows(model, cond, mask, uses_cfg)
    rows, length = cond.shape
    n, t = tokens.shape
    prompt = model.embed_prompt(cond).repeat_interleave(n, 0)
    images = model.embed_image(tokens.repeat(rows, 1))
    h = torch.cat([prompt, images], 1)
    full_mask = torch.cat([mask.repeat_interleave(n, 0), mask.new_ones(rows * n, t)], 1)
    pos = (full_mask.cumsum(-1) - 1).clamp(min=0)
    out = model.language_model(inputs_embeds=h, attention_mask=full_mask, position_ids=pos, use_cache=False)
    return model.head(out.last_hidden_state[:, length - 1:])


def exact_joint(model, cond, mask, settings, n_tokens):
    """p(t0 … t_{n-1}) of the first n image tokens by enumeration (vocabulary V: V**n cells)."""
    v = model.vocab_size
    params = settings.sampling
    prefixes = torch.tensor(list(itertools.product(range(v), repeat=n_tokens - 1)), dtype=torch.long)
    logits = full_forward_logits(model, cond, mask, prefixes, params.uses_cfg)
    p = probs_from_logits(logits, params).double().numpy()  # (N, n, V): CFG folds the rows
    joint = np.ones((len(prefixes), v))
    for i in range(n_tokens - 1):
        joint *= p[np.arange(len(prefixes)), i, prefixes[:, i].numpy()][:, None]
    joint *= p[:, n_tokens - 1]
    return joint.reshape((v,) * n_tokens)


def empirical_joint(pipe, settings, n_tokens, n, drafter=None, table=None):
    """The histogram of the first n_tokens image tokens over n seeded decodes through the pipeline's target."""
    c = pipe.conditioner(PROMPT)
    v = pipe.vocab_size
    counts = np.zeros((v,) * n_tokens)
    for seed in range(n):
        run = Decoding(pipe.runner, c.cond, settings.with_(seed=seed), c.mask, drafter, table)
        for _ in run:
            pass
        counts[tuple(run.tokens[:n_tokens].tolist())] += 1
    return counts / n


def tv(a, b):
    return 0.5 * float(np.abs(a - b).sum())
