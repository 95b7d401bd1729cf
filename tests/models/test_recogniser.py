"""Subgroup recogniser (training/recogniser.py) and quality metrics (eval/metrics.py).

A synthetic dataset of coloured shapes on white (3 "subgroups": red squares,
green circles, blue triangles) in the `train data` layout; a tiny network
trained for a few dozen steps on one thread.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from lantern_studio.engine.checkpoints import CheckpointError, load_weights
from lantern_studio.eval.metrics import (
    PromptIndex,
    Recogniser,
    frechet_distance,
    prompt_fidelity,
    prompt_subgroup,
    score_image,
)
from lantern_studio.models.recogniser import RecogniserConfig, RecogniserNet, save_recogniser
from lantern_studio.training import recogniser as rec
from lantern_studio.training.loop import CHECKPOINT_NAME
from support.dataset import write_dataset

CLASSES = ["shape-circle", "shape-square", "shape-triangle"]
COLOURS = {"shape-square": (220, 30, 30), "shape-circle": (30, 170, 40), "shape-triangle": (30, 60, 220)}
NAMES = {"shape-square": "red square", "shape-circle": "green circle", "shape-triangle": "blue triangle"}
TINY = ["--stem", "8", "--widths", "16,24,32", "--feature-dim", "16", "--dropout", "0",
        "--batch", "16", "--lr", "3e-3", "--warmup", "5", "--threads", "1", "--log-every", "10",
        "--eval-every", "0", "--train-eval-images", "64"]


def _shape(kind: str, rng: np.random.Generator) -> np.ndarray:
    img = np.full((64, 64, 3), 255, np.uint8)
    r = int(rng.integers(9, 15))
    cy, cx = (int(v) for v in rng.integers(r + 3, 64 - r - 3, size=2))
    yy, xx = np.mgrid[0:64, 0:64]
    if kind == "shape-square":
        mask = (abs(yy - cy) <= r) & (abs(xx - cx) <= r)
    elif kind == "shape-circle":
        mask = (yy - cy) ** 2 + (xx - cx) ** 2 <= r * r
    else:
        top, bottom = cy - r, cy + r
        mask = (yy >= top) & (yy <= bottom) & (abs(xx - cx) <= (yy - top) * r / (2 * r) + 0.5)
    colour = np.clip(np.array(COLOURS[kind]) + rng.integers(-25, 26, size=3), 0, 255)
    img[mask] = colour
    return img


def _make(n_per_class: int, seed: int, split: str) -> tuple[np.ndarray, list[dict]]:
    rng = np.random.default_rng(seed)
    images, meta = [], []
    for i in range(n_per_class):
        for kind in CLASSES:
            images.append(_shape(kind, rng))
            vendor = "google" if i % 2 == 0 else "twitter"
            meta.append({"caption": f"{NAMES[kind]}, {vendor} style", "identity": f"{kind}-{split}-{i}",
                         "name": NAMES[kind], "vendor": vendor, "skin_tone": None, "group": "shapes",
                         "subgroup": kind, "tags": [], "split": split})
    return np.stack(images), meta


def _write_dataset(folder: Path) -> tuple[np.ndarray, list[dict]]:
    tr_img, tr_meta = _make(16, 0, "train")
    he_img, he_meta = _make(6, 1, "heldout")
    images, meta = np.concatenate([tr_img, he_img]), tr_meta + he_meta
    write_dataset(folder, images, meta, {"dataset": "shapes", "subgroups": CLASSES})
    return images, meta


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    folder = tmp_path_factory.mktemp("shapes")
    images, meta = _write_dataset(folder)
    return folder, images, meta


@pytest.fixture(scope="module")
def trained(dataset, tmp_path_factory):
    folder, images, meta = dataset
    run_dir = tmp_path_factory.mktemp("run")
    rc = rec.main(["--data", str(folder), "--run", str(run_dir), "--steps", "60", *TINY])
    assert rc == 0
    return run_dir, Recogniser.load(run_dir / rec.WEIGHTS_NAME)


def _split(meta, split):
    return np.array([i for i, m in enumerate(meta) if m["split"] == split])


# --------------------------------------------------------------------------- training


def test_training_beats_chance_on_heldout(trained, dataset):
    run_dir, r = trained
    _folder, images, meta = dataset
    m = json.loads((run_dir / rec.METRICS_NAME).read_text())
    assert m["steps"] == 60 and m["complete"] is True
    assert m["num_classes"] == 3 and m["heldout_images"] == 18
    assert m["heldout_top1"] >= 0.75, m  # chance is 1/3
    assert m["heldout_top5"] == 1.0  # top-5 of 3 classes
    assert m["train_top1"] >= 0.75
    assert m["params"] == r.net.num_params() and m["wall_seconds"] > 0
    # The wrapper agrees with the metrics file.
    held = _split(meta, "heldout")
    pred = r.predict(images[held]).argmax(1)
    want = [r.classes.index(meta[i]["subgroup"]) for i in held]
    assert abs(float(np.mean(pred == want)) - m["heldout_top1"]) < 1e-6
    assert (run_dir / CHECKPOINT_NAME).is_file() and (run_dir / "log.txt").is_file()


def test_weights_file_format(trained):
    run_dir, r = trained
    sd, config = load_weights(run_dir / rec.WEIGHTS_NAME, kind="recogniser")
    assert config["classes"] == CLASSES
    assert config["feature_dim"] == 16 and config["widths"] == [16, 24, 32] and config["stem"] == 8
    assert config["label"] == "subgroup" and config["num_classes"] == 3
    from safetensors import safe_open

    with safe_open(str(run_dir / rec.WEIGHTS_NAME), framework="pt") as f:
        assert f.get_tensor("head.weight").dtype == torch.float16
    assert r.classes == CLASSES and r.feature_dim == 16
    with pytest.raises(CheckpointError, match="holds recogniser weights, expected gpt"):
        load_weights(run_dir / rec.WEIGHTS_NAME, kind="gpt")


def test_save_load_round_trip_identical(trained, dataset, tmp_path):
    run_dir, r = trained
    _folder, images, _meta = dataset
    batch = images[::5]
    # The fp16 file re-loaded gives the same predictions every time.
    again = Recogniser.load(run_dir / rec.WEIGHTS_NAME)
    np.testing.assert_array_equal(r.predict(batch), again.predict(batch))
    np.testing.assert_array_equal(r.features(batch), again.features(batch))
    # Saving the loaded network (fp32) and loading it back is exact.
    save_recogniser(r.net, tmp_path / "copy.safetensors", dtype=None)
    copy = Recogniser.load(tmp_path / "copy.safetensors")
    np.testing.assert_array_equal(r.predict(batch), copy.predict(batch))
    # And the fp16 export is close to the fp32 training checkpoint.
    ckpt = torch.load(run_dir / CHECKPOINT_NAME, map_location="cpu", weights_only=True)
    net = RecogniserNet(RecogniserConfig.from_dict(json.loads(ckpt["extra"]["config"])))
    net.load_state_dict(ckpt["model"])
    fp32 = Recogniser(net, {}).predict(batch)
    np.testing.assert_allclose(r.predict(batch), fp32, atol=2e-2)
    assert (r.predict(batch).argmax(1) == fp32.argmax(1)).mean() >= 0.95


def test_predict_shapes_and_resizing(trained, dataset):
    _run, r = trained
    _folder, images, _meta = dataset
    p, f = r.predict(images[:4]), r.features(images[:4])
    assert p.shape == (4, 3) and f.shape == (4, 16) and p.dtype == np.float32
    np.testing.assert_allclose(p.sum(1), 1.0, atol=1e-5)
    assert r.predict(images[0]).shape == (1, 3)  # a single (H, W, 3) image
    big = np.repeat(np.repeat(images[:2], 2, axis=1), 2, axis=2)  # 128×128
    assert r.predict(big).shape == (2, 3)
    with pytest.raises(ValueError, match="uint8"):
        r.predict(images[:2].astype(np.float32))


def test_resume_continues_from_saved_step(dataset, tmp_path):
    folder, _images, _meta = dataset
    run_dir = tmp_path / "run"
    args = ["--data", str(folder), "--run", str(run_dir), "--steps", "20", *TINY]
    assert rec.main([*args, "--stop-after", "8"]) == 0
    ckpt = torch.load(run_dir / CHECKPOINT_NAME, map_location="cpu", weights_only=True)
    assert ckpt["step"] == 8
    m = json.loads((run_dir / rec.METRICS_NAME).read_text())
    assert m["steps"] == 8 and m["complete"] is False  # a stopped run still exports what it has
    assert rec.main(args) == 0
    ckpt = torch.load(run_dir / CHECKPOINT_NAME, map_location="cpu", weights_only=True)
    assert ckpt["step"] == 20
    m = json.loads((run_dir / rec.METRICS_NAME).read_text())
    assert m["steps"] == 20 and m["complete"] is True
    log = (run_dir / "log.txt").read_text()
    assert "resumed from step 8" in log
    assert "step 10/20" in log  # the resumed run counted on from 8, not from 0
    # Nothing left to do: a re-run trains no steps and keeps the file.
    assert rec.main(args) == 0
    assert torch.load(run_dir / CHECKPOINT_NAME, map_location="cpu", weights_only=True)["step"] == 20


def test_bad_arguments_name_the_field(dataset, tmp_path, capsys):
    folder, _images, _meta = dataset
    assert rec.main(["--data", str(folder), "--run", str(tmp_path / "r"), "--steps", "0"]) == 2
    assert "--steps=0" in capsys.readouterr().err
    assert rec.main(["--data", str(tmp_path / "nothing"), "--run", str(tmp_path / "r")]) == 2
    assert "train data" in capsys.readouterr().err


def test_augment_keeps_white_and_shape():
    g = torch.Generator().manual_seed(0)
    x = torch.ones(4, 3, 64, 64)
    y = rec.augment(x, g, shift=3, jitter=0.2, blur_prob=1.0)
    assert y.shape == x.shape and torch.allclose(y, x)
    x[:, :, 20:40, 20:40] = -1.0
    y = rec.augment(x, g, shift=3, jitter=0.2, blur_prob=0.0)
    assert y.min() >= -1.0 and y.max() <= 1.0 and not torch.equal(x, y)


# --------------------------------------------------------------------------- metrics


def test_frechet_distance_properties(trained, dataset):
    _run, r = trained
    _folder, images, meta = dataset
    rng = np.random.default_rng(0)
    a = rng.normal(size=(200, 8))
    b = rng.normal(size=(200, 8))
    assert frechet_distance(a, a) == pytest.approx(0.0, abs=1e-6)
    d_small = frechet_distance(a, b + 0.5)
    d_big = frechet_distance(a, b + 2.0)
    assert 0 < d_small < d_big
    assert d_big == pytest.approx(8 * 4.0, rel=0.15)  # |Δμ|² dominates
    assert frechet_distance(b + 2.0, a) == pytest.approx(d_big, rel=1e-6)  # symmetric
    # Scaled covariance counts too: N(0, I) vs N(0, 4I) → F·(2 − 1)² = 8.
    assert frechet_distance(a, 2 * b) == pytest.approx(8.0, rel=0.25)
    # Small samples (N < F: singular covariances) still give a finite number.
    assert np.isfinite(frechet_distance(a[:5], b[:5]))
    with pytest.raises(ValueError):
        frechet_distance(a, b[:, :4])
    # On recogniser features: one class vs itself ~0, vs another class larger.
    sq = images[[i for i, m in enumerate(meta) if m["subgroup"] == "shape-square"]]
    ci = images[[i for i, m in enumerate(meta) if m["subgroup"] == "shape-circle"]]
    fs, fc = r.features(sq), r.features(ci)
    assert frechet_distance(fs, fs) == pytest.approx(0.0, abs=1e-4)
    half = len(fs) // 2
    assert frechet_distance(fs[:half], fc[:half]) > frechet_distance(fs[:half], fs[half:2 * half])


def test_prompt_fidelity_and_score_image(trained, dataset):
    _run, r = trained
    _folder, images, meta = dataset
    train = _split(meta, "train")
    imgs = images[train]
    right = [meta[i]["subgroup"] for i in train]
    wrong = [CLASSES[(CLASSES.index(s) + 1) % 3] for s in right]
    assert prompt_fidelity(r, imgs, right, k=1) == 1.0
    assert prompt_fidelity(r, imgs, wrong, k=1) < 0.5
    assert prompt_fidelity(r, imgs, wrong, k=5) == 1.0  # k is capped at the 3 classes
    # None (prompt matched nothing) is left out.
    assert prompt_fidelity(r, imgs[:3], [right[0], None, right[2]], k=1) == 1.0
    # A list of acceptable subgroups counts when any of them ranks in the top k.
    either = [[w, s] for w, s in zip(wrong, right)]
    assert prompt_fidelity(r, imgs, either, k=1) == 1.0
    assert prompt_fidelity(r, imgs, [[w] for w in wrong], k=1) == prompt_fidelity(r, imgs, wrong, k=1)
    with pytest.raises(ValueError, match="not one of"):
        prompt_fidelity(r, imgs[:1], ["animal-mammal"])
    with pytest.raises(ValueError):
        prompt_fidelity(r, imgs[:2], [right[0]])
    s_right = score_image(r, imgs[0], right[0])
    s_wrong = score_image(r, imgs[0], wrong[0])
    assert 0.0 <= s_wrong < s_right <= 1.0 and s_right > 0.5


def test_prompt_subgroup():
    meta = [
        {"caption": "grinning face, google style", "name": "grinning face", "subgroup": "face-smiling"},
        {"caption": "cat face, google style", "name": "cat face", "subgroup": "animal-mammal"},
        {"caption": "cat, twitter style", "name": "cat", "subgroup": "animal-mammal"},
        {"caption": "grinning cat, google style", "name": "grinning cat", "subgroup": "cat-face"},
        {"caption": "waving hand: medium skin tone, google style", "name": "waving hand",
         "subgroup": "hand-fingers-open"},
        {"caption": "red apple, google style", "name": "red apple", "subgroup": "food-fruit"},
    ]
    assert prompt_subgroup("grinning face, google style", meta) == "face-smiling"
    assert prompt_subgroup("  Grinning   Face ", meta) == "face-smiling"
    assert prompt_subgroup("waving hand: medium skin tone, twitter style", meta) == "hand-fingers-open"
    assert prompt_subgroup("a cat", meta) == "animal-mammal"  # tightest name wins ("cat")
    assert prompt_subgroup("grinning cat emoji", meta) == "cat-face"  # two shared words beat one
    assert prompt_subgroup("apples", meta) == "food-fruit"  # plural forgiven
    assert prompt_subgroup("spaceship", meta) is None
    assert prompt_subgroup("", meta) is None
    idx = PromptIndex(meta)
    assert prompt_subgroup("red apple", idx) == "food-fruit"
