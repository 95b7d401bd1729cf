"""Reading and writing weights.

Foreign (official LlamaGen) ``.pt`` files are read with ``weights_only=True``
and never unpickle arbitrary objects. Our own weights are safetensors with the
configuration stored as JSON in the file's metadata.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from .files import atomic_write
from .model import GPT_PRESETS, ModelArgs, Transformer

#: Rows of ``cls_embedding.uncond_embedding`` in an official t2i checkpoint. The official
#: ``CaptionEmbedder`` is built with its default ``token_num=120`` (the T5 caption length)
#: whatever ``cls_token_num`` is, and its forward keeps only the first ``cls_token_num``
#: projected rows, so rows past ``cls_token_num`` are never used. Ours holds ``cls_token_num``.
LLAMAGEN_UNCOND_ROWS = 120
_UNCOND_KEY = "cls_embedding.uncond_embedding"


class CheckpointError(ValueError):
    """A weights file that can't be used; the message names the file and why."""


def load_problem(e: BaseException) -> str:
    """A loader's exception as one line for a message: its type and the first line of its text.

    Only the first line: the rest of torch's refusal advises retrying with ``weights_only=False``,
    which must never be done with a file from elsewhere, and is never printed (nor is that line,
    when it carries the advice)."""
    first = (str(e).strip().splitlines() or [""])[0][:300]
    if "weights_only" in first or "Weights only load failed" in first or "unpickl" in first.lower():
        first = "it holds Python objects other than tensors (refused: only plain tensors are loaded)"
    return f"{type(e).__name__}: {first}"


def read_torch_state_dict(path) -> dict:
    """Official checkpoint → state dict: accepts {"model": sd}, {"module": sd},
    {"state_dict": sd}, {"ema": sd} or a bare state dict."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: no such checkpoint file")
    try:
        try:  # memory-mapped: the tensors stay file-backed pages, so loading a big model needs ~1x its RAM, not 2x
            obj = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        except RuntimeError as e:
            if "mmap" not in str(e):  # only the legacy (pre-zip) format can't be mapped
                raise
            obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # pickle errors, truncated zip, foreign objects
        raise CheckpointError(f"{path}: not a readable PyTorch checkpoint ({load_problem(e)})") from None
    if isinstance(obj, dict):
        for key in ("model", "module", "state_dict", "ema"):
            if key in obj and isinstance(obj[key], dict):
                obj = obj[key]
                break
    if not isinstance(obj, dict) or not all(isinstance(v, torch.Tensor) for v in obj.values()):
        raise CheckpointError(f"{path}: does not hold a state dict of tensors")
    return obj


def describe_mismatch(module: torch.nn.Module, sd: dict):
    """What keeps ``sd`` from loading strictly into ``module`` (None when it fits)."""
    own = module.state_dict()
    missing = sorted(set(own) - set(sd))
    unexpected = sorted(set(sd) - set(own))
    wrong = sorted(k for k in set(own) & set(sd) if tuple(own[k].shape) != tuple(sd[k].shape))
    kinds = sorted(k for k in set(own) & set(sd) if own[k].is_floating_point() != sd[k].is_floating_point())
    parts = []
    if kinds:
        parts.append(f"{len(kinds)} tensor(s) of the wrong kind, e.g. " + ", ".join(
            f"{k}: file {str(sd[k].dtype).replace('torch.', '')} vs model {str(own[k].dtype).replace('torch.', '')}"
            for k in kinds[:3]))
    if missing:
        parts.append(f"{len(missing)} missing key(s), e.g. {missing[:5]}")
    if unexpected:
        parts.append(f"{len(unexpected)} unexpected key(s), e.g. {unexpected[:5]}")
    if wrong:
        parts.append(f"{len(wrong)} shape mismatch(es), e.g. " + ", ".join(
            f"{k}: file {tuple(sd[k].shape)} vs model {tuple(own[k].shape)}" for k in wrong[:3]))
    return "; ".join(parts) or None


def load_state_strict(module: torch.nn.Module, sd: dict, path) -> None:
    """load_state_dict(strict) with a readable error listing what did not fit."""
    problem = describe_mismatch(module, sd)
    if problem:
        raise CheckpointError(f"{path}: weights do not fit this architecture: {problem}")
    module.load_state_dict(sd, strict=True)


def load_llamagen_gpt(path, **model_args) -> Transformer:
    """Official LlamaGen GPT checkpoint → Transformer in eval mode (fp32).

    ``model_args`` are official ModelArgs fields; ``preset="GPT-XL"`` may be
    given to fill the size fields from a named preset.

    A t2i checkpoint's unconditional caption has 120 rows (the official
    construction, :data:`LLAMAGEN_UNCOND_ROWS`); the first ``cls_token_num`` are
    the ones the model uses.
    """
    preset = model_args.pop("preset", None)
    if preset is not None:
        if preset not in GPT_PRESETS:
            raise ValueError(f"unknown GPT preset {preset!r}; choose from {', '.join(GPT_PRESETS)}")
        model_args = {**GPT_PRESETS[preset], **model_args}
    args = ModelArgs.from_dict(model_args)
    sd = read_torch_state_dict(path)
    sd.pop("freqs_cis", None)  # some official checkpoints carry the rotary table; it is recomputed
    uncond = sd.get(_UNCOND_KEY)
    if args.model_type == "t2i" and uncond is not None and uncond.ndim == 2 and uncond.shape[0] > args.cls_token_num:
        sd[_UNCOND_KEY] = uncond[: args.cls_token_num]
    model = Transformer(args)
    load_state_strict(model, {k: v.float() for k, v in sd.items()}, path)
    return model.eval()


def save_llamagen_gpt(model: Transformer, path) -> None:
    """Write ``{"model": state_dict}``, the official layout (for tests and export).

    A t2i model's unconditional caption is padded with zero rows to the official
    120 (rows the official code never reads), so the official construction loads it.
    """
    sd = dict(model.state_dict())
    uncond = sd.get(_UNCOND_KEY)
    if model.model_type == "t2i" and uncond is not None and uncond.shape[0] < LLAMAGEN_UNCOND_ROWS:
        pad = uncond.new_zeros(LLAMAGEN_UNCOND_ROWS - uncond.shape[0], uncond.shape[1])
        sd[_UNCOND_KEY] = torch.cat([uncond, pad])
    atomic_write(path, lambda p: torch.save({"model": sd}, p))


# --------------------------------------------------------------------------- our format


def save_weights(module_or_sd, path, config: dict, kind: str, dtype: Optional[torch.dtype] = torch.float16) -> None:
    """safetensors file with ``{"kind": ..., "config": json}`` metadata."""
    sd = module_or_sd.state_dict() if isinstance(module_or_sd, torch.nn.Module) else module_or_sd
    out = {}
    for k, v in sd.items():
        v = v.detach().cpu()
        if dtype is not None and v.is_floating_point():
            v = v.to(dtype)
        out[k] = v.contiguous()
    meta = {"kind": kind, "config": json.dumps(config, sort_keys=True)}
    atomic_write(path, lambda p: save_file(out, p, metadata=meta))


def load_weights(path, kind: Optional[str] = None):
    """→ (state_dict in fp32, config dict). Checks the file's kind when given."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: no such weights file")
    try:
        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata() or {}
            sd = {k: f.get_tensor(k) for k in f.keys()}
    except Exception as e:
        raise CheckpointError(f"{path}: not a readable safetensors file ({type(e).__name__}: {e})") from None
    if kind is not None and meta.get("kind") != kind:
        raise CheckpointError(f"{path}: holds {meta.get('kind') or 'unknown'} weights, expected {kind}")
    try:
        config = json.loads(meta.get("config", "{}"))
    except json.JSONDecodeError:
        raise CheckpointError(f"{path}: its configuration metadata is not valid JSON") from None
    if not isinstance(config, dict):
        raise CheckpointError(f"{path}: its configuration metadata is not a JSON object")
    for k, v in sd.items():
        if v.is_floating_point() and v.dtype not in (torch.float16, torch.bfloat16, torch.float32):
            raise CheckpointError(f"{path}: tensor {k!r} is {str(v.dtype).replace('torch.', '')}; "
                                  "weights must be float16, bfloat16 or float32")
        if v.is_floating_point() and not bool(torch.isfinite(v).all()):
            raise CheckpointError(f"{path}: tensor {k!r} holds NaN or infinite values (a corrupt or broken file)")
    # Integer tensors (counters such as num_batches_tracked) pass here; load_state_strict
    # refuses one where the module holds a float.
    return {k: (v.float() if v.is_floating_point() else v) for k, v in sd.items()}, config


