"""DeepSeek's Janus-Pro as a decode target: transformers' ``JanusForConditionalGeneration`` behind the
engine's target protocol (:class:`~lantern_studio.engine.target.DecodeTarget`).

Why here and not in ``engine/``: this is an adapter of a foreign library's model, like the loaders of
LlamaGen's checkpoints, and ``models/`` is where loading lives; the engine states the protocol and never
imports transformers (its import costs seconds and the bundled model never needs it). transformers is
imported only when a Janus model is loaded or built.

What the decode loops see (the same loops as for the engine's own GPT: vanilla, exact speculative,
LANTERN / LANTERN++ / the step bound, Jacobi drafting, Compare, Sweep, the bench):

* :class:`JanusImageModel` — the picture-drawing half of Janus (the Llama language model, Janus's
  generation embeddings + aligner for image tokens, its generation head for their logits) with the facts
  a decode loop reads: ``vocab_size`` (the VQ codebook, 16,384), ``block_size`` (576 = 24×24),
  ``config.grid_size`` and ``null_condition`` (the unconditional rows);
* :class:`JanusTarget` — one sequence's cache (transformers' ``DynamicCache``): ``prefill`` of the
  conditioning rows, ``step`` of a window of image tokens at their positions, the cache cut back
  (``DynamicCache.crop``) to the accepted length before each step, the image head's logits;
* :class:`JanusVQ` — Janus's own VQ decoder (fp32) and its codebook, l2-normalised as Janus looks codes
  up, for LANTERN's neighbours (the same table code and cache as LlamaGen's);
* :class:`JanusPromptConditioner` — the prompt formatted as Janus's generation expects: its processor's
  chat template (user turn, assistant prompt), then the image-start token ``<begin_of_image>``.

Guidance is Janus's own: the conditional rows, then the same rows with every token but BOS and the
image-start token replaced by the pad token (attention mask unchanged), logits mixed
``uncond + s·(cond − uncond)``; defaults CFG 5, temperature 1, no top-k / top-p (Janus's generation).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors import SafetensorError

from ..engine.checkpoints import CheckpointError
from ..engine.compiled import NOT_AVAILABLE
from ..engine.pipeline import ImagePipeline, ModelSource
from ..engine.precision import name as precision_name, resolve
from ..engine.settings import GenerationSettings
from ..engine.text import Conditioning, check_prompt
from ..paths import cache_dir

JANUS_DEFAULTS = GenerationSettings(cfg_scale=5.0, temperature=1.0, top_k=0, top_p=1.0, drafter="none")
KIND = "janus"


# --------------------------------------------------------------------------- the target


@dataclass(frozen=True)
class JanusFacts:
    """The configuration facts the engine reads of a target model (``model.config``)."""

    grid_size: int
    dim: int
    n_layer: int
    vocab_size: int
    text_vocab_size: int


class JanusImageModel(nn.Module):
    """The image-generating parts of a ``JanusForConditionalGeneration``, as the engine's target model."""

    fp32_buffers = ()  # precision.cast_transformer: the language model's rotary tables are recomputed in fp32
    model_type = KIND
    compiled_calls = 0

    def __init__(self, hf_model, bos_id: int, pad_id: int, boi_id: int):
        super().__init__()
        m = hf_model.model
        self.language_model = m.language_model
        self.generation_embeddings = m.generation_embeddings
        self.generation_aligner = m.generation_aligner
        self.generation_head = m.generation_head
        vq = m.vqmodel.config
        grid = int(vq.num_patches)
        n_tokens = int(hf_model.config.vision_config.num_image_tokens)
        if grid * grid != n_tokens:
            raise CheckpointError(f"Janus config: {n_tokens} image tokens is not a {grid}×{grid} grid")
        self.vocab_size = int(vq.num_embeddings)
        self.block_size = n_tokens
        text = hf_model.config.text_config
        self.config = JanusFacts(grid, int(text.hidden_size), int(text.num_hidden_layers), self.vocab_size,
                                 int(text.vocab_size))
        self.bos_id, self.pad_id, self.boi_id = int(bos_id), int(pad_id), int(boi_id)

    @property
    def seq_len(self) -> int:
        return self.block_size

    def null_condition(self, cond: torch.Tensor) -> torch.Tensor:
        """Janus's unconditional rows: every prompt token but BOS and ``<begin_of_image>`` → pad."""
        keep = (cond == self.bos_id) | (cond == self.boi_id)
        return torch.where(keep, cond, torch.full_like(cond, self.pad_id))

    def embed_prompt(self, ids: torch.Tensor) -> torch.Tensor:
        return self.language_model.get_input_embeddings()(ids)

    def embed_image(self, tokens: torch.Tensor) -> torch.Tensor:
        """Image token ids → the language model's inputs (Janus's ``prepare_embeddings_for_image_generation``)."""
        return self.generation_aligner(self.generation_embeddings(tokens))

    def head(self, hidden: torch.Tensor) -> torch.Tensor:
        """Final hidden states → image-token logits (Janus's generation head), fp32."""
        return self.generation_head(hidden).float()

    def decode_target(self) -> "JanusTarget":
        """A decode target over these weights with a cache of its own (``engine.runner.target_for``)."""
        return JanusTarget(self)


