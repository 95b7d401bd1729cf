"""Prompts understood as typed: tests/data/prompt_table.json (prompts written the way people type them, with the
emoji a person would accept) on the bundled models' real snapper (engine/snap.py with the MiniLM encoder), the
parser that takes tone, gender and filler apart from the subject, and the note of a weak match."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from lantern_studio.engine.snap import IdentityConditioner, Match, Parsed, name_words, parse_prompt, read_words
from lantern_studio.models import BUNDLED, BUNDLED_NAME, bundled_dir
from lantern_studio.models.local import identity_conditioner

TABLE = json.loads((Path(__file__).parent / "data" / "prompt_table.json").read_text(encoding="utf-8"))
#: the share of the table that must snap to an accepted identity (issue 60: 95 %; both bundled models reach
#: 257 / 266 = 96.6 % — the misses are listed by the test when it fails)
MIN_RATE = 0.96
#: how much lower the table scores with the keyword score off (sentence similarity alone, no synonyms or name
#: bonus either: 230 / 266 = 86.5 %, 10 points under)
KEYWORDS_GAIN = 0.08


def _conditioner(name: str) -> IdentityConditioner:
    folder = bundled_dir(name)
    return identity_conditioner(json.loads((folder / "model.json").read_text())["conditioning"], folder)


@pytest.fixture(scope="module")
def emoji64() -> IdentityConditioner:
    return _conditioner(BUNDLED_NAME)


def _misses(c: IdentityConditioner) -> list:
    """The table's rows ``c`` gets wrong (identity not accepted, or the tone not the one named), as lines."""
    codes = [r["identity"] for r in c.identities]
    out = []
    for row in TABLE:
        m = c.match(row["prompt"])
        tone = None if row["tone"] is None else c.tones[row["tone"]]
        if codes[m.identity] not in row["accept"] or m.tone != tone:
            out.append(f"{row['prompt']!r} → {m.name} ({m.tone}), {m.similarity:.2f}; accepted: {row['names']}")
    return out


def test_the_table_is_typed_prompts_whose_accepted_emoji_the_model_draws():
    classes = {r["identity"]: r["name"] for r in json.loads((bundled_dir() / "identities.json").read_text())["classes"]}
    assert len(TABLE) >= 110
    assert len({r["prompt"] for r in TABLE}) == len(TABLE)
    for row in TABLE:
        assert set(row) == {"prompt", "accept", "names", "tone"}, row
        assert row["accept"] and all(code in classes for code in row["accept"]), row
        assert row["names"] == [classes[code] for code in row["accept"]], row
        assert row["tone"] is None or row["tone"] in range(5), row
    # written for this table: none of the model's own common prompts
    common = {r["prompt"].lower() for r in json.loads((bundled_dir() / "common_prompts.json").read_text())}
    assert not [r["prompt"] for r in TABLE if r["prompt"].lower() in common]


@pytest.mark.parametrize("name", sorted(BUNDLED))
def test_typed_prompts_snap_to_what_people_meant(name, emoji64):
    c = emoji64 if name == BUNDLED_NAME else _conditioner(name)
    misses = _misses(c)
    rate = 1 - len(misses) / len(TABLE)
    assert rate >= MIN_RATE, f"{name}: {rate:.1%} of {len(TABLE)} snap right; misses:\n" + "\n".join(misses)


def test_the_keyword_score_is_what_lifts_the_table(emoji64):
    """The mutant: the same snapper with the keyword weight at 0 (sentence similarity alone) scores measurably
    lower, so the table shows the keyword score matters."""
    plain = copy.copy(emoji64)
    plain.keyword_weight = 0.0
    with_keywords = 1 - len(_misses(emoji64)) / len(TABLE)
    without = 1 - len(_misses(plain)) / len(TABLE)
    assert with_keywords - without >= KEYWORDS_GAIN, (with_keywords, without)


def test_tone_words_name_the_tone_and_not_the_subject(emoji64):
    codes = [r["identity"] for r in emoji64.identities]
    for prompt in ("thumbs up, dark skin", "thumbs up, darker skin", "thumbs up, skin tone: dark",
                   "dark-skinned thumbs up"):
        m = emoji64.match(prompt)
        assert (codes[m.identity], m.tone) == ("1F44D", "dark skin tone"), (prompt, m.note())
    # the default yellow without tone words; an identity without tones keeps its colour and says so
    assert emoji64.match("thumbs up").tone is None
    heart = emoji64.match("red heart, light skin")
    assert heart.name == "red heart" and heart.tone is None and "has no skin tones" in heart.note()


