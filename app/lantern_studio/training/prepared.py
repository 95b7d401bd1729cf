"""The AR model's prepared training data, typed: :class:`CaptionPrep` (a text-conditional run) or
:class:`ClassPrep` (a class run), and how a batch is drawn from it.

On disk (``run/prepared.pt`` of a caption run, a training pack of a class run) it stays the plain
dict of tensors, strings and numbers the earlier versions wrote (``torch.load(weights_only=True)``
reads it): :func:`prep_from_dict` converts one, :meth:`CaptionPrep.to_dict` /
:meth:`ClassPrep.to_dict` write it back.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, ClassVar, Union

import torch

from .errors import TrainingError

CAPTION_SHORT_SHARE = 0.35  # of augmented caption rows: the short caption variant


@dataclass(frozen=True)
class CaptionPrep:
    """A caption run's data: every image tokenized at each shift, every caption variant embedded.

    ``codes`` (S, N, h, w) int16 (S shifts), ``emb`` (V, L, D) fp16 left-padded with ``mask`` (V, L),
    ``variants`` (N, 2): each image's full and short caption rows of ``emb``, ``train`` (N,) bool,
    ``weights`` (N,) float64 (each identity weighs the same), ``key``: what the cache was made from.
    """

    codes: torch.Tensor
    texts: list[str]
    emb: torch.Tensor
    mask: torch.Tensor
    variants: torch.Tensor
    train: torch.Tensor
    weights: torch.Tensor
    vocab_size: int
    grid: int
    key: str = ""

    kind: ClassVar[str] = "caption"
    note: ClassVar[str] = ""

    def batch(self, idx: torch.Tensor, gen: torch.Generator, augment: bool = True):
        """→ (tokens (B, T) long, caption embeddings (B, L, D) float, mask (B, L)) for rows ``idx``;
        ``augment``: a random shift and, for 35 % of the rows, the short caption."""
        if augment:
            shift = torch.randint(0, self.codes.shape[0], (len(idx),), generator=gen)
            which = (torch.rand(len(idx), generator=gen) < CAPTION_SHORT_SHARE).long()
        else:
            shift = torch.zeros(len(idx), dtype=torch.long)
            which = torch.zeros(len(idx), dtype=torch.long)
        tok = self.codes[shift, idx].flatten(1).long()
        t = self.variants[idx, which]
        return tok, self.emb[t].float(), self.mask[t]

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, **{f.name: getattr(self, f.name) for f in fields(self)}}


@dataclass(frozen=True)
class ClassPrep:
    """A class run's data: tokens and each row's class [identity, style, tone] (``cond`` (N, 3)).

    ``vocabulary``: the class vocabulary as JSON (what ``identities.json`` holds), with
    ``identities`` of them and the vocabulary's ``styles`` and ``tones``. ``trained_styles``: the
    ``--styles`` whose images these rows are (None: every style); not part of a pack.
    """

    codes: torch.Tensor
    cond: torch.Tensor
    train: torch.Tensor
    weights: torch.Tensor
    vocab_size: int
    grid: int
    vocabulary: str
    identities: int
    styles: list[str]
    tones: list[str]
    trained_styles: list[str] | None = None

    kind: ClassVar[str] = "class"
    note: ClassVar[str] = ""

    def batch(self, idx: torch.Tensor, gen: torch.Generator, augment: bool = True):
        """→ (tokens (B, T) long, classes (B, 3), None) for rows ``idx``; ``augment``: a random shift."""
        shift = (torch.randint(0, self.codes.shape[0], (len(idx),), generator=gen) if augment
                 else torch.zeros(len(idx), dtype=torch.long))
        return self.codes[shift, idx].flatten(1).long(), self.cond[idx], None

    def to_dict(self) -> dict[str, Any]:
        """The pack's dict (:data:`PACK_KEYS`)."""
        return {"kind": self.kind, **{k: getattr(self, k) for k in PACK_KEYS if k != "kind"}}


Prep = Union[CaptionPrep, ClassPrep]

PACK_KEYS = ("kind", "codes", "cond", "train", "weights", "vocab_size", "grid", "vocabulary", "identities", "styles",
             "tones")
CAPTION_KEYS = ("codes", "texts", "emb", "mask", "variants", "train", "vocab_size", "grid")


def missing_keys(d: dict) -> list[str]:
    """The keys a prepared dict of its kind lacks (a dict without ``kind`` is a caption run's, as before v3)."""
    need = PACK_KEYS if d.get("kind") == "class" else CAPTION_KEYS
    return [k for k in need if k not in d]


def prep_from_dict(d: dict, *, trained_styles: list[str] | None = None) -> Prep:
    """The typed prep of a dict in the on-disk format (a caption run's ``prepared.pt``, a pack, or an
    older file without ``kind`` or ``weights``). KeyError names a missing key."""
    missing = missing_keys(d)
    if missing:
        raise KeyError(", ".join(missing))
    if d.get("kind") == "class":
        return ClassPrep(codes=d["codes"], cond=d["cond"], train=d["train"], weights=d["weights"],
                         vocab_size=int(d["vocab_size"]), grid=int(d["grid"]), vocabulary=d["vocabulary"],
                         identities=int(d["identities"]), styles=list(d["styles"]), tones=list(d["tones"]),
                         trained_styles=trained_styles)
    weights = d.get("weights")
    if weights is None:  # written before identity weights: every row weighs the same
        weights = torch.ones(d["codes"].shape[1], dtype=torch.float64)
    return CaptionPrep(codes=d["codes"], texts=list(d["texts"]), emb=d["emb"], mask=d["mask"], variants=d["variants"],
                       train=d["train"], weights=weights, vocab_size=int(d["vocab_size"]), grid=int(d["grid"]),
                       key=str(d.get("key", "")))


def as_prep(data: Prep | dict, *, trained_styles: list[str] | None = None) -> Prep:
    """A prep as given to ``train ar`` (``args.prepared``): typed already, or a dict in the on-disk format."""
    if isinstance(data, (CaptionPrep, ClassPrep)):
        return data
    try:
        return prep_from_dict(data, trained_styles=trained_styles)
    except KeyError as e:
        raise TrainingError(f"prepared data: missing {e.args[0]}") from None


def load_prepared(path: Path, what: str = "prepared data", *, pack: bool = False) -> Prep:
    """A caption run's ``prepared.pt`` or (``pack``) a class run's training pack read back; TrainingError
    names the file (as ``what PATH``) when it is missing, unreadable or not that."""
    path = Path(path)
    if not path.is_file():
        raise TrainingError(f"{what} {path}: no such file")
    try:
        d = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:
        raise TrainingError(f"{what} {path}: unreadable ({type(e).__name__}: {e})") from None
    if not isinstance(d, dict):
        raise TrainingError(f"{what} {path}: not prepared training data")
    missing = [k for k in PACK_KEYS if k not in d] if pack else missing_keys(d)
    if missing:
        raise TrainingError(f"{what} {path}: not {'a training pack' if pack else 'prepared training data'} "
                            f"(missing {', '.join(missing)})")
    return prep_from_dict(d)


def batch_from(prep: Prep, idx: torch.Tensor, gen: torch.Generator, augment: bool = True):
    """→ (tokens (B, T), condition, caption mask or None) for dataset rows ``idx``."""
    return prep.batch(idx, gen, augment)
