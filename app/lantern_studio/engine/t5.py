"""FLAN-T5 caption embeddings for LlamaGen's text-conditional models.

LlamaGen (``language/t5.py`` and ``autoregressive/sample/sample_t2i.py``) feeds
its t2i GPT the FLAN-T5-XL encoder's last hidden states: the caption is cleaned
and lower-cased, tokenized with the T5 tokenizer (EOS appended, at most 120
tokens), encoded, and then *left*-padded to 120 positions — the valid token
states moved to the end, the padding in front zeroed and masked out. That is
exactly :func:`engine.text.left_pad` over the valid token states, which is what
:class:`T5CaptionConditioner` does. (The T5 encoder's outputs at valid
positions do not depend on how many padding positions follow them: padding is
masked out of attention, and T5's position bias is relative.)

The model and tokenizer are loaded lazily from a local folder (an HF cache
snapshot) with ``local_files_only=True``: nothing is downloaded here. On CUDA the
encoder runs in bfloat16 (LlamaGen's default), elsewhere in float32.

Caption cleaning: LlamaGen runs PixArt's ``clean_caption`` twice (it needs
``ftfy`` and ``bs4``). :func:`clean_caption` keeps the parts that matter for
typed prompts — URL-unquoting, lower-casing, URLs and @handles removed, dash and
quote normalisation, whitespace — without those dependencies.
"""

from __future__ import annotations

import html
import json
import re
import threading
import urllib.parse as ul
from pathlib import Path
from typing import Optional, Sequence

import torch
from safetensors import safe_open

from .checkpoints import CheckpointError, load_problem
from .text import CaptionConditioner, left_pad

_URL = re.compile(r"\b((?:https?:(?:/{1,3}|[a-zA-Z0-9%])|[a-zA-Z0-9.\-]+[.](?:com|co|ru|net|org|edu|gov|it)[\w/-]*\b/?(?!@)))")
_DASHES = re.compile("[\u002D\u058A\u05BE\u1400\u1806\u2010-\u2015\u2E17\u2E1A\u2E3A\u2E3B\u2E40\u301C\u3030"
                     "\u30A0\uFE31\uFE32\uFE58\uFE63\uFF0D]+")


def clean_caption(text: str) -> str:
    """A dependency-free subset of LlamaGen's caption cleaning (see the module docstring)."""
    t = ul.unquote_plus(str(text)).strip().lower()
    t = html.unescape(html.unescape(t))
    t = re.sub(r"<person>", "person", t)
    t = _URL.sub("", t)
    t = re.sub(r"<[^>]+>", " ", t)  # html tags
    t = re.sub(r"@[\w\d]+\b", "", t)
    t = _DASHES.sub("-", t)
    t = re.sub(r"[`´«»“”¨]", '"', t)
    t = re.sub(r"[‘’]", "'", t)
    t = re.sub(r"&quot;?|&amp", "", t)
    t = re.sub(r"\\n", " ", t)
    t = re.sub(r"[\"\']{2,}", '"', t)
    t = re.sub(r"\.{2,}", " ", t)
    t = re.sub(r"\s+", " ", t).strip()
    t = re.sub(r"^[\"\']([\w\W]+)[\"\']$", r"\1", t)
    return t.strip()


def t5_encoder_params(config: dict) -> int:
    """Parameters of a T5 *encoder* (embedding + blocks + final norm) from its config.json."""
    d = int(config["d_model"])
    heads, d_kv = int(config["num_heads"]), int(config["d_kv"])
    d_ff = int(config["d_ff"])
    layers = int(config["num_layers"])
    gated = str(config.get("feed_forward_proj", "relu")).startswith("gated")
    attn = 4 * d * heads * d_kv
    ffn = (3 if gated else 2) * d * d_ff
    per_layer = attn + ffn + 2 * d
    bias = int(config.get("relative_attention_num_buckets", 32)) * heads
    return int(config["vocab_size"]) * d + layers * per_layer + bias + d


#: config.json fields every T5 encoder needs, with the largest value accepted (FLAN-T5-XXL is far below).
T5_CONFIG_LIMITS = {"d_model": 65_536, "d_kv": 4_096, "num_heads": 1_024, "d_ff": 262_144, "num_layers": 1_024,
                    "vocab_size": 4_000_000}


def read_t5_config(folder) -> dict:
    """A T5 folder's config.json, checked: a JSON object whose sizes are positive integers within
    :data:`T5_CONFIG_LIMITS`. Anything else is one CheckpointError naming the file and the field."""
    path = Path(folder) / "config.json"
    if not path.is_file():
        raise CheckpointError(f"{folder}: no config.json (not a T5 model folder)")
    try:
        if path.stat().st_size > 1 << 20:
            raise ValueError("over 1 MiB")
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as e:
        raise CheckpointError(f"{path}: not a readable T5 configuration ({type(e).__name__}: "
                              f"{(str(e).splitlines() or [''])[0][:120]})") from None
    if not isinstance(config, dict):
        raise CheckpointError(f"{path}: not a T5 configuration (a JSON object is expected)")
    for key, top in T5_CONFIG_LIMITS.items():
        value = config.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= top:
            raise CheckpointError(f"{path}: {key} must be a whole number from 1 to {top:,}, got {value!r:.40}")
    buckets = config.get("relative_attention_num_buckets", 32)
    if isinstance(buckets, bool) or not isinstance(buckets, int) or not 0 < buckets <= 4_096:
        raise CheckpointError(f"{path}: relative_attention_num_buckets must be a whole number from 1 to 4,096, "
                              f"got {buckets!r:.40}")
    return config


def _weight_files(folder: Path) -> list:
    return sorted([*folder.glob("*.safetensors"), *folder.glob("*.bin")])


