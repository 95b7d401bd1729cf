"""The transformer's configuration, with the official LlamaGen field names, and its presets."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Optional


def find_multiple(n: int, k: int) -> int:
    return n if n % k == 0 else n + k - (n % k)


@dataclass
class ModelArgs:
    """Configuration with the official LlamaGen field names."""

    dim: int = 4096
    n_layer: int = 32
    n_head: int = 32
    n_kv_head: Optional[int] = None
    multiple_of: int = 256
    ffn_dim_multiplier: Optional[float] = None
    rope_base: float = 10000
    norm_eps: float = 1e-5
    initializer_range: float = 0.02
    token_dropout_p: float = 0.1
    attn_dropout_p: float = 0.0
    resid_dropout_p: float = 0.1
    ffn_dropout_p: float = 0.1
    drop_path_rate: float = 0.0
    num_classes: int = 1000
    # Not in LlamaGen: > 0 makes a c2i model's class factorised (class_embedding.py): num_classes
    # identities + num_styles art styles + num_tones skin tones, each a vector of its own, summed
    num_styles: int = 0
    num_tones: int = 0
    caption_dim: int = 2048
    class_dropout_prob: float = 0.1
    model_type: str = "c2i"
    vocab_size: int = 16384
    cls_token_num: int = 1
    block_size: int = 256
    max_batch_size: int = 32
    max_seq_len: int = 2048

    @classmethod
    def from_dict(cls, d: dict) -> "ModelArgs":
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"unknown ModelArgs fields: {', '.join(unknown)}")
        return cls(**d)

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def grid_size(self) -> int:
        return math.isqrt(self.block_size)


# Official presets (layers, heads, width).
GPT_PRESETS = {
    "GPT-B": dict(n_layer=12, n_head=12, dim=768),
    "GPT-L": dict(n_layer=24, n_head=16, dim=1024),
    "GPT-XL": dict(n_layer=36, n_head=20, dim=1280),
    "GPT-XXL": dict(n_layer=48, n_head=24, dim=1536),
    "GPT-XXXL": dict(n_layer=48, n_head=40, dim=2560),
    "GPT-1B": dict(n_layer=22, n_head=32, dim=2048),
    "GPT-3B": dict(n_layer=24, n_head=32, dim=3200),
    "GPT-7B": dict(n_layer=32, n_head=32, dim=4096),
}


def preset_args(name: str, **overrides) -> ModelArgs:
    if name not in GPT_PRESETS:
        raise ValueError(f"unknown GPT preset {name!r}; choose from {', '.join(GPT_PRESETS)}")
    return ModelArgs(**{**GPT_PRESETS[name], **overrides})
