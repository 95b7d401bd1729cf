"""Property-based: every input either works or fails with the project's own error naming
what was wrong — never another exception, never a traceback.

Fast profile in CI (about 600 examples over the four properties); the long profile
(`pytest -m slow`, 10,000+ examples) runs the same properties with more examples.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from lantern_studio.cli import main as cli_main
from lantern_studio.engine.checkpoints import CheckpointError
from lantern_studio.engine.sampling import DistributionError
from lantern_studio.engine.settings import GenerationSettings, SettingsError
from lantern_studio.engine.text import PromptError
from lantern_studio.models import load_pipeline
from lantern_studio.models.tiny import build_tiny_model_dir

FIELDS = ("seed", "temperature", "top_k", "top_p", "cfg_scale", "greedy", "drafter", "draft_length", "k", "delta",
          "lam", "coupling")
FAST = dict(deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = build_tiny_model_dir(tmp_path_factory.mktemp("prop") / "tiny", grid=4)
    return folder, load_pipeline(str(folder))


# Values of every kind a caller, a preferences file or a fuzzer can hand over.
anything = st.one_of(
    st.none(), st.booleans(),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.sampled_from([np.int64(3), np.float32(0.5), np.float64(1e300), np.int32(-1)]),
    st.lists(st.integers(), max_size=2),
)
# Mostly valid values, edges included, so most cases reach the decode loop (the tiny model's vocabulary is 64).
plausible = {
    "seed": st.integers(-(2**63), 2**63 - 1), "temperature": st.floats(0, 110), "top_k": st.integers(0, 66),
    "top_p": st.floats(1e-7, 1.0), "cfg_scale": st.floats(0, 105), "greedy": st.booleans(),
    "drafter": st.sampled_from(["none", "jacobi", "eagle", "jacobi", "eagle", "medusa"]),
    "draft_length": st.integers(1, 66), "k": st.integers(0, 64), "delta": st.floats(0, 1.0),
    "lam": st.one_of(st.none(), st.none(), st.floats(1, 10)), "coupling": st.booleans(),
}
settings_dicts = st.one_of(st.fixed_dictionaries({}, optional=plausible), st.fixed_dictionaries({}, optional=plausible),
                           st.dictionaries(st.sampled_from(FIELDS), anything, max_size=4))
prompts = st.one_of(st.sampled_from(["red heart", "a happy dog", "ab\udc80", "", " ", "a" * 1001, "\x00 cat"]),
                    st.text(min_size=1, max_size=40))


def _names_a_field(err: Exception) -> bool:
    return str(err).split(":", 1)[0] in FIELDS + ("prompt", "model")


def _generate_property(pipe, fields: dict, prompt) -> None:
    try:
        s = GenerationSettings(**{**pipe.defaults.to_dict(), **fields})
        result = pipe.generate(prompt, s)
    except (SettingsError, PromptError, DistributionError) as e:
        assert _names_a_field(e), str(e)
        event(f"refused: {str(e).split(':', 1)[0]}")
        return
    event("generated an image")
    assert result.image.shape == (64, 64, 3) and result.image.dtype == np.uint8
    json.dumps(result.stats.to_dict(), default=str)


@settings(max_examples=300, **FAST)
@given(fields=settings_dicts, prompt=prompts)
def test_any_settings_and_prompt_generate_or_fail_clearly(tiny, fields, prompt):
    _generate_property(tiny[1], fields, prompt)


FLAGS = ["--k", "--delta", "--lam", "--cfg", "--temperature", "--top-k", "--top-p", "--seed", "--draft-length",
         "--drafter", "--precision"]
VALUES = ["1e400", "-1", "nan", "inf", "0", "3", "0.5", "1", "jacobi", "eagle", "none", "bf16", "fp32", "auto", "zz",
          "10**4", "99999999999999999999999"]
VALID = {"--k": ["0", "8", "63"], "--delta": ["0", "0.1", "1"], "--lam": ["1", "2"], "--cfg": ["1", "4"],
         "--temperature": ["0.5", "1"], "--top-k": ["0", "10"], "--top-p": ["0.9", "1"], "--seed": ["0", "-5", "7"],
         "--draft-length": ["1", "8"], "--drafter": ["none", "jacobi", "eagle"], "--precision": ["auto", "fp32"]}
cli_pairs = st.lists(st.tuples(st.sampled_from(FLAGS), st.sampled_from(VALUES)), max_size=3).map(
    lambda pairs: [x for p in pairs for x in p])
good_pairs = st.lists(st.sampled_from(sorted(VALID)).flatmap(
    lambda f: st.sampled_from(VALID[f]).map(lambda v: [f, v])), max_size=3).map(lambda ps: [x for p in ps for x in p])


@settings(max_examples=150, **FAST)
@given(argv=st.one_of(good_pairs, good_pairs, cli_pairs, st.lists(st.sampled_from(FLAGS + VALUES + ["--greedy"]), max_size=6)))
def test_cli_never_prints_a_traceback(tiny, tmp_path_factory, argv):
    out = tmp_path_factory.mktemp("cli") / "x.png"
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            rc = cli_main(["generate", "red heart", "--model", str(tiny[0]), "--out", str(out), "--quiet", *argv])
        except SystemExit as e:  # argparse: usage + one error line, exit 2
            rc = e.code
    text = err.getvalue()
    assert "Traceback" not in text
    assert rc in (0, 2), text
    assert (rc == 0) == out.is_file()
    event("wrote the image" if rc == 0 else "refused with exit 2")


json_values = st.recursive(st.none() | st.booleans() | st.integers(-5, 10**6) | st.floats(allow_nan=False)
                           | st.text(max_size=12) | st.sampled_from(["../gpt.safetensors", "/etc/passwd",
                                                                     "gpt.safetensors", "vq.safetensors"]),
                           lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3),
                           max_leaves=6)
MANIFEST_KEYS = ("gpt", "vq", "eagle", "conditioning", "defaults", "files", "extra_files", "name", "format",
                 "recogniser")


@settings(max_examples=150, **FAST)
@given(changes=st.dictionaries(st.sampled_from(MANIFEST_KEYS), json_values, min_size=1, max_size=3))
def test_any_manifest_loads_or_is_refused_by_name(tiny, tmp_path_factory, changes):
    folder = tmp_path_factory.mktemp("man") / "m"
    shutil.copytree(tiny[0], folder)
    man = json.loads((folder / "model.json").read_text())
    man.update(changes)
    (folder / "model.json").write_text(json.dumps(man))
    try:
        load_pipeline(str(folder))
        event("loaded")
    except CheckpointError as e:
        assert str(folder) in str(e) and "\n" not in str(e), str(e)
        event("refused by name")


@pytest.mark.slow
@settings(max_examples=8000, **FAST)
@given(fields=settings_dicts, prompt=prompts)
def test_long_profile_settings(tiny, fields, prompt):
    _generate_property(tiny[1], fields, prompt)


@pytest.mark.slow
@settings(max_examples=2000, **FAST)
@given(changes=st.dictionaries(st.sampled_from(MANIFEST_KEYS), json_values, min_size=1, max_size=3))
def test_long_profile_manifests(tiny, tmp_path_factory, changes):
    test_any_manifest_loads_or_is_refused_by_name.hypothesis.inner_test(tiny, tmp_path_factory, changes)


@pytest.mark.slow
@settings(max_examples=1000, **FAST)
@given(argv=st.one_of(good_pairs, good_pairs, cli_pairs, st.lists(st.sampled_from(FLAGS + VALUES + ["--greedy"]),
                                                                  max_size=6)))
def test_long_profile_cli(tiny, tmp_path_factory, argv):
    test_cli_never_prints_a_traceback.hypothesis.inner_test(tiny, tmp_path_factory, argv)


CLASS_KEYS = ("kind", "factorised", "identities", "styles", "tones", "default_style", "encoder", "dim", "snap", "names")


@pytest.fixture(scope="module")
def v3_folder(tmp_path_factory):
    from support.tiny import tiny_v3_folder

    return tiny_v3_folder(tmp_path_factory.mktemp("v3") / "m")


def _class_manifest_case(v3_folder, tmp_path_factory, changes):
    folder = tmp_path_factory.mktemp("cls") / "m"
    shutil.copytree(v3_folder, folder)
    man = json.loads((folder / "model.json").read_text())
    man["conditioning"].update(changes)
    (folder / "model.json").write_text(json.dumps(man))
    try:
        pipe = load_pipeline(str(folder))
        pipe.conditioner("a blue star")
        event("loaded")
    except CheckpointError as e:
        assert str(folder) in str(e) and "\n" not in str(e), str(e)
        event("refused by name")


@settings(max_examples=500, **FAST)
@given(changes=st.dictionaries(st.sampled_from(CLASS_KEYS), json_values, min_size=1, max_size=3))
def test_any_class_folder_conditioning_loads_or_is_refused_by_name(v3_folder, tmp_path_factory, changes):
    """A factorised class model's conditioning fields with random JSON: it loads and conditions, or one
    CheckpointError names the folder — never an IndexError inside the engine or torch."""
    _class_manifest_case(v3_folder, tmp_path_factory, changes)


@pytest.mark.slow
@settings(max_examples=10_000, **FAST)
@given(changes=st.dictionaries(st.sampled_from(CLASS_KEYS), json_values, min_size=1, max_size=3))
def test_long_profile_class_folders(v3_folder, tmp_path_factory, changes):
    _class_manifest_case(v3_folder, tmp_path_factory, changes)
