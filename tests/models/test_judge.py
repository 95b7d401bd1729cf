"""The identity-level judge: `train recogniser --label identity --holdout-style`,
its subgroup answers (identity probabilities summed per subgroup) and the
metrics built on it (identity top-1 / top-5, subgroup top-5).

A synthetic dataset: four identities in two subgroups (red / blue squares,
green / orange circles) drawn in three art styles (filled, outlined, with a
black dot); one identity exists only in the outlined style.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from lantern_studio.eval.metrics import Recogniser, identity_accuracy, prompt_fidelity, top_k_hits
from lantern_studio.models.recogniser import RecogniserConfig, RecogniserNet
from lantern_studio.training import recogniser as rec
from support.dataset import write_dataset

IDENTITIES = {  # identity -> (subgroup, colour)
    "SQ-RED": ("shape-square", (220, 30, 30)),
    "SQ-BLUE": ("shape-square", (30, 60, 220)),
    "CI-GREEN": ("shape-circle", (30, 170, 40)),
    "CI-ORANGE": ("shape-circle", (240, 150, 20)),
}
ONLY_OUTLINED = "SQ-PURPLE"
STYLES = ("filled", "outlined", "dotted")
TINY = ["--stem", "8", "--widths", "16,24,32", "--feature-dim", "16", "--dropout", "0",
        "--batch", "16", "--lr", "3e-3", "--warmup", "5", "--threads", "1", "--log-every", "20",
        "--eval-every", "0", "--train-eval-images", "64"]


def _draw(subgroup: str, colour, style: str, rng: np.random.Generator) -> np.ndarray:
    img = np.full((64, 64, 3), 255, np.uint8)
    r = int(rng.integers(11, 16))
    cy, cx = (int(v) for v in rng.integers(r + 3, 64 - r - 3, size=2))
    yy, xx = np.mgrid[0:64, 0:64]
    if subgroup == "shape-square":
        inside = (abs(yy - cy) <= r) & (abs(xx - cx) <= r)
        core = (abs(yy - cy) <= r - 3) & (abs(xx - cx) <= r - 3)
    else:
        inside = (yy - cy) ** 2 + (xx - cx) ** 2 <= r * r
        core = (yy - cy) ** 2 + (xx - cx) ** 2 <= (r - 3) ** 2
    c = np.clip(np.array(colour) + rng.integers(-20, 21, size=3), 0, 255)
    img[inside] = c
    if style == "outlined":
        img[inside & ~core] = (20, 20, 20)
    elif style == "dotted":
        img[(yy - cy) ** 2 + (xx - cx) ** 2 <= 9] = (20, 20, 20)
    return img


def _write(folder: Path, per: int = 6) -> tuple[np.ndarray, list[dict]]:
    rng = np.random.default_rng(0)
    images, meta = [], []
    rows = [(i, sg, col, st) for i, (sg, col) in IDENTITIES.items() for st in STYLES]
    rows.append((ONLY_OUTLINED, "shape-square", (150, 40, 200), "outlined"))
    for ident, sg, col, st in rows:
        for j in range(per):
            images.append(_draw(sg, col, st, rng))
            meta.append({"caption": f"{ident.lower()}, {st} style", "identity": ident, "name": ident.lower(),
                         "vendor": st, "style": st, "skin_tone": None, "group": "shapes", "subgroup": sg,
                         "tags": [], "split": "train" if j % 3 else "heldout"})
    images = np.stack(images)
    write_dataset(folder, images, meta, {"dataset": "shapes"})
    return images, meta


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("styles")
    images, meta = _write(folder)
    return folder, images, meta


def test_style_split_holds_out_one_style_of_identities_seen_elsewhere(data):
    folder, _images, meta = data
    d = rec.load_recogniser_data(folder, label="identity", holdout_style="outlined")
    assert d.classes == sorted([*IDENTITIES, ONLY_OUTLINED])
    assert d.groups == {**{i: sg for i, (sg, _c) in IDENTITIES.items()}, ONLY_OUTLINED: "shape-square"}
    assert {meta[i]["style"] for i in d.train_idx} == {"filled", "dotted"}
    held = [meta[i] for i in d.heldout_idx]
    assert {m["style"] for m in held} == {"outlined"}
    # the outlined-only identity is not scored: no other style taught it
    assert ONLY_OUTLINED not in {m["identity"] for m in held} and "6 outlined images" in d.note
    assert len(held) == 4 * 6
    every = rec.load_recogniser_data(folder, label="identity", holdout_style="none")
    assert len(every.train_idx) == len(meta) and len(every.heldout_idx) == 0
    with pytest.raises(ValueError, match="no such style"):
        rec.load_recogniser_data(folder, label="identity", holdout_style="pixel")
    # the subgroup recogniser keeps the meta's identity split
    sub = rec.load_recogniser_data(folder)
    assert {meta[i]["split"] for i in sub.heldout_idx} == {"heldout"} and sub.groups is None


def test_identity_judge_trains_and_answers_at_both_levels(data, tmp_path):
    folder, images, meta = data
    run = tmp_path / "judge"
    assert rec.main(["--data", str(folder), "--run", str(run), "--steps", "120", "--label", "identity",
                     "--holdout-style", "dotted", "--scale-prob", "0.3", "--noise", "0.05", *TINY]) == 0
    metrics = json.loads((run / rec.METRICS_NAME).read_text())
    assert metrics["label"] == "identity" and metrics["holdout"] == "style dotted"
    # a style it never saw: well above chance (1/5 for top-1) at the identity level
    assert metrics["heldout_top1"] > 0.5, metrics
    assert metrics["heldout_subgroup_top5"] == 1.0  # 2 subgroups < 5
    judge = Recogniser.load(run / rec.WEIGHTS_NAME)
    assert judge.levels == ("identity", "subgroup")
    assert judge.classes_at("subgroup") == ["shape-circle", "shape-square"]
    dotted = np.array([i for i, m in enumerate(meta) if m["style"] == "dotted"])
    ids = [meta[i]["identity"] for i in dotted]
    acc = identity_accuracy(judge, images[dotted], ids)
    assert acc["top1"] > 0.5 and acc["top5"] == 1.0
    wrong = [next(x for x in IDENTITIES if x != i) for i in ids]
    assert identity_accuracy(judge, images[dotted], wrong)["top1"] < acc["top1"]
    subs = [meta[i]["subgroup"] for i in dotted]
    assert prompt_fidelity(judge, images[dotted], subs, k=1) > 0.7
    p = judge.predict(images[dotted[:3]], level="subgroup")
    assert p.shape == (3, 2) and np.allclose(p.sum(1), 1.0, atol=1e-5)


def test_tokenizer_ceiling_scores_round_tripped_held_out_images(data, tmp_path):
    from lantern_studio.engine.tokenizer import VQArgs, VQModel, save_vq

    folder, _images, _meta = data
    torch.manual_seed(0)
    args = VQArgs(ch=16, encoder_ch_mult=[1, 1, 1], decoder_ch_mult=[1, 1, 1], z_channels=8, codebook_size=32, norm_groups=8,
                  codebook_embed_dim=4)
    save_vq(VQModel(args), args, tmp_path / "vq.safetensors")  # untrained: its round trip destroys the image
    run = tmp_path / "judge"
    assert rec.main(["--data", str(folder), "--run", str(run), "--steps", "60", "--label", "identity",
                     "--holdout-style", "dotted", "--vq-ceiling", str(tmp_path / "vq.safetensors"),
                     "--vq-ceiling-images", "10", *TINY]) == 0
    tc = json.loads((run / rec.METRICS_NAME).read_text())["tokenizer_ceiling"]
    assert tc["images"] == 10 and tc["real_same_images"]["n_images"] == 10
    # an untrained tokenizer's grey mush is recognised less often than the real images
    assert tc["top1"] < tc["real_same_images"]["top1"]


def _judge_with_probs(probs: dict[str, float], groups: dict[str, str]) -> Recogniser:
    """A judge whose output ignores the image: softmax(head bias) = ``probs``."""
    classes = list(probs)
    net = RecogniserNet(RecogniserConfig(classes=classes, stem=4, widths=[4], feature_dim=4, dropout=0.0,
                                         label="identity", groups=groups))
    with torch.no_grad():
        for prm in net.parameters():
            prm.zero_()
        net.head.bias.copy_(torch.tensor([math.log(probs[c]) for c in classes]))
    return Recogniser(net, {})


def test_subgroup_answer_sums_identities_not_takes_the_best():
    # A is the likeliest identity, but B + C make Y the likeliest subgroup.
    judge = _judge_with_probs({"A": 0.4, "B": 0.3, "C": 0.3}, {"A": "X", "B": "Y", "C": "Y"})
    img = np.full((2, 64, 64, 3), 255, np.uint8)
    assert np.allclose(judge.predict(img, level="subgroup"), [[0.4, 0.6], [0.4, 0.6]], atol=1e-5)
    assert identity_accuracy(judge, img, ["A", "B"]) == {"top1": 0.5, "top5": 1.0}
    assert top_k_hits(judge, img, [["B", "C"], "C"], ks=(1, 2), level="identity") == {1: 0.0, 2: 1.0}
    # a max-per-subgroup mutant would rank X first: the sum ranks Y first
    assert prompt_fidelity(judge, img, ["Y", "Y"], k=1) == 1.0
    assert prompt_fidelity(judge, img, ["X", "X"], k=1) == 0.0
    with pytest.raises(ValueError, match="not one of"):
        prompt_fidelity(judge, img, ["Z", "Z"], k=1)


def test_subgroup_recogniser_has_no_identity_level_and_bad_configs_are_named():
    net = RecogniserNet(RecogniserConfig(classes=["X", "Y"], stem=4, widths=[4], feature_dim=4))
    r = Recogniser(net, {})
    assert r.levels == ("subgroup",)
    with pytest.raises(ValueError, match="identity"):
        identity_accuracy(r, np.full((1, 64, 64, 3), 255, np.uint8), ["A"])
    base = RecogniserConfig(classes=["A", "B"], label="identity", groups={"A": "X", "B": "Y"}).to_dict()
    assert RecogniserConfig.from_dict(base).groups == {"A": "X", "B": "Y"}
    with pytest.raises(ValueError, match="groups"):
        RecogniserConfig.from_dict({**base, "groups": {"A": "X"}})
    with pytest.raises(ValueError, match="label"):
        RecogniserConfig.from_dict({**base, "label": "colour"})
