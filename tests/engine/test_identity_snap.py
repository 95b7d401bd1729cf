"""Prompt → (identity, style, tone) for a factorised class model, and the note that says so."""

from __future__ import annotations

import pytest
import torch

from lantern_studio.engine.settings import GenerationSettings, SettingsError
from lantern_studio.engine.snap import IdentityConditioner, find_tone
from lantern_studio.engine.text import HashEncoder, PromptError
from lantern_studio.training.ship import tag_text

STYLES = ["google", "twitter", "fluent-flat"]
TONES = ["light skin tone", "medium-light skin tone", "medium skin tone", "medium-dark skin tone", "dark skin tone"]
CLASSES = [
    {"identity": "1F436", "name": "dog face", "tags": ["dog", "pet", "puppy"], "styles": STYLES, "tones": False},
    {"identity": "1F44D", "name": "thumbs up", "tags": ["hand", "like", "yes"], "styles": STYLES, "tones": True},
    {"identity": "2764", "name": "red heart", "tags": ["love", "heart"], "styles": ["google", "twitter"],
     "tones": False},
]
OUTSIDE = [{"identity": "1F9D1-200D-1F692", "name": "firefighter", "tags": ["fire", "firetruck"], "styles": STYLES}]


def _conditioner(default_style="fluent-flat") -> IdentityConditioner:
    enc = HashEncoder(512)
    vec = enc.pooled([r["name"] for r in CLASSES])
    tags = enc.pooled([tag_text(r["name"], r["tags"]) for r in CLASSES])
    out = enc.pooled([r["name"] for r in OUTSIDE])
    out_tags = enc.pooled([tag_text(r["name"], r["tags"]) for r in OUTSIDE])
    return IdentityConditioner(enc, CLASSES, STYLES, TONES, vec, tags, default_style, OUTSIDE, out, out_tags)


def test_a_prompt_snaps_to_an_identity_in_the_default_style_and_the_note_says_what_was_drawn():
    c = _conditioner()
    cond = c("a happy puppy dog")
    assert cond.cond.tolist() == [[0, STYLES.index("fluent-flat"), 0]]
    m = cond.match
    assert (m.name, m.style, m.tone) == ("dog face", "fluent-flat", None)
    assert cond.note.startswith("dog face · fluent flat — matched from 'a happy puppy dog', ")
    assert f"{m.similarity:.2f}" in cond.note
    # the next matches are offered as alternatives, best first, without the chosen one
    assert [a[1] for a in m.alternatives] and "dog face" not in [a[1] for a in m.alternatives]


def test_dark_skin_picks_the_dark_tone_and_is_not_part_of_what_is_matched():
    c = _conditioner()
    cond = c("thumbs up, dark skin")
    assert cond.cond.tolist() == [[1, STYLES.index("fluent-flat"), 5]]
    assert cond.match.tone == "dark skin tone" and "thumbs up: dark skin tone" in cond.note
    assert c("thumbs up with medium-dark skin tone").cond[0, 2] == 4
    assert c("thumbs up").cond[0, 2] == 0
    # an identity without skin-tone variants keeps its colour, and the note says why
    heart = c("red heart, light skin")
    assert heart.cond[0, 2] == 0 and "has no skin tones" in heart.note


def test_tone_words_only_count_next_to_skin():
    assert find_tone("a white heart") == (None, "a white heart")
    assert find_tone("thumbs up dark-skinned") == (4, "thumbs up")
    assert find_tone("waving hand with medium-light skin tone") == (1, "waving hand")
    assert find_tone("ok hand, skin tone 3") == (2, "ok hand")


def test_style_by_name_any_per_seed_and_unknown_refused_by_name():
    c = _conditioner()
    assert c("a dog", GenerationSettings(style="google")).match.style == "google"
    # "any": one of the identity's own styles, fixed by the seed
    seen = {c("a red heart", GenerationSettings(style="any", seed=s)).match.style for s in range(40)}
    assert seen == {"google", "twitter"}
    assert (c("a dog", GenerationSettings(style="any", seed=7)).match.style
            == c("a dog", GenerationSettings(style="any", seed=7)).match.style)
    with pytest.raises(SettingsError, match="style: unknown style 'crayon'; choose from google, twitter, fluent-flat"):
        c("a dog", GenerationSettings(style="crayon"))
    # the default style where the identity has art in it, else the first style it has
    assert c("red heart").match.style == "google"


