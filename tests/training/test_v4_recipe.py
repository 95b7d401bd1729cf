"""Model v4's recipe: training without the shift augmentation reads only unshifted tokens, --styles
keeps only its styles' rows, and the free-running validation draws and scores pictures."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest
import torch

from lantern_studio.engine.tokenizer import load_vq
from lantern_studio.models.recogniser import Recogniser, RecogniserConfig, RecogniserNet, save_recogniser
from lantern_studio.training import ar, ar_rows
from lantern_studio.training.errors import TrainingError
from lantern_studio.models.quality import DIFFERENT_PICTURES, variety
from lantern_studio.training.validation import (Sampling, SampleValidation, ValidationError,
                                                pick_classes)
from support.dataset import class_dataset, tiny_vq_file
from support.tiny import tiny_v3_folder


def _dataset(tmp_path, styles=("google", "fluent-flat")):
    """Four identities × the styles (support.dataset.class_dataset) and a small random tokenizer."""
    data = tmp_path / "data"
    images, meta = class_dataset(data, styles=styles)
    tiny_vq_file(tmp_path / "vq.safetensors")
    return data, images, meta


def _only_unshifted(prep, reference: torch.Tensor, draws: int = 50) -> bool:
    """Every training batch (with augmentation on, as the trainer draws them) holds each row's
    unshifted tokens: ``reference`` (N, T) is the tokenizer's output on the images as they are."""
    gen = torch.Generator().manual_seed(0)
    idx = torch.arange(len(prep.cond))
    for _ in range(draws):
        tok, _, _ = ar.batch_from(prep, idx, gen)
        if not torch.equal(tok, reference):
            return False
    return True


def test_training_without_shifts_reads_only_the_unshifted_tokens_and_a_mixing_mutant_fails(tmp_path):
    data, images, _ = _dataset(tmp_path)
    vq_path = tmp_path / "vq.safetensors"
    reference = ar_rows.tokenize_images(load_vq(vq_path), images).flatten(1).long()
    none = ar.prepare_classes(data, vq_path, tmp_path / "none", "everyday", shifts=ar.SHIFT_SETS["none"], log=lambda m: None)
    assert none.codes.shape[0] == 1
    assert _only_unshifted(none, reference)
    # the mutant: the three shifted copies v3 trains on (a sampler would wander between them)
    three = ar.prepare_classes(data, vq_path, tmp_path / "three", "everyday", shifts=ar.SHIFT_SETS["three"],
                               log=lambda m: None)
    assert three.codes.shape[0] == 3 and not torch.equal(three.codes[0], three.codes[1])
    assert not _only_unshifted(three, reference)


