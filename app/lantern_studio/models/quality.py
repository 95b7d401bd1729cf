"""The quality meter of a model folder that ships a recogniser, and how different the pictures of one
prompt's seeds are (``variety``, ``seed_pairs``).

The meter (:class:`Meter`) judges a picture against what the prompt asked: for a snapping emoji model
with an identity recogniser, the emoji the prompt snapped to, ranked among the emoji that model draws,
with the probability calibrated on pictures a person labelled (``meter.temperature`` in model.json,
fitted by ``python -m lantern_studio.eval.meter_check calibrate``); otherwise the prompt's subgroup.
Its probability is the studio's prompt fidelity; its rank and first choice are what the stats panel
says. It was checked against ground truth made by looking (eval/labelled_set.py).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from ..engine.conditioners import CaptionSnapper, Snapper
from .recogniser import NONE, Recogniser


@dataclass(frozen=True)
class Judgement:
    """What the meter made of one picture."""

    asked: str  # the asked class (an identity code, or a subgroup for subgroup recognisers)
    rank: int  # where it ranks among ``classes`` (1 = the meter's first choice)
    classes: int
    seen: str  # the class ranked first
    probability: float  # the asked class's probability (calibrated where the model folder says so)


class Meter:
    """The one quality meter: the recogniser's view of a picture, restricted to the classes a model
    draws, with a calibrated temperature.

    ``classes``: the class names answers are ranked among (for an identity judge on a snapping model:
    the emoji that model draws, so an emoji it never draws cannot outrank the asked one); None for all
    of the recogniser's. ``temperature``: divides the logits before the softmax; a model folder's
    ``meter.temperature`` was fitted on the labelled set of its own pictures (eval/labelled_set.py), so
    ``probability`` reads as the chance a person would say the picture shows the asked emoji.
    """

    def __init__(self, recogniser: Recogniser, classes: Sequence[str] | None = None, temperature: float = 1.0,
                 level: str | None = None):
        if not (isinstance(temperature, (int, float)) and 0.05 <= float(temperature) <= 20):
            raise ValueError(f"meter temperature must be in [0.05, 20], got {temperature!r}")
        self.recogniser = recogniser
        self.level = level
        names = recogniser.classes_at(level)
        keep = [j for j, n in enumerate(names) if n != NONE] if classes is None else \
            [recogniser.class_index(c, level) for c in classes]
        if not keep:
            raise ValueError("a meter needs at least one class")
        self.columns = np.array(keep)
        self.names = [names[j] for j in keep]
        self.index = {c: i for i, c in enumerate(self.names)}
        self.temperature = float(temperature)
        # a recogniser taught NONE (broken pictures) keeps that share out of every emoji's probability
        self.none_column = names.index(NONE) if NONE in names and NONE not in self.index else None

    def logits(self, images) -> np.ndarray:
        """(B, classes [+ 1]) log-probabilities over the meter's classes (and NONE, last, where the
        recogniser has it), before the temperature."""
        probs = self.recogniser.predict(images, level=self.level)
        cols = self.columns if self.none_column is None else np.append(self.columns, self.none_column)
        return np.log(np.clip(probs[:, cols], 1e-12, None))

    def probabilities(self, images) -> np.ndarray:
        """(B, classes): each class's probability, calibrated; with NONE, the rows sum to less than 1 (the
        rest is the chance the picture shows no emoji)."""
        return tempered_softmax(self.logits(images), self.temperature)[:, : len(self.names)]

    def judge(self, images, asked: Sequence) -> list[Judgement]:
        """One :class:`Judgement` per picture of ``images`` ((B, H, W, 3) uint8) for its asked class: a
        name, or a list of names any of which is right (judged by the likeliest of them)."""
        arr = np.asarray(images)
        if arr.ndim == 3:
            arr = arr[None]
        if len(asked) != len(arr):
            raise ValueError(f"{len(asked)} asked classes for {len(arr)} pictures")
        probs = self.probabilities(arr) if len(arr) else np.zeros((0, len(self.names)))
        out = []
        for p, a in zip(probs, asked):
            names = [a] if isinstance(a, str) else list(a)
            cols = [self.index[n] for n in names if n in self.index]
            if not cols:
                raise ValueError(f"{names[0] if names else a!r} is not one of the meter's {len(self.names)} classes")
            i = max(cols, key=lambda j: p[j])
            top = int(np.argmax(p))
            out.append(Judgement(self.names[i], 1 + int((p > p[i]).sum()), len(self.names), self.names[top],
                                 float(p[i])))
        return out

    def knows(self, asked) -> bool:
        """Whether ``asked`` (a name or a list of names) names a class of this meter."""
        names = [asked] if isinstance(asked, str) else list(asked or [])
        return any(n in self.index for n in names)


def tempered_softmax(logits: np.ndarray, temperature: float) -> np.ndarray:
    """Row-wise softmax of ``logits / temperature`` (the meter's calibrated probabilities)."""
    z = logits / temperature
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def fit_temperature(logits: np.ndarray, asked: Sequence[int], right: Sequence[bool],
                    grid: Sequence[float] = tuple(np.round(np.exp(np.linspace(np.log(0.25), np.log(8), 61)), 4))
                    ) -> float:
    """The temperature whose asked-class probability best predicts ``right`` (least binary log-loss over
    ``grid``): calibrating the meter's probability on pictures a person labelled."""
    y = np.asarray(right, dtype=np.float64)
    rows = np.arange(len(y))

    def loss(t: float) -> float:
        p = np.clip(tempered_softmax(logits, t)[rows, asked], 1e-6, 1 - 1e-6)
        return float(-(y * np.log(p) + (1 - y) * np.log(1 - p)).mean())

    return float(min(grid, key=loss))


class PromptScorer:
    """A model folder's meter applied to prompts: what was asked (the identity the prompt snaps to, or its
    subgroup), and the :class:`Meter`'s judgement of the picture for it."""

    def __init__(self, folder: Path, manifest: dict, conditioner=None):
        self.folder = Path(folder)
        self.conditioner = conditioner
        self.manifest = manifest
        self._rec = None
        self._meter = None
        self._names: dict[str, str] = {}  # identity code -> name, set with the meter
        self._lock = threading.Lock()
        snap = manifest.get("conditioning", {}).get("snap") or {}
        rows = json.loads((self.folder / snap["captions"]).read_text()) if snap.get("captions") else []
        self.subgroup_of = {r["caption"]: r["subgroup"] for r in rows if isinstance(r, dict)}
        cal = manifest.get("meter") if isinstance(manifest.get("meter"), dict) else {}
        self.temperature = float(cal.get("temperature", 1.0))
        self.calibrated = "temperature" in cal

    def recogniser(self):
        with self._lock:
            if self._rec is None:
                self._rec = Recogniser.load(self.folder / self.manifest["recogniser"])
            return self._rec

    def _identity_names(self, rec: Recogniser) -> dict[str, str]:
        """identity code → name, for a snapping model whose recogniser judges identities (else empty)."""
        c = self.conditioner
        if isinstance(c, Snapper) and rec.label == "identity":
            known = set(rec.classes_at())
            return {r["identity"]: r.get("name") or r["identity"] for r in c.identities
                    if r.get("identity") in known}
        return {}

    def meter(self) -> Meter:
        """The folder's meter, made once (with the emoji names its verdicts use)."""
        rec = self.recogniser()
        with self._lock:
            if self._meter is None:
                self._names = self._identity_names(rec)
                if self._names:
                    self._meter = Meter(rec, list(self._names), self.temperature)
                else:
                    self._meter = Meter(rec, None, self.temperature if rec.label == "subgroup" else 1.0,
                                        level="subgroup")
            return self._meter

    def subgroup(self, caption: str):
        return self.subgroup_of.get(caption)

    def subgroup_for_prompt(self, prompt: str):
        if prompt in self.subgroup_of:
            return self.subgroup_of[prompt]
        c = self.conditioner
        if isinstance(c, Snapper):  # a factorised class model (engine/snap.py)
            return c.identities[c.match(prompt).identity].get("subgroup")
        if isinstance(c, CaptionSnapper):
            best = c.nearest_captions(prompt, 1)
            if best:
                return self.subgroup_of.get(best[0][0])
        return None

    def asked(self, prompt: str) -> str | None:
        """The class the meter judges a picture of ``prompt`` against (None: nothing it knows)."""
        meter = self.meter()
        c = self.conditioner
        if meter.level is None and isinstance(c, Snapper):
            code = c.identities[c.match(prompt).identity].get("identity")
            return code if code in meter.index else None
        sub = prompt if prompt in meter.index else self.subgroup_for_prompt(prompt)
        return sub if sub in meter.index else None

    def judge(self, image: np.ndarray, prompt: str) -> Judgement | None:
        asked = self.asked(prompt)
        return None if asked is None else self.meter().judge(np.asarray(image)[None], [asked])[0]

    def __call__(self, image: np.ndarray, prompt: str) -> float | None:
        """The meter's probability that the picture shows what the prompt asks for (None: it cannot judge)."""
        j = self.judge(image, prompt)
        return None if j is None else j.probability

    def verdict(self, image: np.ndarray, prompt: str) -> dict | None:
        """What the meter saw, for a person to read beside the fidelity: where the asked class ranks among
        the ``classes`` the model draws (1 = first), the class ranked first (``seen``, by name), the asked
        class's probability (``probability``; ``calibrated`` says whether it was fitted on labelled
        pictures). None when the prompt asks for nothing the meter knows."""
        j = self.judge(image, prompt)
        if j is None:
            return None
        meter = self.meter()
        names = self._names
        return {"level": "identity" if meter.level is None and names else "subgroup",
                "asked": names.get(j.asked, j.asked), "seen": names.get(j.seen, j.seen), "rank": j.rank,
                "classes": j.classes, "probability": j.probability,
                "calibrated": self.calibrated and meter.temperature == self.temperature}


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
