"""A heads file in a model folder is untrusted input (engine/draft_heads.py ``check_config``,
models/local.py ``load_heads``): its declared sizes are bounded by the target it belongs to (``dim`` its
width, ``heads`` ≤ the draft window, ``hidden`` ≤ HIDDEN_PER_WIDTH × the width) and by the values the file
holds, all checked before any tensor is made; ``generate --drafter heads`` on such a folder is one line."""

from __future__ import annotations

import json
import shutil
import time

import pytest
import torch
from safetensors.torch import save_file

from lantern_studio.cli import main
from lantern_studio.engine import draft_heads
from lantern_studio.engine.checkpoints import CheckpointError
from lantern_studio.engine.draft_heads import HIDDEN_PER_WIDTH, MAX_HEADS, DraftHeads, HeadsConfigError, check_config
from lantern_studio.engine.files import sha256_file
from lantern_studio.engine.settings import GenerationSettings, SettingsError
from lantern_studio.models.local import load_model_dir
from support.tiny import tiny_v3_folder

DIM = 32  # tiny_v3_folder's target width


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    torch.set_num_threads(1)
    return tiny_v3_folder(tmp_path_factory.mktemp("model") / "m")


def _copy_with_heads(folder, dest, config: dict, n_heads: int = 2, hidden: int = 8):
    """A copy of the folder with a heads file of real (small) tensors whose metadata says ``config``,
    named and hashed in model.json (so only the heads' own check can refuse it)."""
    shutil.copytree(folder, dest)
    sd = {k: v.half() for k, v in DraftHeads(DIM, n_heads, hidden).state_dict().items()}
    save_file(sd, str(dest / "heads.safetensors"), metadata={"kind": "heads", "config": json.dumps(config)})
    man = json.loads((dest / "model.json").read_text())
    man["heads"] = "heads.safetensors"
    man["files"]["heads.safetensors"] = sha256_file(dest / "heads.safetensors")
    (dest / "model.json").write_text(json.dumps(man))
    return dest


def forbid_building(monkeypatch) -> list:
    """From now on, building a DraftHeads fails the test (the memory the bounds must keep from being spent)."""
    built = []

    def spy(self, dim, n_heads, hidden):
        built.append((dim, n_heads, hidden))
        raise AssertionError(f"DraftHeads({dim}, {n_heads}, {hidden}) built before the sizes were checked")

    monkeypatch.setattr(draft_heads.DraftHeads, "__init__", spy)
    return built


HOSTILE = [  # (the config the file declares, the field the line must name, the range it must state)
    ({"dim": DIM, "heads": 2, "hidden": 300000}, "hidden", f"[1, {HIDDEN_PER_WIDTH * DIM}]"),
    ({"dim": DIM, "heads": 1000000, "hidden": 8}, "heads", f"[1, {MAX_HEADS}]"),
    ({"dim": DIM, "heads": 2, "hidden": 1e9}, "hidden", f"[1, {HIDDEN_PER_WIDTH * DIM}]"),
    ({"dim": DIM, "heads": 2, "hidden": -8}, "hidden", "[1, "),
    ({"dim": DIM, "heads": 0, "hidden": 8}, "heads", f"[1, {MAX_HEADS}]"),
    ({"dim": DIM, "heads": 2, "hidden": 0}, "hidden", "[1, "),
    ({"dim": DIM, "heads": 2.5, "hidden": 8}, "heads", f"[1, {MAX_HEADS}]"),
    ({"dim": DIM, "heads": 2, "hidden": "8"}, "hidden", "[1, "),
    ({"dim": DIM, "heads": True, "hidden": 8}, "heads", f"[1, {MAX_HEADS}]"),
    ({"dim": DIM, "heads": 2}, "hidden", "[1, "),
    ({"dim": 10**9, "heads": 2, "hidden": 8}, "dim", f"must be {DIM}"),
    # within every bound, but more than the file holds (64 heads of 256 in a file of 2 heads of 8)
    ({"dim": DIM, "heads": MAX_HEADS, "hidden": HIDDEN_PER_WIDTH * DIM}, "parameters", "refused before allocating"),
]


@pytest.mark.parametrize("config,field,bound", HOSTILE, ids=[f"{i}-{h[1]}" for i, h in enumerate(HOSTILE)])
def test_generate_with_hostile_heads_sizes_is_one_line_and_builds_nothing(folder, tmp_path, capsys, monkeypatch,
                                                                           config, field, bound):
    copy = _copy_with_heads(folder, tmp_path / "copy", config)
    no_heads_built = forbid_building(monkeypatch)
    capsys.readouterr()
    t0 = time.perf_counter()
    rc = main(["generate", "a red heart", "--model", str(copy), "--drafter", "heads", "--out", str(tmp_path / "x.png")])
    seconds = time.perf_counter() - t0
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1, err
    assert "heads.safetensors" in lines[0] and field in lines[0] and bound in lines[0], lines[0]
    assert "Traceback" not in err and no_heads_built == [] and not (tmp_path / "x.png").exists()
    assert seconds < 10  # (before: 2 GB and 12-37 s for hidden 300000 / heads 1000000)


def test_heads_within_the_bounds_still_load_and_draft(folder, tmp_path):
    copy = _copy_with_heads(folder, tmp_path / "copy", {"dim": DIM, "heads": 2, "hidden": 8})
    pipe = load_model_dir(copy)
    assert pipe.heads.n_heads == 2 and pipe.heads.hidden == 8
    result = pipe.generate("sun", pipe.defaults.with_(drafter="heads", seed=1))
    assert result.stats.tokens == 16


def test_the_bounds_are_stated_against_the_target_and_the_draft_window():
    """The heads bound is the draft window settings allow (a head past it could never draft), and
    the hidden bound scales with the target's width."""
    GenerationSettings(draft_length=MAX_HEADS).validate()
    with pytest.raises(SettingsError, match="draft_length"):
        GenerationSettings(draft_length=MAX_HEADS + 1).validate()
    assert check_config({"dim": 64, "heads": MAX_HEADS, "hidden": HIDDEN_PER_WIDTH * 64}, 64) == {
        "dim": 64, "heads": MAX_HEADS, "hidden": HIDDEN_PER_WIDTH * 64}
    with pytest.raises(HeadsConfigError, match=rf'"hidden" must be an integer in \[1, {HIDDEN_PER_WIDTH * 16}\]'):
        check_config({"dim": 16, "heads": 1, "hidden": HIDDEN_PER_WIDTH * 16 + 1}, 16)
    with pytest.raises(HeadsConfigError, match="must be a JSON object"):
        check_config(["dim", 16], 16)
    # exactly the parameters DraftHeads builds
    assert draft_heads.parameter_count(16, 3, 5) == sum(p.numel() for p in DraftHeads(16, 3, 5).parameters())


def test_a_bad_heads_file_through_the_api_is_a_checkpoint_error_naming_it(folder, tmp_path, monkeypatch):
    copy = _copy_with_heads(folder, tmp_path / "copy", {"dim": DIM, "heads": 2, "hidden": 300000})
    forbid_building(monkeypatch)
    with pytest.raises(CheckpointError, match=r'heads\.safetensors: draft heads "hidden" must be an integer'):
        load_model_dir(copy)
