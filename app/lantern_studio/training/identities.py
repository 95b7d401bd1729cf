"""An emoji identity in the dataset: its code key, its split, its share of the sampling.

Every rendering of one emoji (its skin tones, genders drawn as variants, art styles) carries the
same identity, its base code point sequence. :func:`normalize_code` is the key that matches
emoji-datasource's and emojibase's spellings of it; :func:`split_of` puts every rendering of an
identity in one split (``train`` or ``heldout``, by a salted sha256, so the split is stable across
builds); :func:`identity_weights` gives every identity the same share when a trainer samples rows.
"""

from __future__ import annotations

import hashlib
from typing import Any, Iterable

import numpy as np

HELDOUT_FRACTION = 0.04
# Salt of the split hash; changing it reshuffles which identities are held out.
SPLIT_SALT = "lantern-studio/emoji64/split/v1"


def normalize_code(code: str) -> str:
    """Uppercase code points joined by '-', variation selector FE0F dropped.

    emoji-datasource's ``unified`` and emojibase's ``hexcode`` disagree on FE0F
    for some emoji; this key matches them anyway.
    """
    return "-".join(p for p in code.strip().upper().split("-") if p and p != "FE0F")


def heldout_score(identity: str) -> float:
    """A stable number in [0, 1) for an identity code (sha256-based, not ``hash``)."""
    digest = hashlib.sha256(f"{SPLIT_SALT}:{normalize_code(identity)}".encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def is_heldout(identity: str, fraction: float = HELDOUT_FRACTION) -> bool:
    """Whether the emoji identity (base code) belongs to the held-out split."""
    return heldout_score(identity) < fraction


def split_of(identity: str, fraction: float = HELDOUT_FRACTION) -> str:
    return "heldout" if is_heldout(identity, fraction) else "train"


def identity_weights(meta: list[dict[str, Any]], indices: Iterable[int]) -> np.ndarray:
    """Sampling weights over ``indices`` (summing to 1) that give every identity the same share.

    An identity's renderings — skin tones, genders drawn as variants, art styles —
    split its share equally, so an emoji drawn 30 ways is not picked 30 times as
    often as one drawn twice.
    """
    idx = list(indices)
    ids = [meta[i]["identity"] for i in idx]
    counts: dict[str, int] = {}
    for k in ids:
        counts[k] = counts.get(k, 0) + 1
    if not idx:
        return np.zeros(0)
    w = np.array([1.0 / counts[k] for k in ids])
    return w / w.sum()
