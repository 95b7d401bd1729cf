"""The Qt-free decoding engine: tensors in, tokens and events out.

Scripting API::

    from lantern_studio.engine import load_llamagen_gpt, load_llamagen_vq
    gpt = load_llamagen_gpt(path, **model_args)
    logits = gpt.teacher_forced_logits(idx, cond, caption_mask=None)
    vq = load_llamagen_vq(path, **vq_args)
    codes = vq.encode(images)
    images = vq.decode_codes(codes)

The names below are imported on first use (PEP 562), so importing one light
submodule (``engine.files``, ``engine.decisions``) does not load torch.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "acceptance": ("verify_chain",),
    "checkpoints": ("CheckpointError", "load_gpt", "load_llamagen_gpt", "save_gpt", "save_llamagen_gpt"),
    "decode": ("Decoding", "DecodeStats", "StepEvent", "generate_tokens"),
    "drafters": ("EagleDrafter", "EagleHead", "JacobiDrafter"),
    "model": ("GPT_PRESETS", "ModelArgs", "Transformer", "preset_args"),
    "neighbours": ("ProximityTable",),
    "pipeline": ("GenerationResult", "ImagePipeline"),
    "relaxation": ("Relaxation",),
    "sampling": ("SamplingParams", "probs_from_logits"),
    "settings": ("GenerationSettings", "SettingsError"),
    "text": ("CaptionConditioner", "ClassConditioner", "HashEncoder", "MiniLMEncoder", "PromptError"),
    "tokenizer": ("VQModel", "VQArgs", "VQ_PRESETS", "load_llamagen_vq", "load_vq", "save_vq"),
}
_HOME = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_HOME) + ["generate"]


def __getattr__(name):
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))


def generate(pipeline, prompt: str, settings=None, **kw):
    """Whole image from a prompt: ``generate(pipe, "a red heart", GenerationSettings(seed=1))``."""
    return pipeline.generate(prompt, settings, **kw)
