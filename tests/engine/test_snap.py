"""Prompt → nearest training caption, by the caption and by its name-and-keyword text."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file

from lantern_studio.engine.text import CaptionConditioner, HashEncoder
from lantern_studio.training.ship import snap_files, tag_text

CAPTIONS = ["ewe", "goat", "exploding head", "crossed fingers"]
TAGS = {"ewe": ["animal", "baa", "farm", "fluffy", "lamb", "sheep", "wool"], "goat": ["animal", "farm", "horns"],
        "exploding head": ["blown", "mind", "mindblown", "shocked", "143"], "crossed fingers": ["cross", "hand", "luck"]}


def _conditioner(with_tags: bool) -> CaptionConditioner:
    enc = HashEncoder(1024)
    vecs = enc.pooled(CAPTIONS)
    tags = enc.pooled([tag_text(c, TAGS[c]) for c in CAPTIONS]) if with_tags else None
    return CaptionConditioner(enc, 8, CAPTIONS, vecs, tags)


def test_keywords_find_the_emoji_a_plain_prompt_means():
    plain, tagged = _conditioner(False), _conditioner(True)
    for prompt, want in (("a fluffy sheep", "ewe"), ("mind blown", "exploding head"), ("good luck", "crossed fingers")):
        assert tagged.nearest_captions(prompt, 1)[0][0] == want, prompt
        assert tagged(prompt).note.startswith(f"nearest caption: {want} ")
    # without keywords the caption words alone decide: "sheep" shares no word with "ewe"
    assert plain.nearest_captions("a fluffy sheep", 4)[0][1] < tagged.nearest_captions("a fluffy sheep", 1)[0][1]
    # an exact caption still wins with keywords on (its caption similarity is 1)
    assert tagged.nearest_captions("goat", 1)[0][0] == "goat"


def test_tag_text_and_mismatched_tag_vectors():
    assert tag_text("exploding head", TAGS["exploding head"]) == "exploding head: blown, mind, mindblown, shocked"
    assert tag_text("ewe", []) == "ewe"
    enc = HashEncoder(16)
    with pytest.raises(ValueError, match="one vector per snap caption"):
        CaptionConditioner(enc, 8, CAPTIONS, enc.pooled(CAPTIONS), enc.pooled(CAPTIONS[:2]))


def test_snap_files_write_both_vector_sets(tmp_path):
    meta = [{"caption": f"{c}, google style", "subgroup": "x", "tags": TAGS[c], "split": "train"} for c in CAPTIONS]
    meta.append({"caption": "held out thing, google style", "subgroup": "y", "tags": ["z"], "split": "heldout"})
    enc = HashEncoder(16)
    assert snap_files(tmp_path, meta, enc) == {"captions": "captions.json", "vectors": "caption_vectors.safetensors"}
    t = load_file(str(tmp_path / "caption_vectors.safetensors"))
    assert t["vectors"].shape == t["tag_vectors"].shape == (4, 16)
    want = enc.pooled([tag_text(c, TAGS[c]) for c in CAPTIONS])
    assert torch.allclose(t["tag_vectors"].float(), want, atol=1e-3)
