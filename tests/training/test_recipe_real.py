"""The default model's recipe on its real data (slow: it builds the dataset from the pinned npm packages and
tokenizes 3,491 pictures): the data stage lands on the card's hashes, and the last AR stage, started from its
recorded start (model v4's weights as they shipped), replays a short fixed-seed span to pinned tensors."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import torch

from lantern_studio.training.common import tensors_digest
from lantern_studio.training.recipe import read_recipe
from lantern_studio.training.replay import replay

ROOT = Path(__file__).resolve().parents[2]
#: where model v4 shipped (the start of stage ar-v4.1)
V4_COMMIT = "ec74de2"
SPAN = 6
#: stage ar-v4.1's weights after SPAN steps from its start, by the CPU capability torch dispatches for
PINNED = {"AVX512": "180a805fcff548dd899dcc199874218d737e68bfa6067d709f9cadc313639401"}

pytestmark = pytest.mark.slow


def git_show(spec: str, out: Path) -> bool:
    shown = subprocess.run(["git", "-C", str(ROOT), "show", spec], capture_output=True)
    if shown.returncode:
        return False
    out.write_bytes(shown.stdout)
    return True


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return Path(os.environ.get("LANTERN_REPLAY_WORK") or tmp_path_factory.mktemp("replay-real"))


def test_the_data_stage_rebuilds_the_cards_hashes(work):
    recipe = read_recipe(ROOT / "recipes" / "emoji-64.toml")
    assert replay(recipe, work, only="data") == {"data": True}


def test_the_last_ar_stage_replays_a_short_span_from_its_recorded_start(work):
    recipe = read_recipe(ROOT / "recipes" / "emoji-64.toml")
    assert replay(recipe, work, only="data") == {"data": True}
    assert replay(recipe, work, only="tokenizer") == {"tokenizer": True}
    start = work / "ar-v4"
    start.mkdir(parents=True, exist_ok=True)
    for name in ("gpt.safetensors", "identities.json", "model.json"):  # model.json names its styles
        if not git_show(f"{V4_COMMIT}:resources/models/emoji-64/{name}", start / name):
            pytest.skip(f"commit {V4_COMMIT} is not in this clone (git fetch --unshallow)")
    assert replay(recipe, work, only="ar-v4") == {"ar-v4": True}  # its expected tensors: skipped, not trained
    replay(recipe, work, only="ar-v4.1", until_step=SPAN)
    ck = torch.load(work / "ar-v4.1" / "checkpoint.pt", weights_only=True)
    assert ck["step"] == SPAN
    got = tensors_digest(work / "ar-v4.1" / "gpt.safetensors")
    print(f"ar-v4.1 after {SPAN} steps: tensors {got}")
    want = PINNED.get(torch.backends.cpu.get_cpu_capability())
    if want is None:
        pytest.skip(f"no hash pinned for {torch.backends.cpu.get_cpu_capability()} kernels (this run: {got})")
    assert got == want
