"""Which device to run on, and how much memory a model needs there.

All estimates are rough (±30%): weights (parameters × bytes per value), the KV
cache of one CFG-batched generation, the largest transient activations
(logits over the vocabulary, the VQ decoder at full resolution) and, for
text-conditional models, the FLAN-T5 encoder. They are for choosing a model
and a device before loading it, not for guarantees.
"""

from __future__ import annotations

from typing import Optional

import torch

from .engine.model_args import find_multiple

_DTYPE_BYTES = {torch.float32: 4, torch.float16: 2, torch.bfloat16: 2, torch.float64: 8}


class DeviceError(ValueError):
    field = "device"


def _mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def pick_device(override: Optional[str] = None) -> str:
    """``override`` if given (checked: "cpu", "cuda", "cuda:N", "mps"), else CUDA > MPS > CPU."""
    if override:
        dev = str(override).strip().lower()
        if dev == "auto":
            return pick_device(None)
        if dev == "cpu":
            return "cpu"
        if dev == "cuda" or dev.startswith("cuda:"):
            if not torch.cuda.is_available():
                raise DeviceError(f"device: {override!r} requested but CUDA is not available here; use cpu"
                                  + (" or mps" if _mps_available() else ""))
            if ":" in dev:
                try:
                    idx = int(dev.split(":", 1)[1])
                except ValueError:
                    raise DeviceError(f"device: {override!r} is not a device name (cuda:N)") from None
                if not 0 <= idx < torch.cuda.device_count():
                    raise DeviceError(f"device: {override!r}: there are {torch.cuda.device_count()} CUDA device(s)")
            return dev
        if dev == "mps":
            if not _mps_available():
                raise DeviceError("device: 'mps' requested but Apple's MPS backend is not available here; use cpu")
            return "mps"
        raise DeviceError(f"device: must be one of auto, cpu, cuda, cuda:N, mps; got {override!r}")
    if torch.cuda.is_available():
        return "cuda"
    if _mps_available():
        return "mps"
    return "cpu"


def dtype_bytes(dtype) -> int:
    if isinstance(dtype, str):
        dtype = {"fp32": torch.float32, "float32": torch.float32, "fp16": torch.float16, "float16": torch.float16,
                 "bf16": torch.bfloat16, "bfloat16": torch.bfloat16}[dtype.lower()]
    return _DTYPE_BYTES.get(dtype, 4)


def _ffn(args) -> int:
    hidden = int(2 * 4 * args.dim / 3)
    if args.ffn_dim_multiplier is not None:
        hidden = int(args.ffn_dim_multiplier * hidden)
    return find_multiple(hidden, args.multiple_of)


def memory_breakdown(entry, dtype=torch.bfloat16, draft_length: int = 8, cfg: bool = True,
                     text_encoder_dtype=None) -> dict:
    """Rough bytes per part for generating one image with a catalogue entry."""
    b = dtype_bytes(dtype)
    args = entry.args()
    rows = 2 if cfg else 1
    seq = args.cls_token_num + args.block_size
    n_kv = args.n_kv_head or args.n_head
    head_dim = args.dim // args.n_head
    parts = {
        "weights": int(entry.params * b),
        "kv_cache": int(2 * args.n_layer * rows * seq * n_kv * head_dim * b),
        # the widest forward: the prefill over the prefix, or a draft window; logits are float32
        "activations": int(rows * max(args.cls_token_num, draft_length + 1)
                           * (4 * args.dim + 2 * _ffn(args)) * b * 2
                           + rows * (draft_length + 1) * args.vocab_size * 4 * 3),
        # VQ decoder: fp32 weights, and a few full-resolution 128-channel feature maps
        "vq_decoder": int(entry.vq_params * 4 + 6 * 128 * entry.image_size ** 2 * 4),
    }
    if getattr(entry, "text_encoder", None) is not None:
        tb = dtype_bytes(text_encoder_dtype or dtype)
        parts["text_encoder"] = int(entry.text_encoder.params * tb)
    return parts


def estimate_memory(entry, dtype=torch.bfloat16, **kw) -> int:
    """Bytes needed, roughly: weights + KV cache + activations (+ VQ decoder, + FLAN-T5 for t2i)."""
    return sum(memory_breakdown(entry, dtype, **kw).values())
