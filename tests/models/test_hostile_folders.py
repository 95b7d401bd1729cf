"""Corrupt and hostile model folders: each is refused with one CheckpointError that names
the file, and nothing outside the folder is ever opened."""

from __future__ import annotations

import builtins
import json
import os
import pickle
import shutil
from pathlib import Path

import pytest
import torch

from lantern_studio.cli import main as cli_main
from lantern_studio.engine.checkpoints import CheckpointError
from lantern_studio.models import load_pipeline
from lantern_studio.models.tiny import build_tiny_model_dir


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    return build_tiny_model_dir(tmp_path_factory.mktemp("good") / "tiny", grid=4, eagle=True)


def _copy(good: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "m"
    shutil.copytree(good, folder)
    return folder


def _edit(folder: Path, **changes) -> None:
    man = json.loads((folder / "model.json").read_text())
    for k, v in changes.items():
        if v is ...:
            man.pop(k, None)
        else:
            man[k] = v
    (folder / "model.json").write_text(json.dumps(man))


def _refused(folder: Path, match: str) -> str:
    with pytest.raises(CheckpointError, match=match) as e:
        load_pipeline(str(folder))
    return str(e.value)


CASES = {
    "no gpt": (dict(gpt=...), r'"gpt" must name a weights file, got None'),
    "gpt null": (dict(gpt=None), r'"gpt" must name a weights file'),
    "gpt a list": (dict(gpt=["gpt.safetensors"]), r'"gpt" must name a weights file'),
    "conditioning a list": (dict(conditioning=[1, 2]), r'"conditioning" must be a JSON object'),
    "unknown kind": (dict(conditioning={"kind": "audio"}), r'"conditioning.kind" must be "class" or "caption"'),
    "files not a map": (dict(files=["a"]), r'"files" must be a JSON object'),
    "bad digest": (dict(files={"gpt.safetensors": "abc"}), r"must be 64 hex digits"),
    "traversal": (dict(gpt="../../outside/gpt.safetensors"), r"resolves outside the model folder"),
    "absolute": (dict(vq="/etc/passwd"), r"absolute path"),
    "files traversal": (dict(files={"../../../../etc/shadow": "0" * 64}), r"resolves outside the model folder"),
    "defaults out of range": (dict(defaults={"k": 10**6}), r'"defaults": k: must be in'),
    "defaults a string": (dict(defaults="fast"), r'"defaults" must be a JSON object'),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_manifest_is_one_named_error(good, tmp_path, case):
    folder = _copy(good, tmp_path)
    changes, match = CASES[case]
    _edit(folder, **changes)
    msg = _refused(folder, match)
    assert str(folder) in msg and "\n" not in msg


def test_manifest_not_an_object_or_not_json(good, tmp_path):
    folder = _copy(good, tmp_path)
    (folder / "model.json").write_text("[1, 2, 3]")
    _refused(folder, r"model.json: must hold a JSON object, got list")
    (folder / "model.json").write_bytes(b"\xff\xfe garbage")
    _refused(folder, r"model.json: unreadable")


def test_symlink_pointing_outside_is_refused_and_never_opened(good, tmp_path, monkeypatch):
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "gpt.safetensors"
    shutil.copy(good / "gpt.safetensors", secret)
    folder = _copy(good, tmp_path)
    (folder / "gpt.safetensors").unlink()
    os.symlink(secret, folder / "gpt.safetensors")
    opened = []
    real_open = builtins.open

    def spy(file, *a, **k):
        opened.append(str(file))
        return real_open(file, *a, **k)

    monkeypatch.setattr(builtins, "open", spy)
    _refused(folder, r"resolves outside the model folder")
    assert not any(str(outside) in f for f in opened)


def test_wrong_hash_is_refused_on_the_default_path_and_the_verdict_is_cached(good, tmp_path, monkeypatch):
    from lantern_studio.models import local

    folder = _copy(good, tmp_path)
    hashed = []
    real = local.sha256_file
    monkeypatch.setattr(local, "sha256_file", lambda p: hashed.append(Path(p).name) or real(p))
    load_pipeline(str(folder))  # first use: every listed file hashed
    n_files = len(json.loads((folder / "model.json").read_text())["files"])
    assert len(hashed) == n_files
    hashed.clear()
    load_pipeline(str(folder))  # unchanged files: the cached verdict is used
    assert hashed == []
    data = bytearray((folder / "gpt.safetensors").read_bytes())
    data[-1] ^= 0xFF  # same size, new content (and a new mtime)
    (folder / "gpt.safetensors").write_bytes(bytes(data))
    _refused(folder, r"gpt.safetensors: sha256 does not match model.json")
    assert hashed == ["gpt.safetensors"]


def _rewrite_gpt(folder: Path, change) -> None:
    """Rewrite gpt.safetensors with one tensor changed, and model.json's hash to match."""
    from safetensors import safe_open
    from safetensors.torch import save_file

    from lantern_studio.engine.files import sha256_file

    path = folder / "gpt.safetensors"
    with safe_open(str(path), framework="pt") as f:
        meta = f.metadata()
        sd = {k: f.get_tensor(k) for k in f.keys()}
    change(sd)
    save_file(sd, str(path), metadata=meta)
    man = json.loads((folder / "model.json").read_text())
    man["files"]["gpt.safetensors"] = sha256_file(path)
    (folder / "model.json").write_text(json.dumps(man))


def test_nan_wrong_dtype_and_truncated_tensors(good, tmp_path):
    folder = _copy(good, tmp_path / "nan")
    _rewrite_gpt(folder, lambda sd: sd["output.weight"].view(-1)[0].fill_(float("nan")))
    _refused(folder, r"tensor 'output.weight' holds NaN or infinite values")
    folder = _copy(good, tmp_path / "int")
    _rewrite_gpt(folder, lambda sd: sd.__setitem__("output.weight", sd["output.weight"].to(torch.int32)))
    _refused(folder, r"wrong kind, e.g. output.weight: file int32 vs model float32")
    folder = _copy(good, tmp_path / "f64")
    _rewrite_gpt(folder, lambda sd: sd.__setitem__("output.weight", sd["output.weight"].double()))
    _refused(folder, r"tensor 'output.weight' is float64")
    folder = _copy(good, tmp_path / "trunc")
    path = folder / "vq.safetensors"
    path.write_bytes(path.read_bytes()[:1000])
    _edit(folder, files=...)
    _refused(folder, r"vq.safetensors")


class _Payload:
    def __reduce__(self):
        return (Path.touch, (Path(os.environ["LANTERN_STUDIO_CACHE"]) / "pwned",))


def test_pickle_payload_in_a_foreign_checkpoint_never_runs(tmp_path):
    from lantern_studio.engine.checkpoints import read_torch_state_dict

    evil = tmp_path / "gpt.pt"
    with open(evil, "wb") as fh:
        pickle.dump({"model": _Payload()}, fh)
    with pytest.raises(CheckpointError, match="refused: only plain tensors are loaded") as e:
        read_torch_state_dict(evil)
    assert "weights_only=False" not in str(e.value) and "\n" not in str(e.value)
    assert not (Path(os.environ["LANTERN_STUDIO_CACHE"]) / "pwned").exists()


def test_cli_prints_one_line_not_a_traceback(good, tmp_path, capsys):
    folder = _copy(good, tmp_path)
    _edit(folder, gpt=...)
    rc = cli_main(["generate", "a red heart", "--model", str(folder), "--out", str(tmp_path / "x.png"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err
    assert err.count("\n") == 1 and '"gpt" must name a weights file' in err and str(folder) in err


def test_full_disk_is_one_line_naming_the_file_and_leaves_nothing(good, tmp_path):
    """RLIMIT_FSIZE in a child process: writing the PNG fails like a full disk would."""
    import resource
    import subprocess
    import sys

    out = tmp_path / "o" / "x.png"
    out.parent.mkdir()

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    env = {**os.environ, "LANTERN_STUDIO_CACHE": str(tmp_path / "cache")}
    r = subprocess.run([sys.executable, "-m", "lantern_studio", "generate", "a red heart", "--model", str(good),
                        "--out", str(out), "--quiet"], preexec_fn=limit, capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 1, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and str(out) in lines[0] and "Traceback" not in r.stderr, r.stderr
    assert list(out.parent.iterdir()) == []  # no partial PNG, no temp file


# --------------------------------------------------------------------------- class-model folders


def _rehash(folder: Path) -> None:
    import hashlib

    man = json.loads((folder / "model.json").read_text())
    man["files"] = {f: hashlib.sha256((folder / f).read_bytes()).hexdigest() for f in man["files"]}
    (folder / "model.json").write_text(json.dumps(man))


@pytest.fixture(scope="module")
def c2i(tmp_path_factory):
    return build_tiny_model_dir(tmp_path_factory.mktemp("c2i") / "tiny", grid=4, model_type="c2i", eagle=False)


def test_a_names_list_longer_than_the_class_table_is_refused_at_load(c2i, tmp_path):
    folder = _copy(c2i, tmp_path)
    _edit(folder, conditioning={"kind": "class", "names": [f"class {i}" for i in range(10)]})
    with pytest.raises(CheckpointError, match=r"model\.json.*lists 10 classes, but the GPT has 4"):
        load_pipeline(str(folder))


def test_the_conditioning_kind_must_match_the_gpt(c2i, good, tmp_path):
    folder = _copy(c2i, tmp_path)
    _edit(folder, conditioning={"kind": "caption", "encoder": "hash", "dim": 16, "length": 6})
    with pytest.raises(CheckpointError, match=r"model\.json.*'caption'.*class-conditional"):
        load_pipeline(str(folder))
    folder = _copy(good, tmp_path / "t2i")
    _edit(folder, conditioning={"kind": "class", "names": ["a", "b"]})
    with pytest.raises(CheckpointError, match=r"model\.json.*'class'.*text-conditional"):
        load_pipeline(str(folder))


@pytest.mark.parametrize("num_classes, why", [(-3, "bad model configuration"), (10**9, "refused before allocating"),
                                               (2 * 10**7, "refused before allocating")])
def test_class_table_sizes_are_checked_before_anything_is_allocated(c2i, tmp_path, num_classes, why):
    from safetensors import safe_open
    from safetensors.torch import save_file

    folder = _copy(c2i, tmp_path)
    with safe_open(str(folder / "gpt.safetensors"), "pt") as f:
        meta, sd = f.metadata(), {k: f.get_tensor(k) for k in f.keys()}
    config = json.loads(meta["config"])
    config["num_classes"] = num_classes
    save_file(sd, str(folder / "gpt.safetensors"), metadata={**meta, "config": json.dumps(config)})
    _rehash(folder)
    with pytest.raises(CheckpointError, match=why):
        load_pipeline(str(folder))


def test_a_factorised_folder_whose_lists_do_not_fit_its_tables_is_refused(tmp_path):
    from support.tiny import tiny_v3_folder

    folder = tiny_v3_folder(tmp_path / "v3")
    man = json.loads((folder / "model.json").read_text())
    man["conditioning"]["styles"] = ["a", "b", "c"]
    (folder / "model.json").write_text(json.dumps(man))
    with pytest.raises(CheckpointError, match=r"identities/styles/tones \(4, 3, 5\) do not match the GPT's tables "
                                              r"\(4, 2, 5\)"):
        load_pipeline(str(folder))
    man["conditioning"]["styles"] = ["a", "b"]
    for bad in ("crayon", "any"):  # "any" only for a model taught it (a style row of that name)
        man["conditioning"]["default_style"] = bad
        (folder / "model.json").write_text(json.dumps(man))
        with pytest.raises(CheckpointError, match="default_style"):
            load_pipeline(str(folder))
    man["conditioning"]["styles"] = ["a", "any"]
    man["conditioning"]["default_style"] = "any"
    (folder / "model.json").write_text(json.dumps(man))
    assert load_pipeline(str(folder)).conditioner("#1").match.style == "any"
    man["conditioning"]["styles"] = ["a", "b"]
    (folder / "model.json").write_text(json.dumps(man))
    (folder / "identities.json").write_text('{"classes": ' + "[" * 100000 + "]" * 100000 + "}")
    _rehash(folder)
    man = json.loads((folder / "model.json").read_text())
    man["conditioning"]["default_style"] = "b"
    (folder / "model.json").write_text(json.dumps(man))
    with pytest.raises(CheckpointError, match="identities.json"):
        load_pipeline(str(folder))


def test_snap_vectors_of_another_width_than_the_encoder_makes_are_refused(tmp_path):
    """Found by the 10,000-case class-folder run: "dim": 1 with the hash encoder failed inside torch."""
    from support.tiny import tiny_v3_folder

    folder = tiny_v3_folder(tmp_path / "v3")
    man = json.loads((folder / "model.json").read_text())
    man["conditioning"]["dim"] = 1
    (folder / "model.json").write_text(json.dumps(man))
    with pytest.raises(CheckpointError, match=r"model\.json.*snap vectors are \[64\]-wide but the hash encoder makes "
                                              r"1-wide"):
        load_pipeline(str(folder))
