"""Numeric precision of the decode path: which dtype weights and KV caches use.

``auto`` picks bf16 where the hardware multiplies bf16 natively — CUDA devices
that support it, CPUs with AVX512_BF16 or AMX-BF16 — and fp32 elsewhere (an
emulated bf16 matmul is slower than fp32). Only the transformer weights and
their KV caches change dtype; the rotary table, normalisation statistics,
logits, probabilities and acceptance stay fp32 (see :mod:`.model`), and the VQ
decoder stays fp32.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Optional

import torch

PRECISIONS = ("auto", "fp32", "bf16", "fp16")
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
NAMES = {v: k for k, v in DTYPES.items()}


class PrecisionError(ValueError):
    field = "precision"


@functools.lru_cache(maxsize=1)
def cpu_flags() -> frozenset:
    """CPU feature flags from /proc/cpuinfo (empty where there is none, e.g. macOS)."""
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith(("flags", "Features")):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def native_bf16(device: str | torch.device = "cpu") -> tuple[bool, str]:
    """(whether ``device`` runs bf16 matmuls natively, the reason in words)."""
    dev = torch.device(device)
    if dev.type == "cuda":
        ok = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
        return ok, "CUDA device supports bf16" if ok else "CUDA device without bf16"
    if dev.type == "mps":
        return False, "MPS: bf16 not used"
    flags = cpu_flags()
    found = sorted(flags & {"avx512_bf16", "amx_bf16"})
    if found:
        return True, "CPU has " + " + ".join(f.upper() for f in found)
    if not flags:
        probe = getattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", None)
        try:
            if probe is not None and bool(probe()):
                return True, "oneDNN reports native bf16"
        except Exception:  # pragma: no cover - depends on the build
            pass
    return False, "CPU without AVX512_BF16/AMX"


def resolve(precision: Optional[str], device: str | torch.device = "cpu") -> torch.dtype:
    """A precision setting ('auto', 'fp32', 'bf16', 'fp16' or None = auto) → a dtype."""
    p = "auto" if precision is None else str(precision).strip().lower()
    if p not in PRECISIONS:
        raise PrecisionError(f"precision: must be one of {', '.join(PRECISIONS)}; got {precision!r}")
    if p == "auto":
        return torch.bfloat16 if native_bf16(device)[0] else torch.float32
    dtype = DTYPES[p]
    if dtype is torch.float16 and torch.device(device).type == "cpu":
        raise PrecisionError("precision: fp16 has no fast CPU kernels here; use fp32 or bf16 on the CPU")
    return dtype


def name(dtype: torch.dtype) -> str:
    return NAMES.get(dtype, str(dtype).replace("torch.", ""))


def cast_transformer(module: torch.nn.Module, dtype: torch.dtype) -> torch.nn.Module:
    """Cast a GPT or drafter head's weights to ``dtype``; fp32-only buffers stay fp32.

    Modules mark such buffers by listing their names in ``fp32_buffers`` (the
    rotary table: its cos/sin lose too much in bf16 and complex bf16 has no
    kernels).
    """
    keep = []
    for sub in module.modules():
        for buf in getattr(sub, "fp32_buffers", ()):
            t = getattr(sub, buf, None)
            if t is not None:
                keep.append((sub, buf, t.float().clone()))  # copied before the cast can round it
    module.to(dtype)
    for sub, buf, t in keep:
        setattr(sub, buf, t)
    return module