class _NoGraphs:
    """What ``compile`` leaves on a transformers target: no graphs, and the reason (``StepGraphs``' surface)."""

    failed = True
    compiled_calls = 0
    widths: tuple = ()
    note = f"{NOT_AVAILABLE} for transformers-backed models (Janus decodes eagerly)"

    def run(self, *_a):
        return None


class JanusTarget:
    """One decoder's state over a :class:`JanusImageModel`: the engine's decode-target protocol.

    ``step(tokens, first_index)`` feeds image tokens at image indices first_index… and first cuts the
    cache back to the prefix + ``first_index`` positions: whatever a rejected draft left there is gone,
    which is what the engine's static caches do by overwriting (the decode loop's implicit roll-back)."""

    compiled_calls = 0

    def __init__(self, model: JanusImageModel):
        self.model = model
        self.graphs = None
        self.cache = None
        self.mask: Optional[torch.Tensor] = None  # (rows, prefix) the prefix's attention mask
        self.prefix = 0
        self.start_pos: Optional[torch.Tensor] = None  # (rows, 1) position of image token 0 in each row

    # the runner's surface the pipeline and the studio use
    def twin(self) -> "JanusTarget":
        return JanusTarget(self.model)

    def clear_cache(self) -> None:
        self.cache = None

    def compile(self, widths=(), say=None):
        self.graphs = _NoGraphs()
        if say is not None:
            say(self.graphs.note)
        return self.graphs

    def warm(self, *_a, **_k) -> None:
        return None

    # the decode target
    def start_sequence(self, batch: int, caption_mask: Optional[torch.Tensor] = None) -> None:
        from transformers import DynamicCache  # noqa: PLC0415 - seconds to import; only Janus models need it

        self.cache = DynamicCache(config=self.model.language_model.config)
        self.mask = None if caption_mask is None else caption_mask.to(torch.long)
        self.prefix = 0

    @torch.no_grad()
    def prefill(self, cond: torch.Tensor):
        """The prompt rows (B, L) (CFG: conditional, then unconditional) → (logits for image token 0 (B, V)
        fp32, final hidden state (B, dim))."""
        m = self.model
        b, length = cond.shape
        mask = self.mask if self.mask is not None else torch.ones(b, length, dtype=torch.long, device=cond.device)
        self.mask = mask
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        out = m.language_model(inputs_embeds=m.embed_prompt(cond), attention_mask=mask, position_ids=pos,
                               cache=self.cache, use_cache=True)
        self.prefix = length
        self.start_pos = mask.sum(-1, keepdim=True)
        last = out.last_hidden_state[:, -1]
        return m.head(last), last

    def cut_back(self, length: int) -> None:
        """Keep the cache's first ``length`` positions (prefix + accepted image tokens)."""
        have = self.cache.get_seq_length()
        if have > length:
            self.cache.crop(length - have)  # transformers 5: a negative count of positions to drop
        elif have < length:
            raise RuntimeError(f"Janus cache holds {have} positions, a step needs {length}")

    @torch.no_grad()
    def step(self, tokens: torch.Tensor, first_index: int):
        """Image tokens (B, S) at image indices first_index… → (logits (B, S, V) fp32 where row j predicts
        image token first_index+j+1, final hidden states (B, S, dim))."""
        m = self.model
        b, s = tokens.shape
        self.cut_back(self.prefix + first_index)
        pos = self.start_pos + first_index + torch.arange(s, device=tokens.device)[None]
        mask = torch.cat([self.mask[:b], self.mask.new_ones(b, first_index + s)], dim=1)
        out = m.language_model(inputs_embeds=m.embed_image(tokens), attention_mask=mask, position_ids=pos,
                               cache=self.cache, use_cache=True)
        h = out.last_hidden_state
        return m.head(h), h