def _weights_label(folder: Path) -> str:
    files = _weight_files(Path(folder))
    if len(files) == 1:
        return str(files[0])
    return f"{folder} ({', '.join(f.name for f in files[:3])}{' …' if len(files) > 3 else ''})" if files \
        else f"{folder} (no weight files)"


def check_t5_weights(folder, params: int) -> None:
    """Before the library reads them: each safetensors file's header is readable, and the weight files
    hold at least a byte per parameter config.json describes (so a few bytes of config cannot ask for
    gigabytes). One CheckpointError naming the file."""
    folder = Path(folder)
    files = _weight_files(folder)
    if not files:
        raise CheckpointError(f"{folder}: no T5 weights (model.safetensors or pytorch_model.bin)")
    for f in files:
        if f.suffix == ".safetensors":
            try:
                with safe_open(str(f), framework="pt") as h:
                    h.keys()
            except Exception as e:  # SafetensorError: header too large, not JSON, truncated
                raise CheckpointError(f"{f}: not a readable safetensors file ({load_problem(e)})") from None
    have = sum(f.stat().st_size for f in files)
    if have < params:
        raise CheckpointError(f"{folder / 'config.json'}: describes {params:,} parameters but the weight files "
                              f"hold only {have:,} bytes (refused before allocating)")


class FlanT5Encoder:
    """A T5 encoder as a :class:`engine.text.TextEncoder`: ``dim`` and ``token_embeddings``."""

    def __init__(self, folder, device: str = "cpu", dtype: Optional[torch.dtype] = None, clean: bool = True):
        self.folder = Path(folder)
        self.config = read_t5_config(self.folder)
        self.dim = int(self.config["d_model"])
        self.device = str(device)
        if dtype is None:
            dtype = torch.bfloat16 if self.device.startswith("cuda") else torch.float32
        self.dtype = dtype
        self.clean = clean
        self._model = None
        self._tok = None
        self._lock = threading.Lock()

    # ---------------------------------------------------------------- facts
    @property
    def params(self) -> int:
        return t5_encoder_params(self.config)

    def memory_estimate(self, max_tokens: int = 120, batch: int = 1) -> int:
        """Bytes the encoder needs: weights in its dtype + one forward's activations (rough)."""
        b = torch.tensor([], dtype=self.dtype).element_size()
        d, d_ff = int(self.config["d_model"]), int(self.config["d_ff"])
        heads = int(self.config["num_heads"])
        act = batch * max_tokens * (6 * d + 2 * d_ff) * b + batch * heads * max_tokens * max_tokens * 4
        return int(self.params * b + act)

    @property
    def loaded(self) -> bool:
        return self._model is not None

    # ---------------------------------------------------------------- loading
    def load(self) -> "FlanT5Encoder":
        with self._lock:
            if self._model is None:
                try:
                    from transformers import (  # noqa: PLC0415 - seconds to import; most models never need T5
                        AutoTokenizer, T5EncoderModel)
                except ImportError as e:
                    raise RuntimeError(f"the FLAN-T5 text encoder needs the 'transformers' package: {e}") from None

                check_t5_weights(self.folder, self.params)
                try:
                    self._tok = AutoTokenizer.from_pretrained(str(self.folder), local_files_only=True)
                except Exception as e:  # a garbled tokenizer.json / spiece.model: whatever the library raises
                    raise CheckpointError(f"{self.folder}: could not load the T5 tokenizer ({load_problem(e)})") \
                        from None
                try:
                    model = T5EncoderModel.from_pretrained(str(self.folder), local_files_only=True, dtype=self.dtype)
                except Exception as e:  # SafetensorError, UnpicklingError, ...: one line naming the weights
                    raise CheckpointError(f"{_weights_label(self.folder)}: could not load the T5 encoder's "
                                          f"weights ({load_problem(e)})") from None
                self._model = model.eval().to(self.device)
        return self

    # ---------------------------------------------------------------- encoding
    def _prep(self, text: str) -> str:
        return clean_caption(text) if self.clean else text.lower().strip()

    @torch.no_grad()
    def encode(self, texts: Sequence[str], max_tokens: int = 120):
        """→ (states (B, T, dim) float32 on CPU, mask (B, T) bool), right-padded as T5 returns them.
        T ≤ max_tokens; the EOS token counts as a valid token (as in LlamaGen)."""
        self.load()
        enc = self._tok([self._prep(t) for t in texts], max_length=max_tokens, padding="longest", truncation=True,
                        add_special_tokens=True, return_attention_mask=True, return_tensors="pt")
        ids = enc["input_ids"].to(self.device)
        mask = enc["attention_mask"].to(self.device)
        out = self._model(input_ids=ids, attention_mask=mask).last_hidden_state
        return out.float().cpu(), mask.bool().cpu()

    def token_embeddings(self, text: str, max_tokens: int) -> torch.Tensor:
        """The valid token states (T, dim) of one caption (TextEncoder protocol)."""
        emb, mask = self.encode([text], max_tokens)
        return emb[0, mask[0]]

    def caption_embeddings(self, texts: Sequence[str], length: int = 120):
        """LlamaGen's conditioning for a batch: (B, length, dim) left-padded with zeros, (B, length) mask."""
        embs, masks = [], []
        states, valid = self.encode(texts, length)
        for s, m in zip(states, valid):
            e, mk = left_pad(s[m], length)
            embs.append(e)
            masks.append(mk)
        return torch.cat(embs), torch.cat(masks)


class T5CaptionConditioner(CaptionConditioner):
    """Prompt → LlamaGen t2i conditioning (120 left-padded FLAN-T5 states + mask)."""

    def __init__(self, encoder: FlanT5Encoder, length: int = 120):
        super().__init__(encoder, length)

    def memory_estimate(self) -> int:
        return self.encoder.memory_estimate(self.length)