def test_gender_words_pick_the_variant_the_model_has_and_say_when_it_has_none(emoji64):
    """The model's person gestures come as person / man / woman identities: a gender word picks the variant;
    elsewhere (hands) it draws no gender, and the note says so; a gendered thing is its own subject."""
    assert emoji64.match("a frowning girl").name == "woman frowning"
    assert emoji64.match("guy shrugging, medium skin").name == "man shrugging"
    assert emoji64.match("a woman facepalming").name == "woman facepalming"
    waving = emoji64.match("a woman waving")
    assert waving.name == "waving hand" and "this model draws no woman variant of waving hand" in waving.note()
    assert emoji64.match("female sign").name == "female sign"
    beetle = emoji64.match("a lady beetle")
    assert beetle.name == "lady beetle" and "variant" not in beetle.note()
    assert emoji64.match("the men's room").name == "men’s room"
    # a person the model was not taught: told so, and no gender note about the stand-in
    old = emoji64.match("old woman")
    assert old.outside == "old woman" and "variant" not in old.note()


def test_a_weak_match_says_it_is_the_closest_the_model_can_draw(emoji64):
    m = emoji64.match("zxqv blorptastic")
    assert m.weak and m.note().startswith(f"the closest it can draw, {m.name} · ")
    assert m.note().endswith(": a weak match")
    santa = emoji64.match("santa")  # Santa Claus is outside the repertoire
    assert "it does not know 'Santa Claus'" in santa.note()
    good = emoji64.match("a slice of pizza")
    assert good.name == "pizza" and not good.weak and "weak" not in good.note()
    assert "closest" not in emoji64.match("#12").note()  # a class picked by number is never weak


def test_the_note_of_a_weak_match_does_not_assert_it():
    strong = Match(3, "red heart", 0.82, "fluent-flat", None, "a red heart")
    weak = Match(3, "red heart", 0.31, "fluent-flat", None, "zxqv", weak=True)
    assert strong.note() == "red heart · fluent flat — matched from 'a red heart', 0.82"
    assert weak.note() == ("the closest it can draw, red heart · fluent flat — matched from 'zxqv', 0.31: "
                           "a weak match")


@pytest.mark.parametrize("prompt, subject, tone, gender", [
    ("thumbs up, dark skin", "thumbs up", 4, None),
    ("please draw me a cute little puppy", "puppy", None, None),
    ("a picture of the moon emoji", "moon", None, None),
    ("some big ocean waves", "ocean waves", None, None),
    ("a frowning girl with light skin", "frowning person", 0, "woman"),
    ("man giving a thumbs up, medium-dark skin tone", "person giving thumbs up", 3, "man"),
    ("a white heart", "white heart", None, None),  # a colour, not a tone
])
def test_the_parser_takes_tone_gender_and_filler_apart_from_the_subject(prompt, subject, tone, gender):
    p = parse_prompt(prompt)
    assert (p.subject, p.tone, p.gender) == (subject, tone, gender)


def test_the_parser_keeps_words_that_are_the_subject():
    pairs = frozenset({("old", "woman"), ("big", "eyes"), ("woman", "frowning"), ("lady", "beetle")})
    assert parse_prompt("an old woman", pairs).subject == "old woman"  # a person of its own, not a modifier
    assert parse_prompt("a lady beetle", pairs) == Parsed("lady beetle", None, None, ("a",))
    assert parse_prompt("smiley with big eyes", pairs).subject == "smiley with big eyes"
    assert parse_prompt("woman frowning", pairs).subject == "woman frowning"
    assert parse_prompt("the female sign").subject == "female sign"  # a sign, not a person's gender
    assert parse_prompt("women's room").subject == "women's room"
    assert parse_prompt("girl").subject == "girl"  # the only word: the subject
    assert parse_prompt("a").subject == "a"  # nothing but filler: the prompt as typed
    assert parse_prompt("a big oak tree").dropped == ("a", "big")


def test_synonyms_and_numbers_are_read_as_the_words_names_use():
    idf = {"motorcycl": 6.0, "automobil": 6.0, "car": 4.0, "quarter": 6.0, "moon": 5.0, "ok": 5.0, "hand": 3.0,
           "sign": 4.0, "7": 6.0, "seven": 6.0}
    by_text = {w.text: w for w in read_words("motorbike", idf)}
    assert by_text["motorbike"].stems == ("motorbik", "motorcycl")  # a synonym, not a typo of "motorized"
    assert by_text["motorbike"].weight == 1.0
    car = read_words("my red car", idf)[-1]
    assert car.stems == ("car", "automobil")
    # a phrase is read word for word: "half" as "quarter", "sign" (in "ok sign") as "hand"; "sign" alone is a sign
    assert [w.stems for w in read_words("half moon", idf)] == [("half", "quarter"), ("moon",)]
    assert [w.stems for w in read_words("ok sign", idf)] == [("ok",), ("sign", "hand")]
    assert read_words("stop sign", idf)[-1].stems == ("sign",)
    assert [w.stems for w in read_words("number 7", idf)][-1] == ("7", "seven")


def test_a_prompt_that_says_a_name_word_for_word_snaps_to_it(emoji64):
    assert name_words("the men’s room") == frozenset({"men", "room"})
    assert name_words("rock on") != name_words("rock")  # "on" changes what is meant
    assert emoji64.match("a house").name == "house"  # not "houses", which MiniLM puts nearer
    assert emoji64.match("houses").name == "houses"
    assert emoji64.match("number 7").name == "keycap: 7"
    assert emoji64.match("motorbike").name == "motorcycle"
