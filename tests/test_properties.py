"""Property-based: every input either works or fails with the project's own error naming
what was wrong — never another exception, never a traceback.

Fast profile in CI (about 600 examples over the four properties); the long profile
(`pytest -m slow`, 10,000+ examples) runs the same properties with more examples.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
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
plausible = {
    "seed": st.integers(-(2**63), 2**63 - 1), "temperature": st.floats(0, 200), "top_k": st.integers(-2, 80),
    "top_p": st.floats(0, 1.2), "cfg_scale": st.floats(-1, 1e3), "greedy": st.booleans(),
    "drafter": st.sampled_from(["none", "jacobi", "eagle", "medusa"]), "draft_length": st.integers(-1, 70),
    "k": st.integers(-1, 70), "delta": st.floats(-0.1, 1.1), "lam": st.one_of(st.none(), st.floats(0, 10)),
    "coupling": st.booleans(),
}
settings_dicts = st.dictionaries(st.sampled_from(FIELDS), anything, max_size=4) | st.fixed_dictionaries(
    {}, optional=plausible)
prompts = st.one_of(st.text(max_size=40), st.sampled_from(["red heart", "", " ", "a" * 1001, "ab\udc80", "\x00"]))


def _names_a_field(err: Exception) -> bool:
    return str(err).split(":", 1)[0] in FIELDS + ("prompt", "model")


def _generate_property(pipe, fields: dict, prompt) -> None:
    try:
        s = GenerationSettings(**{**pipe.defaults.to_dict(), **fields})
        result = pipe.generate(prompt, s)
    except (SettingsError, PromptError, DistributionError) as e:
        assert _names_a_field(e), str(e)
        return
    assert result.image.shape == (64, 64, 3) and result.image.dtype == np.uint8
    json.dumps(result.stats.to_dict(), default=str)


@settings(max_examples=300, **FAST)
@given(fields=settings_dicts, prompt=prompts)
def test_any_settings_and_prompt_generate_or_fail_clearly(tiny, fields, prompt):
    _generate_property(tiny[1], fields, prompt)


@settings(max_examples=150, **FAST)
@given(argv=st.lists(st.sampled_from(["--k", "--delta", "--lam", "--cfg", "--temperature", "--top-k", "--top-p",
                                      "--seed", "--draft-length", "--drafter", "--precision", "--greedy",
                                      "1e400", "-1", "nan", "0", "3", "0.5", "jacobi", "bf16", "zz", "10**4"]),
                     max_size=6))
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
    except CheckpointError as e:
        assert str(folder) in str(e) and "\n" not in str(e), str(e)


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
