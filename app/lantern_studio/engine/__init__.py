"""The Qt-free decoding engine: tensors in, tokens and events out.

Scripting API::

    from lantern_studio.engine import load_llamagen_gpt, load_llamagen_vq
    gpt = load_llamagen_gpt(path, **model_args)
    logits = gpt.teacher_forced_logits(idx, cond, caption_mask=None)
    vq = load_llamagen_vq(path, **vq_args)
    codes = vq.encode(images)
    images = vq.decode_codes(codes)
"""

from .acceptance import ProximityTable, Relaxation, step_output_distribution, verify_chain
from .checkpoints import CheckpointError, load_gpt, load_llamagen_gpt, save_gpt, save_llamagen_gpt
from .decode import Decoding, DecodeStats, StepEvent, generate_tokens
from .drafters import EagleDrafter, EagleHead, JacobiDrafter
from .model import GPT_PRESETS, ModelArgs, Transformer, preset_args
from .pipeline import GenerationResult, ImagePipeline
from .sampling import SamplingParams, probs_from_logits
from .settings import GenerationSettings, SettingsError
from .text import CaptionConditioner, ClassConditioner, HashEncoder, MiniLMEncoder, PromptError

_TOKENIZER_NAMES = {"VQModel", "VQArgs", "VQ_PRESETS", "load_llamagen_vq", "load_vq", "save_vq"}


def __getattr__(name):  # the tokenizer pulls in conv stacks; import it on first use
    if name in _TOKENIZER_NAMES:
        from . import tokenizer

        return getattr(tokenizer, name)
    raise AttributeError(name)


def generate(pipeline: ImagePipeline, prompt: str, settings: GenerationSettings | None = None, **kw) -> GenerationResult:
    """Whole image from a prompt: ``generate(pipe, "a red heart", GenerationSettings(seed=1))``."""
    return pipeline.generate(prompt, settings, **kw)
