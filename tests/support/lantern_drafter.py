"""LANTERN's published LlamaGen drafter layout (``jadohu/llamagen_drafter``: the EAGLE-1
``Model`` of LANTERN's ``models/drafters/cnets_llamagen.py``, one HF-style LLaMA layer)
mapped onto our EagleHead, so a test can check that EagleHead computes that drafter's
function. The studio does not load LANTERN's drafter: nothing in the package needs it.

Differences the mapping handles: LANTERN's fc reads ``cat(token_emb, feature)`` (ours
``cat(feature, token_emb)``, so the weight's column halves swap); q/k/v are separate (ours
a fused ``wqkv``); layer 0 has no input norm (an identity); ``gate/up/down_proj`` →
``w1/w3/w2``."""

import dataclasses

import torch
import torch.nn as nn

from lantern_studio.engine.drafters import EagleHead
from lantern_studio.engine.model import ModelArgs


def lantern_to_eagle_keys(sd: dict, dim: int) -> dict:
    """LANTERN's drafter state dict (one layer, no input norm) → EagleHead keys."""
    w = sd["fc.weight"]
    assert tuple(w.shape) == (dim, 2 * dim), f"fc.weight {tuple(w.shape)} does not fit a {dim}-wide target"
    p = "layers.0."
    return {
        "fc.weight": torch.cat([w[:, dim:], w[:, :dim]], dim=1),
        "fc.bias": sd["fc.bias"],
        "layer.attention.wqkv.weight": torch.cat([sd[p + "self_attn.q_proj.weight"], sd[p + "self_attn.k_proj.weight"],
                                                  sd[p + "self_attn.v_proj.weight"]], dim=0),
        "layer.attention.wo.weight": sd[p + "self_attn.o_proj.weight"],
        "layer.feed_forward.w1.weight": sd[p + "mlp.gate_proj.weight"],
        "layer.feed_forward.w3.weight": sd[p + "mlp.up_proj.weight"],
        "layer.feed_forward.w2.weight": sd[p + "mlp.down_proj.weight"],
        "layer.ffn_norm.weight": sd[p + "post_attention_layernorm.weight"],
    }


def lantern_drafter_head(sd: dict, args: ModelArgs, rms_norm_eps: float = 1e-6) -> EagleHead:
    """An EagleHead (eval mode) holding LANTERN's drafter weights ``sd``; its input norm is the identity."""
    head = EagleHead(dataclasses.replace(args, norm_eps=rms_norm_eps))
    head.layer.attention_norm = nn.Identity()
    head.load_state_dict({k: v.float() for k, v in lantern_to_eagle_keys(sd, args.dim).items()}, strict=True)
    return head.eval()
