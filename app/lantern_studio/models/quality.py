"""Per-image prompt fidelity for a model folder that ships a recogniser, and how different
the pictures of one prompt's seeds are (``variety``, ``seed_pairs``).

The score of an image for a prompt is the recogniser's probability of the
subgroup of the caption (or, for a factorised class model, the identity) the
prompt was matched to, so a free-form prompt is judged against what the model was asked
to draw.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np

from ..engine.conditioners import CaptionSnapper, Snapper
from .recogniser import Recogniser


class PromptScorer:
    def __init__(self, folder: Path, manifest: dict, conditioner=None):
        self.folder = Path(folder)
        self.conditioner = conditioner
        self.manifest = manifest
        self._rec = None
        self._lock = threading.Lock()
        snap = manifest.get("conditioning", {}).get("snap") or {}
        rows = json.loads((self.folder / snap["captions"]).read_text()) if snap.get("captions") else []
        self.subgroup_of = {r["caption"]: r["subgroup"] for r in rows if isinstance(r, dict)}

    def recogniser(self):
        with self._lock:
            if self._rec is None:
                self._rec = Recogniser.load(self.folder / self.manifest["recogniser"])
            return self._rec

    def subgroup(self, caption: str):
        return self.subgroup_of.get(caption)

    def subgroup_for_prompt(self, prompt: str):
        if prompt in self.subgroup_of:
            return self.subgroup_of[prompt]
        c = self.conditioner
        if isinstance(c, Snapper):  # a factorised class model (engine/snap.py)
            return c.identities[c.nearest(prompt, 1)[0][0]].get("subgroup")
        if isinstance(c, CaptionSnapper):
            best = c.nearest_captions(prompt, 1)
            if best:
                return self.subgroup_of.get(best[0][0])
        return None

    def __call__(self, image: np.ndarray, prompt: str) -> float | None:
        """Probability of the subgroup the prompt asks for (a prompt, known caption or subgroup name)."""
        rec = self.recogniser()
        subgroups = rec.classes_at("subgroup")
        sub = prompt if prompt in subgroups else self.subgroup_for_prompt(prompt)
        if sub not in subgroups:
            return None
        probs = rec.predict(np.asarray(image)[None], level="subgroup")[0]
        return float(probs[rec.class_index(sub, "subgroup")])

    def verdict(self, image: np.ndarray, prompt: str) -> dict | None:
        """What the recogniser saw, for a person to read beside the fidelity: the class it ranks first
        (``seen``, by name), where the class the prompt asked for ranks among all ``classes`` (1 = first),
        at the finest level it can name (the emoji itself for a snapping model with an identity judge, else
        the subgroup), and the fidelity itself (``probability``: the asked subgroup's). None when the
        prompt asks for nothing the recogniser knows."""
        score = self(image, prompt)
        if score is None:
            return None
        rec, c = self.recogniser(), self.conditioner
        asked, level, names = None, "subgroup", {}
        if isinstance(c, Snapper) and rec.label != "subgroup":
            row = c.identities[c.nearest(prompt, 1)[0][0]]
            names = {r.get("identity"): r.get("name") or r.get("identity") for r in c.identities}
            if row.get("identity") in rec.classes_at():
                asked, level = row.get("identity"), None
        if asked is None:
            subgroups = rec.classes_at("subgroup")
            asked = prompt if prompt in subgroups else self.subgroup_for_prompt(prompt)
        probs = rec.predict(np.asarray(image)[None], level=level)[0]
        classes = rec.classes_at(level)
        if level is None:  # ranked among the emoji this model draws (the judge knows more)
            keep = [j for j, k in enumerate(classes) if k in names]
            classes, probs = [classes[j] for j in keep], probs[keep]
        i, top = classes.index(asked), int(np.argmax(probs))
        return {"level": level or rec.label, "asked": names.get(asked, asked),
                "seen": names.get(classes[top], classes[top]), "rank": 1 + int((probs > probs[i]).sum()),
                "classes": len(classes), "seen_probability": float(probs[top]), "probability": float(score)}


#: two seeds of one prompt count as different pictures when their mean absolute pixel difference
#: (0-255 per channel, over the 64×64 picture) is at least this: about one changed cell of the 16×16
#: token grid in eight (a moved feature, another colour), not a few pixels of noise
DIFFERENT_PICTURES = 12.0


def variety(images: np.ndarray) -> tuple[float, float]:
    """(mean pixel distance between the first two seeds of one class, share of classes whose first two
    seeds are different pictures) for images shaped (classes, seeds, H, W, 3); (0, 0) with one seed."""
    if images.shape[1] < 2:
        return 0.0, 0.0
    a, b = images[:, 0].astype(np.float32), images[:, 1].astype(np.float32)
    dist = np.abs(a - b).mean(axis=(1, 2, 3))
    return float(dist.mean()), float((dist >= DIFFERENT_PICTURES).mean())


def seed_pairs(prompts: list, images: list) -> np.ndarray:
    """The first two images of every prompt drawn at least twice, as (prompts, 2, H, W, 3), in the
    order the prompts first appear; (0, 2, ...) when no prompt was drawn twice."""
    first: dict = {}
    for p, im in zip(prompts, images):
        first.setdefault(p, [])
        if len(first[p]) < 2:
            first[p].append(np.asarray(im))
    pairs = [v for v in first.values() if len(v) == 2]
    if not pairs:
        shape = np.asarray(images[0]).shape if len(images) else (0, 0, 3)
        return np.zeros((0, 2) + tuple(shape), np.uint8)
    return np.stack([np.stack(v) for v in pairs])
