"""``train heads``: trains parallel draft heads on a tiny class model's pack, resumes, exports, installs
them into the model folder (the pipeline then offers and decodes with drafter "heads"), and bad input
(a corrupt heads file, a missing pack) is one clear line."""

from __future__ import annotations

import json
import shutil

import pytest

from lantern_studio.cli import main
from lantern_studio.engine.checkpoints import CheckpointError
from lantern_studio.engine.settings import GenerationSettings
from lantern_studio.models.local import install_heads, load_model_dir
from support.tiny import tiny_v3_model_and_pack


@pytest.fixture
def model_and_pack(tmp_path):
    """A tiny factorised class model and a pack of its kind (support/tiny.py)."""
    return tiny_v3_model_and_pack(tmp_path)


def _argv(folder, pack, run, steps, *extra):
    return ["train", "heads", "--model", str(folder), "--pack", str(pack), "--run", str(run), "--steps", str(steps),
            "--heads", "3", "--hidden", "16", "--batch", "4", "--lr", "1e-2", "--warmup", "1", "--eval-every", "4",
            "--eval-images", "4", "--log-every", "1", "--threads", "1", *extra]


def test_train_heads_runs_resumes_exports_and_the_pipeline_decodes_with_them(model_and_pack, tmp_path, capsys):
    folder, pack = model_and_pack
    run = tmp_path / "run"
    assert main(_argv(folder, pack, run, 4)) == 0
    assert (run / "heads.safetensors").is_file()
    first = json.loads((run / "metrics.json").read_text())
    assert first["step"] == 4 and len(first["heldout_accept"]) == 3 and first["heads"] == 3
    # a larger --steps resumes from the checkpoint, not from 0; the held-out objective went down
    assert main(_argv(folder, pack, run, 16, "--into", str(folder))) == 0
    log = (run / "log.txt").read_text()
    assert "resumed from step 4" in log
    m = json.loads((run / "metrics.json").read_text())
    assert m["step"] == 16
    losses = [h["heldout_loss"] for h in m["history"] if "heldout_loss" in h]
    assert losses[-1] < losses[0]
    # --export rewrites the export from the checkpoint alone
    (run / "heads.safetensors").unlink()
    assert main(_argv(folder, pack, run, 16, "--export")) == 0
    assert (run / "heads.safetensors").is_file()

    # installed by --into: named and hashed in model.json, offered and used by the pipeline
    man = json.loads((folder / "model.json").read_text())
    assert man["heads"] == "heads.safetensors" and "heads.safetensors" in man["files"]
    pipe = load_model_dir(folder)
    assert "heads" in pipe.drafters and pipe.heads.n_heads == 3
    s = pipe.defaults.with_(drafter="heads", draft_length=8, seed=2)
    result = pipe.generate("sun", s)
    assert result.stats.tokens == 16 and result.stats.drafter_forwards == 0
    assert result.stats.drafter_head_calls == result.stats.target_forwards
    assert max(1, result.stats.drafted) <= 3 * result.stats.target_forwards  # at most K drafts a round


def test_a_corrupt_heads_file_is_one_clear_error(model_and_pack, tmp_path, capsys):
    folder, _ = model_and_pack
    good = tmp_path / "good.safetensors"
    from lantern_studio.engine.checkpoints import save_weights
    from lantern_studio.engine.draft_heads import DraftHeads

    save_weights(DraftHeads(32, 2, 8), good, DraftHeads(32, 2, 8).config, "heads")
    install_heads(folder, good)
    assert "heads" in load_model_dir(folder).drafters
    # bytes changed after install: the hash check names the file
    data = bytearray((folder / "heads.safetensors").read_bytes())
    data[-3] ^= 0xFF
    (folder / "heads.safetensors").write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="heads.safetensors: sha256 does not match"):
        load_model_dir(folder)
    # a torn file installed as such: one line naming it, through the CLI too
    torn = tmp_path / "torn.safetensors"
    torn.write_bytes(b"PK\x03\x04 torn")
    with pytest.raises(CheckpointError, match="torn.safetensors: not a readable safetensors file"):
        install_heads(folder, torn)
    other = tmp_path / "other"
    shutil.copytree(folder, other)
    man = json.loads((other / "model.json").read_text())
    (other / "heads.safetensors").write_bytes(b"PK\x03\x04 torn")
    man["files"].pop("heads.safetensors")
    (other / "model.json").write_text(json.dumps(man))
    capsys.readouterr()
    assert main(["generate", "--model", str(other), "--drafter", "heads", "--out", str(tmp_path / "x.png"),
                 "sun"]) != 0
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "heads.safetensors" in lines[0], lines
    # heads for another width are refused by name
    save_weights(DraftHeads(16, 2, 8), good, DraftHeads(16, 2, 8).config, "heads")
    with pytest.raises(CheckpointError, match="width 16"):
        install_heads(folder, good)
    assert GenerationSettings(drafter="heads").validate().drafter == "heads"


def test_train_heads_bad_input_is_one_line_and_exit_2(model_and_pack, tmp_path, capsys):
    folder, pack = model_and_pack
    capsys.readouterr()
    for argv, name in [(_argv(folder, tmp_path / "missing.pt", tmp_path / "r1", 2), "missing.pt"),
                       (_argv(tmp_path / "nowhere", pack, tmp_path / "r2", 2), "nowhere"),
                       (_argv(folder, pack, tmp_path / "r3", 2, "--export"), "no checkpoint")]:
        assert main(argv) == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("lantern-studio: ") and name in lines[0], lines
