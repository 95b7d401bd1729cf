"""The AR model's training rows: the dataset tokenized once (at each shift, with jittered copies), caption variants
embedded, each image's class under the repertoire rule, cached in the run folder; and training packs of them.

Used by ``train ar`` (:mod:`.ar`); ``train retoken`` tokenizes with the same helper.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from ..engine.files import sha256_file
from ..engine.snap import ANY_STYLE
from ..engine.text import MiniLMEncoder, left_pad, make_text_encoder
from ..engine.tokenizer import load_vq
from ..models.classes import (class_rows, read_vocabulary, styles_tones_of,
                              vocabulary_from_meta)
from ..models.dataset import load_dataset
from .common import atomic_torch_save
from .data import identity_weights, short_caption
from .errors import TrainingError
from .jitter import Jitter
from .prepared import CaptionPrep, ClassPrep, Prep, load_prepared, prep_from_dict

SHIFTS = [(0, 0), (2, 2), (-2, -2)]
#: ``--shifts``: the tokenized copies of each image a run trains on. ``none`` trains on the unshifted
#: tokens only: three shifted copies of an image make its first rows ambiguous while sampling, and the
#: sampler wanders between the copies (model v4 drops them; v3 trained on ``three``).
SHIFT_SETS = {"three": SHIFTS, "none": [(0, 0)]}


def shift_on_white(images: np.ndarray, dx: int, dy: int) -> np.ndarray:
    """Shift (N, H, W, 3) uint8 images by (dx, dy) pixels, filling with white."""
    out = np.full_like(images, 255)
    h, w = images.shape[1:3]
    ys, yd = (slice(0, h - dy), slice(dy, h)) if dy >= 0 else (slice(-dy, h), slice(0, h + dy))
    xs, xd = (slice(0, w - dx), slice(dx, w)) if dx >= 0 else (slice(-dx, w), slice(0, w + dx))
    out[:, yd, xd] = images[:, ys, xs]
    return out


@torch.no_grad()
def tokenize_images(vq, images: np.ndarray, batch: int = 128, log=None) -> torch.Tensor:
    out = []
    for s in range(0, len(images), batch):
        x = torch.from_numpy(images[s : s + batch]).permute(0, 3, 1, 2).float() / 127.5 - 1
        out.append(vq.encode(x).to(torch.int16))
        if log and (s // batch) % 10 == 0:
            log(f"  tokenized {s + len(x)}/{len(images)}")
    return torch.cat(out)


def embed_texts(encoder, texts, length: int, batch: int = 256):
    """→ (emb (N, length, D) fp16 left-padded, mask (N, length) bool)."""
    embs, masks = [], []
    for s in range(0, len(texts), batch):
        e, m = encoder.token_embeddings_batch(texts[s : s + batch], length)
        for i in range(e.shape[0]):
            pe, pm = left_pad(e[i, m[i]], length)
            embs.append(pe[0].half())
            masks.append(pm[0])
    return torch.stack(embs), torch.stack(masks)


def tokenize_shifts(images: np.ndarray, vq, shifts, log) -> torch.Tensor:
    """Every image tokenized at each (dx, dy) shift on white → (S, N, h, w) int16."""
    codes = []
    for dx, dy in shifts:
        log(f"tokenizing shift ({dx},{dy})")
        codes.append(tokenize_images(vq, shift_on_white(images, dx, dy) if (dx or dy) else images, log=log))
    return torch.stack(codes)


def _cached(run: Path, key: dict):
    path = run / "prepared.pt"
    if path.exists():
        cached = torch.load(path, map_location="cpu", weights_only=True)
        if cached.get("key") == repr(key):
            return cached
    return None


def prepare(data: Path, vq_path: Path, run: Path, encoder=None, length: int = 24, shifts=SHIFTS,
            log=print) -> CaptionPrep:
    """Tokenize + embed once; cached as run/prepared.pt (reused when inputs match)."""
    images, meta, manifest = load_dataset(data)
    key = {"vq": sha256_file(vq_path), "data": manifest.get("sha256", manifest.get("files")), "shifts": shifts, "length": length}
    cached = _cached(run, key)
    if cached is not None:
        return prep_from_dict(cached)
    if encoder is None:
        encoder = MiniLMEncoder()
    elif isinstance(encoder, str):
        encoder = make_text_encoder(encoder)
    vq = load_vq(vq_path)
    t0 = time.time()
    codes = tokenize_shifts(images, vq, shifts, log)
    captions = [m["caption"] for m in meta]
    texts = sorted(set(captions) | {short_caption(c) for c in captions})
    log(f"embedding {len(texts)} caption variants")
    emb, mask = embed_texts(encoder, texts, length)
    index = {t: i for i, t in enumerate(texts)}
    variants = torch.tensor([[index[c], index[short_caption(c)]] for c in captions])
    split = torch.tensor([m["split"] == "train" for m in meta])
    train_rows = [i for i, m in enumerate(meta) if m["split"] == "train"]
    weights = torch.zeros(len(meta), dtype=torch.float64)
    weights[train_rows] = torch.from_numpy(identity_weights(meta, train_rows))
    out = CaptionPrep(codes=codes, texts=texts, emb=emb, mask=mask, variants=variants, train=split, weights=weights,
                      vocab_size=vq.args.codebook_size, grid=codes.shape[-1], key=repr(key))
    atomic_torch_save(out.to_dict(), run / "prepared.pt")
    log(f"prepared {codes.shape[1]} images x {len(shifts)} shifts, {len(texts)} texts in {time.time() - t0:.0f}s")
    return out


def grown_vocabulary(meta: list, repertoire: str, grow_from: Path):
    """The class vocabulary of a model trained before (identities.json beside its weights) with the
    identities ``repertoire`` adds appended, and the data's art styles it did not have (a new emoji set):
    every old class and style keeps its row."""
    old = read_vocabulary(grow_from.parent / "identities.json", *styles_tones_of(grow_from))
    new = vocabulary_from_meta(meta, repertoire)
    return old.grown(new.identities, styles=new.styles)


def prepare_classes(data: Path, vq_path: Path, run: Path, repertoire: str, shifts=SHIFTS, log=print,
                    grow_from: Path | None = None, styles: list[str] | None = None,
                    jitter: Jitter | None = None, any_style: bool = False) -> ClassPrep:
    """Tokenize once and give every image row its class [identity, style, tone] under the
    repertoire rule (models/classes.py); cached as run/prepared.pt. Every row of a kept identity
    trains (a class model draws only the classes it was taught, so no identity is held out);
    the NLL is evaluated on a fixed sample of unshifted training rows. ``styles``: train only the
    rows of these art styles (the model keeps a vector for every style of its vocabulary).
    ``jitter``: that many jittered copies of every image (training/jitter.py) follow the shifted ones;
    a batch draws any copy of a row, the first (unshifted, clean) one for the NLL. ``any_style``: the
    vocabulary gets the style ``any`` (appended, so no other style moves) for ``--style-dropout`` to teach."""
    images, meta, manifest = load_dataset(data)
    vocab = grown_vocabulary(meta, repertoire, grow_from) if grow_from else vocabulary_from_meta(meta, repertoire)
    if any_style and ANY_STYLE not in vocab.styles:
        vocab = replace(vocab, styles=[*vocab.styles, ANY_STYLE])
    if styles:
        unknown = [s for s in styles if s not in vocab.styles]
        if unknown:
            raise TrainingError(f"train ar --styles: unknown style {', '.join(unknown)}; "
                                f"the data has {', '.join(vocab.styles)}")
    rows = class_rows(meta, vocab)
    keep = [i for i, r in enumerate(rows) if r is not None and (not styles or vocab.styles[r[1]] in styles)]
    images_sha = ((manifest.get("files") or {}).get("images.npy") or {}).get("sha256")
    key = {"vq": sha256_file(vq_path), "images": images_sha, "shifts": shifts, "kind": "class",
           "rows": hashlib.sha256(repr(keep).encode()).hexdigest()}
    if jitter is not None:
        key["jitter"] = jitter.key()
    # only the tokens are cached: the class table is re-read from the dataset at every start (cheap)
    cached = _cached(run, key)
    if cached is None:
        t0 = time.time()
        vq = load_vq(vq_path)
        codes = tokenize_shifts(images[keep], vq, shifts, log)
        if jitter is not None:
            codes = torch.cat([codes, tokenize_jitter(images[keep], vq, jitter, codes[0], log)])
        atomic_torch_save({"key": repr(key), "codes": codes, "vocab_size": int(codes.max()) + 1}, run / "prepared.pt")
        log(f"tokenized {len(keep)} images of {len(vocab.identities)} identities ({repertoire}) x {len(shifts)} "
            f"shifts in {time.time() - t0:.0f}s")
    else:
        codes = cached["codes"]
    kept_meta = [meta[i] for i in keep]
    return ClassPrep(codes=codes, cond=torch.tensor([rows[i] for i in keep]), train=torch.ones(len(keep), dtype=torch.bool),
                     weights=torch.from_numpy(identity_weights(kept_meta, range(len(keep)))),
                     vocab_size=load_vq(vq_path).args.codebook_size, grid=codes.shape[-1], vocabulary=vocab.to_json(),
                     identities=len(vocab.identities), styles=vocab.styles, tones=vocab.tones, trained_styles=styles)


def tokenize_jitter(images: np.ndarray, vq, jitter: Jitter, clean: torch.Tensor, log) -> torch.Tensor:
    """``jitter.copies`` jittered copies of ``images`` tokenized → (copies, N, h, w) int16; logs the share of
    tokens each copy moves from ``clean`` (the unshifted tokens)."""
    out = []
    for i in range(jitter.copies):
        log(f"tokenizing {jitter.kind} jitter copy {i + 1}/{jitter.copies}")
        out.append(tokenize_images(vq, jitter.copy(images, i), log=log))
        log(f"  jitter copy {i + 1}: {100 * float((out[-1] != clean).float().mean()):.1f} % of tokens moved")
    return torch.stack(out)


def parse_styles(text: str | None) -> list[str] | None:
    """``--styles a,b`` → ["a", "b"]; None (every style of the data) for ``all``, or when empty."""
    names = [t.strip() for t in (text or "").split(",") if t.strip()]
    return None if names == ["all"] else names or None


def write_pack(prep: Prep, path: Path) -> None:
    """The prepared training data of a class run in one file (tokens, classes, weights, the class vocabulary):
    what a machine without the dataset, the tokenizer or this package's data tools needs to train
    (``train ar --pack FILE``; packaging/gpu/train_v3_gpu.sh)."""
    if not isinstance(prep, ClassPrep):
        raise TrainingError("train ar --pack-out: only class runs (--condition class) make packs")
    atomic_torch_save(prep.to_dict(), path)


def load_pack(path: Path) -> ClassPrep:
    prep = load_prepared(path, "train ar --pack", pack=True)
    if not isinstance(prep, ClassPrep):
        raise TrainingError(f"train ar --pack {path}: not a training pack (a caption run's data)")
    return prep
