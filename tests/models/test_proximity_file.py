"""A model folder's proximity file: installed, hashed, loaded into the pipeline's table; hostile files are one line."""

import json

import pytest
import torch
from safetensors.torch import save_file

from lantern_studio.engine.checkpoints import CheckpointError
from lantern_studio.models.local import install_proximity, load_model_dir
from lantern_studio.models.proximity_file import FORMAT, read_proximity, write_proximity
from support.tiny import tiny_v3_folder

V = 12  # tiny_v3_folder's vocabulary


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tiny_v3_folder(tmp_path_factory.mktemp("model") / "m")


def ranked_rows():
    r = torch.full((V, 2), -1)
    r[0] = torch.tensor([5, 3])
    r[4, 0] = 1
    return r


def test_an_installed_file_is_hashed_and_puts_its_codes_first(folder, tmp_path):
    src = tmp_path / "p.safetensors"
    write_proximity(src, ranked_rows(), "none", {"rank": "decoded"})
    man = install_proximity(folder, src)
    assert man["proximity"] == "proximity.safetensors" and len(man["files"]["proximity.safetensors"]) == 64
    assert json.loads((folder / "model.json").read_text())["proximity"] == "proximity.safetensors"
    pipe = load_model_dir(folder)
    assert pipe.table.order == "ranked, then none"
    assert pipe.table.neighbours(torch.tensor([0, 4, 7]), 3).tolist() == [[5, 3, 0], [1, 4, 4], [7, 7, 7]]
    # a changed file no longer matches model.json
    write_proximity(folder / "proximity.safetensors", ranked_rows().flip(1), "none", {})
    with pytest.raises(CheckpointError, match="sha256 does not match"):
        load_model_dir(folder)
    install_proximity(folder, folder / "proximity.safetensors")  # installing in place re-hashes it
    assert load_model_dir(folder).table.neighbours(torch.tensor([0]), 2).tolist() == [[3, 5]]


def bad(tmp_path, name, tensors, meta):
    path = tmp_path / name
    save_file(tensors, str(path), metadata=meta)
    return path


@pytest.mark.parametrize("tensors,meta,message", [
    ({"ranked": torch.zeros(V, 2, dtype=torch.int16)}, {"format": "other"}, "not a proximity file"),
    ({"other": torch.zeros(V, 2, dtype=torch.int16)}, {"format": FORMAT}, "not a proximity file"),
    ({"ranked": torch.zeros(V, 2)}, {"format": FORMAT}, "must be integer"),
    ({"ranked": torch.full((V + 1, 2), -1, dtype=torch.int16)}, {"format": FORMAT}, "must be integer"),
    ({"ranked": torch.full((V, 2), V, dtype=torch.int16)}, {"format": FORMAT}, "outside"),
    ({"ranked": torch.arange(V, dtype=torch.int16)[:, None]}, {"format": FORMAT}, "its own neighbour"),
    ({"ranked": torch.tensor([[1, 1]] + [[-1, -1]] * (V - 1), dtype=torch.int16)}, {"format": FORMAT}, "twice"),
    ({"ranked": torch.full((V, 2), -1, dtype=torch.int16)}, {"format": FORMAT, "rest": "x" * 500}, "'rest' must"),
])
def test_hostile_proximity_files_are_one_line(tmp_path, tensors, meta, message):
    with pytest.raises(CheckpointError, match=message) as e:
        read_proximity(bad(tmp_path, "p.safetensors", tensors, meta), V)
    assert "\n" not in str(e.value) and len(str(e.value)) < 300


def test_junk_or_missing_files_and_a_folder_naming_one_outside_are_one_line(folder, tmp_path):
    (tmp_path / "junk.safetensors").write_bytes(b"\x00" * 64)
    with pytest.raises(CheckpointError, match="not a readable"):
        read_proximity(tmp_path / "junk.safetensors", V)
    with pytest.raises(CheckpointError, match="no such proximity file"):
        read_proximity(tmp_path / "absent.safetensors", V)
    man = json.loads((folder / "model.json").read_text())
    (folder / "model.json").write_text(json.dumps({**man, "proximity": "../elsewhere.safetensors"}))
    try:
        with pytest.raises(CheckpointError, match="proximity"):
            load_model_dir(folder, verify=False)
    finally:
        (folder / "model.json").write_text(json.dumps(man))
