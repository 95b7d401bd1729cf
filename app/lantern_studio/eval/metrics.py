"""Quality metrics for generated emoji, built on the subgroup recogniser.

* :class:`Recogniser` — the trained CNN (``lantern-studio train recogniser``):
  class probabilities and penultimate features of uint8 images (it lives in
  models/recogniser.py, with the model folders that ship it; re-exported here).
* :func:`prompt_subgroup` — which subgroup a prompt asks for, from the
  dataset metadata.
* :func:`prompt_fidelity` — top-5 accuracy of generated images against their
  prompts' subgroups (the recogniser's own held-out top-5 on real images is the
  ceiling to compare with).
* :func:`frechet_distance` — Fréchet distance between two feature sets
  (FID-style, on the recogniser's features rather than Inception's; numbers are
  comparable only between runs that use the same recogniser file).
* :func:`score_image` — probability of the right subgroup for one image (the
  GUI's per-run quality point).

Only numpy and torch are needed (no scipy): the matrix square root uses a
symmetric eigendecomposition.
"""

from __future__ import annotations

import math
import re
from typing import Any, Sequence

import numpy as np
import torch

from ..models.recogniser import Recogniser, top_k_hits, wanted_ranks

__all__ = [
    "Recogniser",
    "PromptIndex",
    "prompt_subgroup",
    "prompt_fidelity",
    "identity_accuracy",
    "top_k_hits",
    "wanted_ranks",
    "frechet_distance",
    "feature_stats",
    "score_image",
]


# --------------------------------------------------------------------------
# prompt → subgroup
# --------------------------------------------------------------------------

_STYLE_SUFFIX = re.compile(r",?\s*\b(google|twitter|noto|twemoji)\s+style\s*$")
_WORD = re.compile(r"[a-z0-9]+")
#: Words that carry no identity: articles, glue, and the art-style / skin-tone vocabulary.
STOPWORDS = frozenset(
    "a an the of with and or in on at to for by from as is are be this that it its "
    "emoji emojis icon picture image style google twitter noto twemoji "
    "skin tone light medium dark".split()
)


def _norm_text(text: str) -> str:
    return " ".join(text.lower().replace("\u2019", "'").split())


def _strip_style(text: str) -> str:
    return _STYLE_SUFFIX.sub("", text).strip().rstrip(",").strip()


def _words(text: str) -> set[str]:
    out = set()
    for w in _WORD.findall(text.lower()):
        if w in STOPWORDS:
            continue
        out.add(w)
        if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
            out.add(w[:-1])  # crude singular: "cats" also matches "cat"
    return out


class PromptIndex:
    """Lookup tables from dataset meta rows to subgroups (see :func:`prompt_subgroup`)."""

    def __init__(self, meta: Sequence[dict[str, Any]]):
        self.by_caption: dict[str, str] = {}
        self.by_name: dict[str, str] = {}
        names: dict[str, str] = {}
        sizes: dict[str, int] = {}
        for m in meta:
            sg = m.get("subgroup")
            if not sg:
                continue
            sizes[sg] = sizes.get(sg, 0) + 1
            cap = m.get("caption")
            if cap:
                self.by_caption.setdefault(_norm_text(cap), sg)
                self.by_name.setdefault(_norm_text(_strip_style(_norm_text(cap))), sg)  # skin-tone labels
            name = m.get("name")
            if name:
                self.by_name.setdefault(_norm_text(name), sg)
                names.setdefault(_norm_text(name), sg)
        # Free-text matching: one entry per distinct emoji name, sorted for determinism.
        self.entries = [(n, sg, _words(n)) for n, sg in sorted(names.items())]
        self.subgroup_sizes = sizes

    def lookup(self, text: str) -> str | None:
        t = _norm_text(text)
        if not t:
            return None
        if t in self.by_caption:
            return self.by_caption[t]
        bare = _strip_style(t)
        if bare in self.by_name:
            return self.by_name[bare]
        q = _words(bare)
        if not q:
            return None
        # Best word overlap with an emoji name: most shared words, then the
        # highest fraction of the name's words covered (a tighter name wins:
        # "cat" → "cat", not "cat with wry smile"), then name order.
        best: tuple[int, float] | None = None
        votes: dict[str, int] = {}
        for _name, sg, ws in self.entries:
            if not ws:
                continue
            shared = len(q & ws)
            if shared == 0:
                continue
            key = (shared, shared / len(ws))
            if best is None or key > best:
                best, votes = key, {sg: 1}
            elif key == best:
                votes[sg] = votes.get(sg, 0) + 1
        if best is None:
            return None
        # Equally good names in several subgroups: the subgroup with most such
        # names, then the larger subgroup in the data, then alphabetical.
        return max(sorted(votes), key=lambda sg: (votes[sg], self.subgroup_sizes.get(sg, 0)))


_INDEX_CACHE: dict[int, tuple[Any, int, PromptIndex]] = {}


def _index_for(meta) -> PromptIndex:
    if isinstance(meta, PromptIndex):
        return meta
    key = id(meta)
    hit = _INDEX_CACHE.get(key)
    if hit is not None and hit[0] is meta and hit[1] == len(meta):
        return hit[2]
    idx = PromptIndex(meta)
    _INDEX_CACHE.clear()  # keep one: the dataset's meta list is what callers pass
    _INDEX_CACHE[key] = (meta, len(meta), idx)
    return idx