class JanusVQ(nn.Module):
    """Janus's VQ decoder (LlamaGen's VQ design, 16,384 codes of 8 dims, downsample 16) for the pipeline."""

    def __init__(self, vqmodel):
        super().__init__()
        self.vqmodel = vqmodel.float().eval()

    def codebook(self) -> torch.Tensor:
        """(V, D) code vectors as Janus looks them up (l2-normalised): LANTERN's latent distances."""
        return F.normalize(self.vqmodel.quantize.embedding.weight.detach().float(), p=2, dim=-1)

    @torch.no_grad()
    def decode_codes(self, codes: torch.Tensor) -> torch.Tensor:
        """(B, h, w) token ids → (B, 3, H, W) in [-1, 1]."""
        return self.vqmodel.decode(codes.reshape(codes.shape[0], -1))


class JanusPromptConditioner:
    """A prompt → Janus's image-generation input ids: the chat template's user turn and assistant prompt,
    then ``<begin_of_image>`` (``JanusProcessor(…, generation_mode="image")``)."""

    warm_prompt = "a red heart"

    def __init__(self, processor):
        self.processor = processor

    def format(self, prompt: str) -> str:
        messages = [{"role": "user", "content": [{"type": "text", "text": prompt}]}]
        return self.processor.apply_chat_template(messages, add_generation_prompt=True)

    def __call__(self, prompt: str, settings=None) -> Conditioning:
        text = check_prompt(prompt)
        enc = self.processor(text=self.format(text), generation_mode="image", return_tensors="pt")
        return Conditioning(enc["input_ids"], enc["attention_mask"], note=text)


# --------------------------------------------------------------------------- folders and memory


def is_janus_folder(folder) -> bool:
    """Whether ``folder`` holds a transformers ``save_pretrained`` Janus model (config.json, model_type janus)."""
    path = Path(folder) / "config.json"
    if not path.is_file() or (Path(folder) / "model.json").is_file():
        return False
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("model_type") == KIND
    except (OSError, ValueError, AttributeError):
        return False


def parameter_counts(config) -> dict:
    """{part: parameters} of a Janus config, counted on the meta device (nothing allocated)."""
    from transformers import JanusForConditionalGeneration  # noqa: PLC0415 - seconds to import; only Janus models need it

    with torch.device("meta"):
        model = JanusForConditionalGeneration(config)
    m = model.model

    def count(mod):
        return sum(p.numel() for p in mod.parameters())

    # "dropped": loaded, then freed (the understanding encoder; the text head when it is not tied)
    text_head = 0 if model.config.tie_word_embeddings else count(model.lm_head)
    return {"language_model": count(m.language_model),
            "generation": count(m.generation_embeddings) + count(m.generation_aligner) + count(m.generation_head),
            "vq": count(m.vqmodel), "dropped": count(m.vision_model) + count(m.aligner) + text_head}


def memory_needed(config, dtype: torch.dtype, prompt_tokens: int = 64, window: int = 25) -> dict:
    """Rough bytes to load and run one CFG generation: the whole checkpoint while it loads (the
    understanding encoder is dropped after), the VQ decoder in fp32, the KV cache of 2 rows, activations."""
    b = torch.finfo(dtype).bits // 8
    n = parameter_counts(config)
    text = config.text_config
    heads = text.num_attention_heads
    kv = getattr(text, "num_key_value_heads", None) or heads
    head_dim = text.hidden_size // heads
    seq = prompt_tokens + config.vision_config.num_image_tokens
    vq_v = config.vq_config.num_embeddings
    return {"weights": (n["language_model"] + n["generation"] + n["dropped"]) * b,
            "vq_decoder": n["vq"] * 4 + 6 * 128 * (16 * config.vq_config.num_patches) ** 2 * 4,
            "kv_cache": 2 * text.num_hidden_layers * 2 * seq * kv * head_dim * b,
            "activations": 2 * max(prompt_tokens, window) * (4 * text.hidden_size + 2 * text.intermediate_size) * b * 2
            + 2 * window * vq_v * 4 * 3}


def free_memory(device) -> Optional[int]:
    """Bytes free on ``device`` (CUDA: the driver's count; CPU: MemAvailable), or None where unknown."""
    dev = torch.device(device)
    if dev.type == "cuda":
        return int(torch.cuda.mem_get_info(dev)[0])
    if dev.type != "cpu":
        return None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _gb(n: int) -> str:
    return f"{n / 1e9:.1f} GB"


def check_fits(config, dtype, device, label: str) -> None:
    """CheckpointError in one line (needed vs free) when ``device`` cannot hold the model."""
    need = sum(memory_needed(config, dtype).values())
    free = free_memory(device)
    if os.environ.get("LANTERN_MEMORY_FREE"):  # tests and what-ifs: pretend this many bytes are free
        free = int(float(os.environ["LANTERN_MEMORY_FREE"]))
    if free is not None and need > free:
        raise CheckpointError(f"{label}: needs ≈{_gb(need)} in {precision_name(dtype)} on {torch.device(device).type}, "
                              f"but only {_gb(free)} is free; use a machine with more memory"
                              + (" or a GPU" if torch.device(device).type == "cpu" else ""))


