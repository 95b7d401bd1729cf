"""PromptScorer.verdict on the bundled model's identity judge: what the recogniser saw, ranked among the
emoji the model draws, consistent with the prompt fidelity it reports beside it (issue 41)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from lantern_studio.engine.conditioners import Snapper
from lantern_studio.models.quality import PromptScorer

BUNDLED = Path(__file__).resolve().parents[2] / "resources" / "models" / "emoji-64"


class Snap:
    """A snapping conditioner stand-in: the bundled model's identities, every prompt snapped to ``row``."""

    styles = offered_styles = ("fluent-flat",)
    default_style = "fluent-flat"

    def __init__(self, identities, row: int):
        self.identities, self.row = identities, row

    def match(self, prompt, style="", seed=0, alternatives=3):
        raise NotImplementedError

    def nearest(self, prompt, n=4):
        return [(self.row, self.identities[self.row]["name"], 1.0)]


@pytest.fixture(scope="module")
def bundled():
    if not (BUNDLED / "recogniser.safetensors").is_file():
        pytest.skip("no bundled model here")
    manifest = json.loads((BUNDLED / "model.json").read_text())
    identities = json.loads((BUNDLED / "identities.json").read_text())["classes"]
    with Image.open(BUNDLED / "samples.png") as img:
        picture = np.array(img.convert("RGB").crop((0, 0, 64, 64)).resize((64, 64)))
    return manifest, identities, picture


def test_the_verdict_names_the_first_choice_and_ranks_the_asked_emoji(bundled):
    manifest, identities, picture = bundled
    snap = Snap(identities, 0)
    assert isinstance(snap, Snapper)
    scorer = PromptScorer(BUNDLED, manifest, snap)
    v = scorer.verdict(picture, "whatever was typed")
    assert v["level"] == "identity" and v["classes"] == len(identities)  # among the emoji this model draws
    assert v["asked"] == identities[0]["name"] and 1 <= v["rank"] <= v["classes"]
    assert v["probability"] == pytest.approx(scorer(picture, "whatever was typed"))  # the fidelity beside it
    assert 0 < v["seen_probability"] <= 1
    # ask for what it saw: that one ranks first, under its own name
    seen_row = next(i for i, r in enumerate(identities) if r["name"] == v["seen"])
    again = PromptScorer(BUNDLED, manifest, Snap(identities, seen_row)).verdict(picture, "x")
    assert again["rank"] == 1 and again["asked"] == again["seen"] == v["seen"]
    if v["seen"] != v["asked"]:
        assert v["rank"] > 1