def prompt_subgroup(prompt_or_caption: str, meta: Sequence[dict[str, Any]] | PromptIndex) -> str | None:
    """The subgroup of the emoji a caption or prompt names, or None if nothing matches.

    ``meta`` is the dataset's meta rows (``load_dataset(...)[1]``) or a
    :class:`PromptIndex` built from them (faster for many prompts; a list is
    indexed once and cached). Matching, case- and whitespace-insensitive:

    1. exact caption (``"grinning face, google style"``);
    2. exact emoji name after dropping a trailing ``", <vendor> style"``
       (``"grinning face"``, ``"waving hand: medium skin tone"``);
    3. free text: the emoji name sharing the most words with the prompt
       (stopwords, style and skin-tone words ignored, a trailing plural ``s``
       forgiven); ties go to the name whose words the prompt covers best, and
       remaining ties between subgroups to the subgroup with more tied names
       (then the larger subgroup). No shared word → None.
    """
    if not isinstance(prompt_or_caption, str):
        raise TypeError(f"prompt must be a string, got {type(prompt_or_caption).__name__}")
    return _index_for(meta).lookup(prompt_or_caption)


# --------------------------------------------------------------------------
# metrics
# --------------------------------------------------------------------------


def prompt_fidelity(recogniser: Recogniser, images, subgroups: Sequence, k: int = 5) -> float:
    """Fraction of images whose prompt's subgroup is among the recogniser's top ``k``.

    ``subgroups[i]`` is the subgroup image ``i`` was asked for (e.g. from
    :func:`prompt_subgroup`), or a list of subgroups any of which counts as
    right (a plain-language prompt such as "a happy dog" may mean two emoji);
    images whose entry is None (prompt matched no emoji) are left out. ``k`` is
    capped at the number of classes. An identity judge answers by summing each
    subgroup's identities. Raises ValueError if no image has a subgroup or a
    name is not a recogniser class.
    """
    if k < 1:
        raise ValueError(f"k={k}: must be >= 1")
    try:
        return top_k_hits(recogniser, images, subgroups, (k,), level="subgroup")[k]
    except ValueError as e:
        if str(e).startswith("no image has"):
            raise ValueError("prompt_fidelity: no image has a known subgroup") from None
        raise


def identity_accuracy(recogniser: Recogniser, images, identities: Sequence) -> dict[str, float]:
    """Identity top-1 / top-5 of an identity judge: ``identities[i]`` is the
    identity (or list of identities that count as right) image ``i`` was asked for."""
    hits = top_k_hits(recogniser, images, identities, (1, 5), level="identity")
    return {"top1": hits[1], "top5": hits[5]}


def score_image(recogniser: Recogniser, image, subgroup: str) -> float:
    """Probability the recogniser gives the image's intended subgroup (in [0, 1])."""
    j = recogniser.class_index(subgroup, "subgroup")
    arr = image if isinstance(image, torch.Tensor) else np.asarray(image)
    if arr.ndim == 4:
        if len(arr) != 1:
            raise ValueError(f"score_image: expected one image, got {len(arr)}")
    elif arr.ndim != 3:
        raise ValueError(f"score_image: expected an (H, W, 3) uint8 image, got shape {tuple(arr.shape)}")
    return float(recogniser.predict(arr, level="subgroup")[0, j])


def feature_stats(feats) -> tuple[np.ndarray, np.ndarray]:
    """(mean, covariance) in float64 of an (N, F) feature array (N ≥ 2)."""
    f = np.asarray(feats, dtype=np.float64)
    if f.ndim != 2:
        raise ValueError(f"features: expected (N, F), got shape {f.shape}")
    if len(f) < 2:
        raise ValueError(f"features: need at least 2 samples for a covariance, got {len(f)}")
    return f.mean(axis=0), np.cov(f, rowvar=False).reshape(f.shape[1], f.shape[1])


def _sqrt_psd(a: np.ndarray) -> np.ndarray:
    w, v = np.linalg.eigh((a + a.T) / 2)
    return (v * np.sqrt(np.clip(w, 0.0, None))) @ v.T


def frechet_distance(feats_a, feats_b, eps: float = 1e-6) -> float:
    """Fréchet distance between Gaussians fitted to two (N, F) feature sets.

    d² = |μa − μb|² + tr(Σa + Σb − 2 (Σa Σb)^½), with ``eps``·I added to both
    covariances (small samples give singular ones). tr((Σa Σb)^½) is computed as
    the sum of square roots of the eigenvalues of Σa^½ Σb Σa^½ (symmetric PSD,
    same spectrum), so no scipy and no complex round-off. Returns d² (the FID
    convention), clipped at 0. Small sample sizes bias it upwards: compare
    values computed from equally many images.
    """
    mu_a, cov_a = feature_stats(feats_a)
    mu_b, cov_b = feature_stats(feats_b)
    if mu_a.shape != mu_b.shape:
        raise ValueError(f"feature sizes differ: {mu_a.shape[0]} vs {mu_b.shape[0]}")
    eye = np.eye(len(mu_a))
    cov_a = cov_a + eps * eye
    cov_b = cov_b + eps * eye
    sa = _sqrt_psd(cov_a)
    m = sa @ cov_b @ sa
    w = np.linalg.eigvalsh((m + m.T) / 2)
    tr_sqrt = float(np.sqrt(np.clip(w, 0.0, None)).sum())
    diff = mu_a - mu_b
    d2 = float(diff @ diff + np.trace(cov_a) + np.trace(cov_b) - 2.0 * tr_sqrt)
    if not math.isfinite(d2):
        raise ValueError("frechet_distance: non-finite result (features contain NaN or inf?)")
    return max(0.0, d2)
