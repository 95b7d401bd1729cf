import pytest

from lantern_studio.engine.settings import GenerationSettings, SettingsError
from lantern_studio.engine.text import ClassConditioner, PromptError, check_prompt

BAD = [
    ("seed", 1.5, "integer"),
    ("temperature", 0.0, "> 0 unless greedy"),
    ("temperature", float("nan"), "finite"),
    ("top_k", -1, r"\[0, 1024\]"),
    ("top_k", 1025, r"\[0, 1024\]"),
    ("top_p", 0.0, r"\(0, 1\]"),
    ("top_p", 1.5, r"\(0, 1\]"),
    ("cfg_scale", -0.1, "≥ 0"),
    ("drafter", "medusa", "none, jacobi, eagle"),
    ("draft_length", 0, r"\[1, 64\]"),
    ("k", -1, r"\[0, 1023\]"),
    ("k", 1024, r"\[0, 1023\]"),
    ("delta", 1.01, r"\[0, 1\]"),
    ("delta", -0.01, r"\[0, 1\]"),
    ("lam", 0.5, "≥ 1"),
    ("greedy", "yes", "true or false"),
]


@pytest.mark.parametrize("field,value,message", BAD)
def test_each_bad_field_names_itself(field, value, message):
    with pytest.raises(SettingsError, match=message) as e:
        GenerationSettings(**{field: value}).validate(vocab_size=1024)
    assert e.value.field == field
    assert str(e.value).startswith(field + ":")


def test_good_settings_pass_and_round_trip():
    s = GenerationSettings(seed=3, k=1023, delta=1.0, top_k=1024, greedy=True, temperature=0.0, lam=2.0)
    assert s.validate(1024) is s
    assert GenerationSettings.from_dict(s.to_dict()) == s
    assert s.relaxation.active and s.sampling.greedy


def test_prompts():
    assert check_prompt("  a   red\nheart ") == "a red heart"
    with pytest.raises(PromptError, match="empty"):
        check_prompt("   ")
    with pytest.raises(PromptError, match="at most 1000"):
        check_prompt("x" * 1001)
    c = ClassConditioner(["tench, Tinca tinca", "goldfish", "great white shark"])
    assert c.match("Goldfish") == 1
    assert c.match("tinca tinca") == 0
    assert c.match("#2") == 2
    assert c.match("great white shrk") == 2  # fuzzy
    with pytest.raises(PromptError, match="did you mean: goldfish"):
        c.match("goldfsh bowl")
    with pytest.raises(PromptError, match=r"\[0, 2\]"):
        c.match("#7")