def _special_ids(hf_model, tokenizer) -> tuple:
    gc = hf_model.generation_config
    bos = gc.bos_token_id if gc.bos_token_id is not None else tokenizer.bos_token_id
    pad = gc.pad_token_id if gc.pad_token_id is not None else tokenizer.pad_token_id
    boi_token = getattr(tokenizer, "boi_token", None) or "<begin_of_image>"
    boi = tokenizer.convert_tokens_to_ids(boi_token)
    if isinstance(bos, (list, tuple)):
        bos = bos[0]
    if bos is None or pad is None or boi is None or boi == tokenizer.unk_token_id:
        raise CheckpointError("Janus folder: its tokenizer lacks BOS, pad or <begin_of_image>")
    return int(bos), int(pad), int(boi)


def load_janus_dir(folder, device: Optional[str] = None, precision="auto", name: Optional[str] = None,
                   source: Optional[ModelSource] = None) -> ImagePipeline:
    """A ``save_pretrained`` Janus folder (model + processor) → an ImagePipeline: the language model and
    generation head in ``precision`` ('auto': bf16 where the device runs it natively, else fp32), the VQ
    decoder fp32, the understanding encoder dropped. Refuses in one line when the device cannot hold it."""
    folder = Path(folder)
    device = device or "cpu"
    dtype = precision if isinstance(precision, torch.dtype) else resolve(precision, device)
    label = name or folder.name
    try:
        from transformers import JanusConfig, JanusForConditionalGeneration, JanusProcessor  # noqa: PLC0415 - seconds to import; only Janus models need it
        config = JanusConfig.from_pretrained(folder, local_files_only=True)
    except (OSError, ValueError, TypeError) as e:
        raise CheckpointError(f"{folder}: not a usable Janus folder ({e})") from None
    check_fits(config, dtype, device, label)
    try:
        # safetensors only (a pickled checkpoint in a foreign folder never runs), nothing fetched, no remote code
        hf = JanusForConditionalGeneration.from_pretrained(folder, dtype=dtype, use_safetensors=True,
                                                           local_files_only=True).eval()
        processor = JanusProcessor.from_pretrained(folder, local_files_only=True)
    except (OSError, ValueError, KeyError, TypeError, RuntimeError, SafetensorError) as e:  # a broken or foreign file
        raise CheckpointError(f"{folder}: not a usable Janus folder ({type(e).__name__}: {' '.join(str(e).split())[:300]})") from None
    bos, pad, boi = _special_ids(hf, processor.tokenizer)
    target = JanusImageModel(hf, bos, pad, boi)
    vq = JanusVQ(hf.model.vqmodel)
    del hf  # the understanding encoder and the text head go with it
    pipe = ImagePipeline(target, vq, JanusPromptConditioner(processor), None, JANUS_DEFAULTS, label,
                         table_cache=cache_dir() / "neighbours",
                         source=source or ModelSource(folder=folder, manifest={"format": "transformers/janus"}))
    if device != "cpu":
        pipe.to(device)
    return pipe


# --------------------------------------------------------------------------- Janus-Pro's shapes


def janus_pro_config(size: str = "1B"):
    """The JanusConfig of Janus-Pro-1B or -7B (the shapes of deepseek-community/Janus-Pro-*; no weights)."""
    from transformers import JanusConfig, LlamaConfig  # noqa: PLC0415 - seconds to import; only Janus models need it

    if size.upper() == "1B":
        dim, layers, heads, ffn = 2048, 24, 16, 5632
    elif size.upper() == "7B":
        dim, layers, heads, ffn = 4096, 30, 32, 11008
    else:
        raise ValueError(f"Janus-Pro size: 1B or 7B, got {size!r}")
    text = LlamaConfig(hidden_size=dim, intermediate_size=ffn, num_hidden_layers=layers, num_attention_heads=heads,
                       num_key_value_heads=heads, vocab_size=102400, max_position_embeddings=16384,
                       rms_norm_eps=1e-6, bos_token_id=100000, eos_token_id=100001, pad_token_id=100015)
    vision = dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, image_size=384, patch_size=16,
                  projection_dim=dim, num_image_tokens=576)
    vq = dict(embed_dim=8, num_embeddings=16384, projection_dim=dim, image_token_embed_dim=dim)
    return JanusConfig(text_config=text.to_dict(), vision_config=vision, vq_config=vq, image_token_id=100581,
                       tie_word_embeddings=False)  # Janus-Pro's text head is its own (dropped: it draws no pictures)