def test_the_shifts_flag_reaches_the_prepared_data_and_styles_keep_only_their_rows(tmp_path):
    data, _, meta = _dataset(tmp_path)

    def run(name, *extra):
        p = argparse.ArgumentParser()
        ar.add_arguments(p)
        ar.train(p.parse_args(["--vq", str(tmp_path / "vq.safetensors"), "--data", str(data), "--run",
                               str(tmp_path / name), "--condition", "class", "--batch", "4", "--dim", "32", "--layers",
                               "1", "--heads", "2", "--threads", "1", "--eval-every", "1000", "--warmup", "1",
                               "--steps", "1", *extra]))
        return torch.load(tmp_path / name / "prepared.pt", weights_only=True)

    assert run("default")["codes"].shape[:2] == (1, len(meta))  # v4.1's final stage: unshifted, flat + google
    assert run("three", "--shifts", "three", "--styles", "all")["codes"].shape[:2] == (3, len(meta))  # v3's recipe
    flat = run("flat", "--shifts", "none", "--styles", "fluent-flat")
    assert flat["codes"].shape[:2] == (1, len(meta) // 2)
    got = json.loads((tmp_path / "flat" / "metrics.json").read_text())["classes"]
    assert got["images"] == len(meta) // 2 and got["styles"] == ["google", "fluent-flat"]  # every style keeps its row
    with pytest.raises(TrainingError, match="unknown style twitter"):
        run("bad", "--styles", "twitter")


def test_sampling_parses_and_bad_ones_are_named():
    assert Sampling.parse("0.3/5/1.5") == Sampling("0.3/5/1.5", 0.3, 5, 1.5)
    g = Sampling.parse("greedy/2")
    assert g.greedy and g.cfg_scale == 2.0
    for bad in ("0.3/5", "hot/5/1", "greedy", ""):
        with pytest.raises(ValidationError, match="T/K/CFG"):
            Sampling.parse(bad)


def test_validation_classes_spread_over_the_list_in_the_preferred_style_and_only_judged_identities():
    classes = [{"identity": f"I{i}", "name": f"n{i}", "styles": ["a", "b"] if i % 2 else ["a"]} for i in range(10)]
    picked = pick_classes(classes, ["a", "b"], {f"I{i}" for i in range(10) if i != 0}, 3, prefer_style="b")
    rows = [i for i, _, _ in picked]
    assert rows == [1, 4, 7]  # spread over the nine judged identities, not the first three
    assert [s for _, s, _ in picked] == [1, 0, 1]  # "b" where the identity has art in it
    with pytest.raises(ValidationError, match="judge"):
        pick_classes(classes, ["a"], set(), 3)


def test_variety_counts_classes_whose_two_seeds_differ_and_identical_seeds_count_none():
    rng = np.random.default_rng(0)
    same = np.repeat(rng.integers(0, 256, (4, 1, 8, 8, 3)), 2, axis=1).astype(np.uint8)
    assert variety(same) == (0.0, 0.0)  # the mutant: a model that draws one picture whatever the seed
    other = same.copy()
    other[:2, 1] = 255 - other[:2, 1]
    dist, share = variety(other)
    assert share == 0.5 and dist > DIFFERENT_PICTURES


def _judged_folder(tmp_path):
    """A tiny class model folder with an (untrained) identity judge beside it."""
    folder = tiny_v3_folder(tmp_path / "m")
    rows = json.loads((folder / "identities.json").read_text())["classes"]
    ids = [r["identity"] for r in rows]
    net = RecogniserNet(RecogniserConfig(classes=ids, stem=4, widths=[4], feature_dim=4, label="identity",
                                         groups={c: "thing" for c in ids}))
    save_recogniser(net, folder / "recogniser.safetensors")
    man = json.loads((folder / "model.json").read_text())
    man["recogniser"] = "recogniser.safetensors"
    (folder / "model.json").write_text(json.dumps(man))
    return folder, man


def test_sample_validation_draws_and_scores_every_class_at_every_sampling(tmp_path):
    folder, man = _judged_folder(tmp_path)
    from lantern_studio.engine.checkpoints import load_gpt

    gpt = load_gpt(folder / "gpt.safetensors").train()
    vocabulary = json.loads((folder / "identities.json").read_text())
    for r in vocabulary["classes"]:
        r["subgroup"] = "thing"
    v = SampleValidation(folder, json.dumps(vocabulary), man["conditioning"]["styles"],
                         [Sampling.parse("1.0/0/1.0"), Sampling.parse("greedy/1.0")], names=3, seeds=2,
                         out=tmp_path / "val")
    metrics, line = v(gpt, 7)
    assert gpt.training  # handed back as it came
    for s in ("1.0/0/1.0", "greedy/1.0"):
        assert 0.0 <= metrics[f"val/{s}/identity_top5"] <= 1.0 and metrics[f"val/{s}/subgroup_top5"] == 1.0
    assert metrics["val/greedy/1.0/different_pictures"] == 0.0  # greedy ignores the seed
    assert "6 samples" in line and sorted(p.name for p in (tmp_path / "val").iterdir()) == [
        "validation-000007-1.0_0_1.0.png", "validation-000007-greedy_1.0.png"]
    judge = Recogniser.load(folder / "recogniser.safetensors")
    assert judge.levels == ("identity", "subgroup")


def test_the_validate_command_prints_a_row_per_sampling_and_names_a_bad_file_in_one_line(tmp_path, capsys):
    from lantern_studio.cli import main

    folder, _ = _judged_folder(tmp_path)
    out = tmp_path / "val.json"
    assert main(["train", "validate", "--gpt", str(folder / "gpt.safetensors"), "--model", str(folder), "--names", "2",
                 "--seeds", "2", "--sampling", "1.0/0/1.0", "greedy/1.0", "--json", str(out), "--threads", "1"]) == 0
    text = capsys.readouterr().out
    assert "2 validation classes x 2 seeds" in text and "\n1.0/0/1.0 " in text and "\ngreedy/1.0 " in text
    assert json.loads(out.read_text())["metrics"]["val/greedy/1.0/different_pictures"] == 0.0
    assert main(["train", "validate", "--gpt", str(tmp_path / "none.safetensors"), "--model", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: train validate:") and "none.safetensors" in err and err.count("\n") == 1


def test_validation_decodes_with_the_tokenizer_the_model_is_taught_on(tmp_path):
    """A run on a new tokenizer (model v5's keeps green) is judged on pictures its own codes make: the same
    tokens drawn through another tokenizer's decoder come out different pictures."""
    from lantern_studio.engine.checkpoints import load_gpt
    from lantern_studio.engine.tokenizer import VQModel, load_vq, save_vq

    folder, man = _judged_folder(tmp_path)
    gpt = load_gpt(folder / "gpt.safetensors")
    vocabulary = (folder / "identities.json").read_text()
    folder_vq = load_vq(folder / man["vq"])
    torch.manual_seed(5)
    other = VQModel(folder_vq.args)
    save_vq(other, folder_vq.args, tmp_path / "other-vq.safetensors")
    styles = man["conditioning"]["styles"]
    plain = SampleValidation(folder, vocabulary, styles, [Sampling.parse("greedy/1.0")], names=2, seeds=1)
    taught = SampleValidation(folder, vocabulary, styles, [Sampling.parse("greedy/1.0")], names=2, seeds=1,
                              vq=tmp_path / "other-vq.safetensors")
    def same(a, b):
        return all(torch.allclose(t.float(), b.state_dict()[k].float(), atol=1e-3) for k, t in a.state_dict().items())

    assert same(plain.vq, folder_vq) and same(taught.vq, other) and not same(taught.vq, folder_vq)
    sampling = plain.samplings[0]
    assert not np.array_equal(plain.draw(gpt, sampling), taught.draw(gpt, sampling))
