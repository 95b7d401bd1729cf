"""One command lifecycle for every trainer: bad input is one ``lantern-studio: …`` line and exit 2,
whichever trainer met it and however deep; no module under training/ exits the process itself or
drives the loop on its own; and the AR model's prepared data reads back typed from the dicts on disk."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
import torch

from lantern_studio.cli import main
from lantern_studio.training import ar
from lantern_studio.training.errors import TrainingError, command
from lantern_studio.training.prepared import CaptionPrep, ClassPrep, load_prepared, prep_from_dict
from support.dataset import class_dataset, tiny_vq_file
from support.tiny import tiny_v3_folder

TRAINING = Path(ar.__file__).parent


def _modules():
    return sorted(TRAINING.glob("*.py"))


def _under_main_guard(tree: ast.Module) -> set[int]:
    """Line numbers inside ``if __name__ == "__main__":`` blocks (a script's own exit is fine there)."""
    lines: set[int] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
            for sub in ast.walk(node):
                if hasattr(sub, "lineno"):
                    lines.add(sub.lineno)
    return lines


def test_no_module_under_training_exits_the_process_itself():
    """Only the command edge (errors.command) decides the exit: no ``raise SystemExit`` or ``sys.exit``
    in a helper (a script's ``if __name__ == "__main__"`` aside)."""
    found = []
    for path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        guarded = _under_main_guard(tree)
        for node in ast.walk(tree):
            if node.__dict__.get("lineno") in guarded:
                continue
            if isinstance(node, ast.Raise) and node.exc is not None and "SystemExit" in ast.unparse(node.exc):
                found.append(f"{path.name}:{node.lineno}")
            if isinstance(node, ast.Call) and ast.unparse(node.func) in ("sys.exit", "exit", "quit"):
                found.append(f"{path.name}:{node.lineno}")
    assert found == []


def test_only_the_lifecycle_drives_the_loop():
    """Every trainer goes through lifecycle.run_trainer: no other module builds a TrainingLoop itself."""
    builders = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("TrainingLoop"):
                builders.append(path.name)
    assert builders == ["lifecycle.py"]


def test_a_training_error_from_a_helper_becomes_one_line_and_exit_2_at_the_edge(capsys):
    def helper():
        raise TrainingError("train x --y: the file\nwas torn")

    @command
    def run(_args) -> int:
        helper()
        return 0

    assert run(None) == 2
    assert capsys.readouterr().err == "lantern-studio: train x --y: the file was torn\n"
    with pytest.raises(TrainingError):  # the Python API lets it through
        helper()


def test_a_training_error_deep_in_train_ar_reaches_the_cli_as_exit_2(tmp_path, monkeypatch, capsys):
    def refuse(text):
        raise TrainingError("train ar --styles: refused by the test")

    monkeypatch.setattr(ar, "parse_styles", refuse)
    assert main(["train", "ar", "--run", str(tmp_path / "run"), "--vq", str(tiny_vq_file(tmp_path / "vq.st"))]) == 2
    assert capsys.readouterr().err == "lantern-studio: train ar --styles: refused by the test\n"


def _bad_input(kind: str, tmp_path: Path) -> tuple[list[str], str]:
    """(argv, the name the error line must carry) of a trainer command given a missing or corrupt file."""
    run = ["--run", str(tmp_path / "run"), "--threads", "1"]
    torn = tmp_path / "torn.bin"
    torn.write_bytes(b"PK\x03\x04 torn")
    if kind == "vq: missing data":
        return ["train", "vq", "--data", str(tmp_path / "nowhere"), *run], "nowhere"
    if kind == "recogniser: missing data":
        return ["train", "recogniser", "--data", str(tmp_path / "nowhere"), *run], "nowhere"
    if kind == "ar: missing vq":
        return ["train", "ar", "--vq", str(tmp_path / "missing.safetensors"), *run], "missing.safetensors"
    if kind == "ar: missing data":
        return ["train", "ar", "--vq", str(tiny_vq_file(tmp_path / "vq.st")), "--data", str(tmp_path / "nowhere"),
                *run], "nowhere"
    if kind == "ar: corrupt vq":
        class_dataset(tmp_path / "data")
        return ["train", "ar", "--vq", str(torn), "--data", str(tmp_path / "data"), "--condition", "caption",
                "--encoder", "hash:16", *run], "torn.bin"
    if kind == "ar: corrupt pack":
        return ["train", "ar", "--pack", str(torn), "--condition", "class", *run], "torn.bin"
    if kind == "drafter: missing gpt":
        return ["train", "drafter", "--gpt", str(tmp_path / "none.safetensors"), "--prepared", str(torn),
                *run], "none.safetensors"
    assert kind == "drafter: corrupt prepared data"
    gpt = tiny_v3_folder(tmp_path / "m") / "gpt.safetensors"
    return ["train", "drafter", "--gpt", str(gpt), "--prepared", str(torn), *run], "torn.bin"


@pytest.mark.parametrize("kind", ["vq: missing data", "recogniser: missing data", "ar: missing vq", "ar: missing data",
                                  "ar: corrupt vq", "ar: corrupt pack", "drafter: missing gpt",
                                  "drafter: corrupt prepared data"])
def test_every_trainer_reports_bad_input_in_one_line_with_exit_2(kind, tmp_path, capsys):
    argv, name = _bad_input(kind, tmp_path)
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lantern-studio: ") and name in lines[0], err


# --------------------------------------------------------------------------- prepared data


def _caption_dict(n: int = 3, with_kind: bool = True, with_weights: bool = True) -> dict:
    """A caption run's prepared.pt as the code before typed preps wrote it (and, without kind and
    weights, as older runs did)."""
    d = {"key": "k", "codes": torch.arange(2 * n * 4, dtype=torch.int16).reshape(2, n, 2, 2),
         "texts": ["a", "b"], "emb": torch.ones(2, 3, 4, dtype=torch.float16),
         "mask": torch.ones(2, 3, dtype=torch.bool), "variants": torch.tensor([[0, 1]] * n),
         "train": torch.tensor([True] * (n - 1) + [False]), "vocab_size": 32, "grid": 2}
    if with_kind:
        d["kind"] = "caption"
    if with_weights:
        d["weights"] = torch.full((n,), 0.5, dtype=torch.float64)
    return d


def test_an_old_dict_shaped_prepared_file_reads_back_typed_and_writes_the_same_dict(tmp_path):
    old = _caption_dict()
    path = tmp_path / "prepared.pt"
    torch.save(old, path)
    prep = load_prepared(path)
    assert isinstance(prep, CaptionPrep) and prep.texts == ["a", "b"] and prep.grid == 2 and prep.key == "k"
    assert torch.equal(prep.codes, old["codes"]) and torch.equal(prep.weights, old["weights"])
    back = prep.to_dict()  # what a new run writes: the same keys and values, so older code reads it too
    assert set(back) == set(old) and all(torch.equal(back[k], v) if torch.is_tensor(v) else back[k] == v
                                         for k, v in old.items())
    older = prep_from_dict(_caption_dict(with_kind=False, with_weights=False))  # before kind and identity weights
    assert isinstance(older, CaptionPrep) and torch.equal(older.weights, torch.ones(3, dtype=torch.float64))
    tok, emb, mask = older.batch(torch.tensor([0, 2]), torch.Generator().manual_seed(0), augment=False)
    assert tok.shape == (2, 4) and emb.dtype == torch.float32 and mask.shape == (2, 3)
    torch.save({"key": "k", "codes": old["codes"]}, path)  # a class run's token cache is no prepared data
    with pytest.raises(TrainingError, match="not prepared training data"):
        load_prepared(path)


def test_a_class_pack_dict_reads_back_typed_and_carries_the_trained_styles_apart(tmp_path):
    pack = {"kind": "class", "codes": torch.zeros(1, 4, 2, 2, dtype=torch.int16), "cond": torch.zeros(4, 3).long(),
            "train": torch.ones(4, dtype=torch.bool), "weights": torch.full((4,), 0.25, dtype=torch.float64),
            "vocab_size": 8, "grid": 2, "vocabulary": json.dumps({"classes": []}), "identities": 1,
            "styles": ["google"], "tones": ["none"]}
    torch.save(pack, tmp_path / "pack.pt")
    prep = ar.load_pack(tmp_path / "pack.pt")
    assert isinstance(prep, ClassPrep) and prep.styles == ["google"] and prep.trained_styles is None
    assert set(prep.to_dict()) == set(pack)  # --styles is the command's, not the pack's
    assert prep_from_dict(pack, trained_styles=["google"]).trained_styles == ["google"]


def test_a_run_folder_prepared_by_the_dict_code_resumes_from_its_cache(tmp_path):
    """A caption run's prepared.pt written before the typed preps (the same dict) is reused as it is:
    a second prepare reads it back typed without tokenizing again, and the file is unchanged."""
    data = tmp_path / "data"
    class_dataset(data)
    vq = tiny_vq_file(tmp_path / "vq.safetensors")
    run = tmp_path / "run"
    said = []
    first = ar.prepare(data, vq, run, encoder="hash:16", length=6, shifts=[(0, 0)], log=said.append)
    on_disk = torch.load(run / "prepared.pt", weights_only=True)
    assert isinstance(on_disk, dict) and on_disk["kind"] == "caption"
    assert set(on_disk) == {"key", "kind", "codes", "texts", "emb", "mask", "variants", "train", "weights",
                            "vocab_size", "grid"}
    before = (run / "prepared.pt").read_bytes()
    said.clear()
    again = ar.prepare(data, vq, run, encoder="hash:16", length=6, shifts=[(0, 0)], log=said.append)
    assert said == [] and (run / "prepared.pt").read_bytes() == before
    assert isinstance(again, CaptionPrep) and torch.equal(again.codes, first.codes)


def test_a_class_run_folder_tokenized_by_the_dict_code_resumes_from_its_token_cache(tmp_path):
    """A class run's prepared.pt holds only its tokens ({"key", "codes", "vocab_size"}, as the runs
    made before the typed preps hold): a second start reads them back, tokenizing nothing."""
    data = tmp_path / "data"
    class_dataset(data)
    vq = tiny_vq_file(tmp_path / "vq.safetensors")
    run = tmp_path / "run"
    said = []
    first = ar.prepare_classes(data, vq, run, "everyday", shifts=[(0, 0)], log=said.append, styles=["google"])
    assert set(torch.load(run / "prepared.pt", weights_only=True)) == {"key", "codes", "vocab_size"}
    said.clear()
    again = ar.prepare_classes(data, vq, run, "everyday", shifts=[(0, 0)], log=said.append, styles=["google"])
    assert said == [] and isinstance(again, ClassPrep) and torch.equal(again.codes, first.codes)
    assert again.trained_styles == ["google"] and len(again.cond) == 4  # the google rows only, parsed once