def stored_as(path, dtype: torch.dtype) -> bool:
    """Whether every floating tensor of a readable safetensors file is stored in ``dtype``: such a
    file can be copied byte for byte where re-saving it in ``dtype`` would change only its metadata."""
    try:
        with safe_open(str(path), framework="pt") as f:
            return all(not f.get_slice(k).get_dtype().startswith(("F", "BF")) or
                       f.get_slice(k).get_dtype() == {torch.float16: "F16", torch.bfloat16: "BF16",
                                                       torch.float32: "F32"}.get(dtype)
                       for k in f.keys())
    except Exception:
        return False


def save_gpt(model: Transformer, path, dtype=torch.float16) -> None:
    save_weights(model, path, model.config.to_dict(), "gpt", dtype)


def check_size(args: ModelArgs, sd: dict, path) -> None:
    """The configuration must describe the tensors the file holds, checked before anything is
    allocated: the model is built on the meta device (no memory) and its parameter count compared
    with the file's, so a few bytes of metadata cannot ask for gigabytes (``num_classes`` 2·10⁷)."""
    try:
        with torch.device("meta"):
            want = sum(p.numel() for p in Transformer(args).parameters())
    except (TypeError, ValueError, RuntimeError) as e:
        raise CheckpointError(f"{path}: bad model configuration ({str(e)[:200]})") from None
    have = sum(v.numel() for v in sd.values())
    if want != have and want > have:
        raise CheckpointError(f"{path}: its configuration describes {want:,} parameters but the file holds "
                              f"{have:,} values (refused before allocating)")


def load_gpt(path) -> Transformer:
    sd, config = load_weights(path, "gpt")
    try:
        args = ModelArgs.from_dict(config)
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"{path}: bad model configuration ({e})") from None
    check_size(args, sd, path)
    try:
        model = Transformer(args)
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"{path}: bad model configuration ({e})") from None
    load_state_strict(model, sd, path)
    return model.eval()