def test_prompts_outside_the_repertoire_snap_inside_it_and_say_so():
    c = _conditioner()
    m = c("firefighter").match
    assert m.outside == "firefighter" and m.name in {r["name"] for r in CLASSES}
    assert "it does not know 'firefighter'" in m.note()
    assert c("dog face").match.outside is None


def test_class_numbers_and_bad_prompts():
    c = _conditioner()
    assert c("#2").cond.tolist()[0][0] == 2
    with pytest.raises(PromptError, match=r"class number must be in \[0, 2\]"):
        c("#3")
    with pytest.raises(PromptError, match="must not be empty"):
        c("   ")


def test_vectors_that_do_not_fit_the_identities_are_refused():
    enc = HashEncoder(16)
    with pytest.raises(ValueError, match="vectors"):
        IdentityConditioner(enc, CLASSES, STYLES, TONES, torch.zeros(2, 16))
    with pytest.raises(ValueError, match="default style"):
        IdentityConditioner(enc, CLASSES, STYLES, TONES, torch.zeros(3, 16), default_style="crayon")


def test_a_prompt_whose_best_match_is_outside_is_drawn_as_the_inside_emoji_nearest_that_one():
    enc = HashEncoder(512)
    classes = [{"identity": "A", "name": "dog face", "tags": []}, {"identity": "B", "name": "happy cat", "tags": []}]
    outside = [{"identity": "C", "name": "dog", "tags": []}]
    vec = enc.pooled([r["name"] for r in classes])
    out = enc.pooled([r["name"] for r in outside])
    c = IdentityConditioner(enc, classes, STYLES, TONES, vec, vec, "google", outside, out, out)
    # "a happy dog" is as near "happy cat" as "dog face" by words, but what it means is the dog it does not know
    m = c.match("happy dog")
    assert m.outside == "dog" and m.name == "dog face"


def test_a_model_offers_only_the_styles_it_was_trained_to_draw():
    """offered_styles (model v4 trains fluent flat only): other styles keep their rows but are refused by
    name and never picked for 'any'; an identity without art in an offered style is drawn in its own."""
    enc = HashEncoder(512)
    vec = enc.pooled([r["name"] for r in CLASSES])
    c = IdentityConditioner(enc, CLASSES, STYLES, TONES, vec, default_style="fluent-flat",
                            offered_styles=["fluent-flat"])
    assert c.styles == STYLES and c.offered_styles == ["fluent-flat"]
    with pytest.raises(SettingsError, match="style: unknown style 'google'; choose from fluent-flat or 'any'"):
        c("a dog", GenerationSettings(style="google"))
    assert {c("a dog", GenerationSettings(style="any", seed=s)).match.style for s in range(20)} == {"fluent-flat"}
    assert c("a dog").match.style == "fluent-flat"
    assert c("red heart").match.style == "google"  # no fluent art: its own first style, not a blank one
    with pytest.raises(ValueError, match="default style 'google' is not one of fluent-flat"):
        IdentityConditioner(enc, CLASSES, STYLES, TONES, vec, default_style="google", offered_styles=["fluent-flat"])
    with pytest.raises(ValueError, match="offered style 'crayon'"):
        IdentityConditioner(enc, CLASSES, STYLES, TONES, vec, offered_styles=["crayon"])


def test_a_model_taught_any_may_ship_it_as_its_default_and_never_lists_it_as_a_named_style():
    """Model v5 teaches a learned "any" row (train ar --style-dropout): its folder may name "any" the default,
    so a plain prompt draws the model's own choice of design, while a named style still pins; a model without
    the row cannot default to it."""
    enc = HashEncoder(512)
    vec = enc.pooled([r["name"] for r in CLASSES])
    taught = [*STYLES, "any"]
    c = IdentityConditioner(enc, CLASSES, taught, TONES, vec, default_style="any")
    assert c.offered_styles == STYLES  # "any" is a setting of its own, not one more named style
    assert c("a dog").match.style == "any" and c("red heart").match.style == "any"
    assert c("a dog", GenerationSettings(style="twitter")).match.style == "twitter"
    plain = IdentityConditioner(enc, CLASSES, taught, TONES, vec)
    assert plain("a dog").match.style == "google"  # the first named style, never the "any" row by default
    with pytest.raises(ValueError, match="default style 'any' needs a model taught"):
        IdentityConditioner(enc, CLASSES, STYLES, TONES, vec, default_style="any")
