"""PromptScorer.verdict on the bundled model's meter: what it saw, ranked among the emoji the model draws,
consistent with the prompt fidelity it reports beside it (issues 41, 60)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

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
        return SimpleNamespace(identity=self.row)

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
    assert v["calibrated"] == ("meter" in manifest)
    # ask for what it saw: that one ranks first, under its own name
    seen_row = next(i for i, r in enumerate(identities) if r["name"] == v["seen"])
    again = PromptScorer(BUNDLED, manifest, Snap(identities, seen_row)).verdict(picture, "x")
    assert again["rank"] == 1 and again["asked"] == again["seen"] == v["seen"]
    if v["seen"] != v["asked"]:
        assert v["rank"] > 1


def test_a_fresh_scorer_judges_from_many_threads_at_once(bundled):
    """The worker, Sweep and Compare may ask a fresh scorer at the same moment: its recogniser and meter are
    made once under a lock (a meter that took the lock twice hung here). 20 rounds × 6 threads."""
    import threading

    manifest, identities, picture = bundled
    for _round in range(20):
        scorer = PromptScorer(BUNDLED, manifest, Snap(identities, 3))
        out, errors = [], []

        def ask():
            try:
                out.append((scorer(picture, "x"), scorer.verdict(picture, "x")["rank"]))
            except Exception as e:  # noqa: BLE001 - collected and asserted below
                errors.append(e)

        threads = [threading.Thread(target=ask) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        assert not any(t.is_alive() for t in threads), "a scorer hung"
        assert not errors and len(set(out)) == 1 and len(out) == 6
        assert scorer.meter() is scorer.meter()
