import pytest

from lantern_studio.engine.settings import GenerationSettings, SettingsError
from lantern_studio.engine.text import ClassConditioner, PromptError, check_prompt

BAD = [
    ("seed", 1.5, "integer"),
    ("temperature", 0.0, r"\[0.001, 100\] unless greedy"),
    ("temperature", 1e5, r"\[0.001, 100\] unless greedy"),
    ("temperature", 10**400, "finite number"),  # an int no float holds: a SettingsError, not OverflowError
    ("temperature", float("nan"), "finite"),
    ("top_k", -1, r"\[0, 1024\]"),
    ("top_k", 1025, r"\[0, 1024\]"),
    ("top_p", 0.0, r"\[1e-06, 1\]"),
    ("top_p", 1e-308, r"\[1e-06, 1\]"),
    ("top_p", 1.5, r"\[1e-06, 1\]"),
    ("cfg_scale", -0.1, r"\[0, 100\]"),
    ("cfg_scale", 1e200, r"\[0, 100\]"),
    ("cfg_scale", 10**400, "finite number"),
    ("delta", 10**400, "finite number"),
    ("lam", 10**400, "finite number"),
    ("drafter", "medusa", "none, jacobi, eagle"),
    ("draft_length", 0, r"\[1, 64\]"),
    ("k", -1, r"\[0, 1023\]"),
    ("k", 1024, r"\[0, 1023\]"),
    ("delta", 1.01, r"\[0, 1\]"),
    ("delta", -0.01, r"\[0, 1\]"),
    ("lam", 0.5, r"\[1, 1e\+06\]"),
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
    assert s.validate(1024) == s
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


def test_numpy_scalars_are_accepted_and_come_back_as_python_numbers():
    import json

    import numpy as np

    s = GenerationSettings(seed=np.int64(7), temperature=np.float32(0.5), top_k=np.int32(10), k=np.int64(4),
                           delta=np.float64(0.1)).validate(1024)
    assert type(s.seed) is int and type(s.temperature) is float and type(s.top_k) is int and type(s.k) is int
    json.dumps(s.to_dict())  # what the PNG metadata and history store


def test_prompt_with_lone_surrogates_or_control_characters():
    with pytest.raises(PromptError, match=r"character 3 \(U\+DC80\) is not valid Unicode text"):
        check_prompt("ab\udc80cd")  # what undecodable bytes on a command line turn into
    assert check_prompt("red\x00 heart\x1b") == "red heart"
