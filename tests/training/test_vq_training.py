"""End to end: tiny VQ training run, checkpoint, resume, budget stop, export."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest
import torch

from lantern_studio.engine.tokenizer import load_vq
from lantern_studio.training import vq

TINY = json.dumps({"ch": 32, "encoder_ch_mult": [1, 1], "decoder_ch_mult": [1, 1], "z_channels": 16,
                   "codebook_size": 32, "codebook_embed_dim": 4})


@pytest.fixture
def dataset(tmp_path):
    rng = np.random.default_rng(0)
    n, size = 32, 16
    imgs = np.full((n, size, size, 3), 255, np.uint8)  # white background with a coloured square each
    for i in range(n):
        y, x = rng.integers(0, size - 6, 2)
        imgs[i, y:y + 6, x:x + 6] = rng.integers(0, 256, 3, dtype=np.uint8)
    d = tmp_path / "data"
    d.mkdir()
    np.save(d / "images.npy", imgs)
    with open(d / "meta.jsonl", "w") as f:
        for i in range(n):
            f.write(json.dumps({"name": f"img{i}", "split": "heldout" if i % 8 == 0 else "train"}) + "\n")
    return d


def cli(data, run, *extra: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    vq.add_arguments(p)
    return p.parse_args(["--data", str(data), "--run", str(run), "--batch", "8", "--threads", "1",
                         "--vq-args", TINY, "--kmeans-step", "2", "--kmeans-batches", "2",
                         "--restart-every", "1", "--dead-after", "1", "--log-every", "2",
                         "--eval-every", "3", "--warmup", "2", "--precision", "fp32", *extra])


def test_loader_splits(dataset):
    data = vq.load_vq_data(dataset)
    assert data.train.shape == (28, 16, 16, 3) and data.heldout.shape == (4, 16, 16, 3)
    assert len(data.sha256) == 64 and data.note == ""


def test_train_resume_export(dataset, tmp_path, capsys):
    run = tmp_path / "run"
    # first invocation stops after 3 of 6 steps, leaving a checkpoint
    assert vq.run(cli(dataset, run, "--steps", "6", "--stop-after", "3")) == 0
    ckpt = torch.load(run / vq.CHECKPOINT_NAME, map_location="cpu", weights_only=True)
    assert ckpt["step"] == 3 and ckpt["kind"] == "vq" and ckpt["extra"]["kmeans_done"]
    # a stopped run exports the weights it has, marked by their step count
    assert json.loads((run / vq.METRICS_NAME).read_text())["steps"] == 3
    assert load_vq(run / "vq.safetensors").args.codebook_size == 32
    first = capsys.readouterr().err
    assert "step 2/6" in first and "k-means" in first and "eval step 3" in first

    # the same command resumes from step 3 and finishes, then exports
    out = tmp_path / "export" / "tok.safetensors"
    assert vq.run(cli(dataset, run, "--steps", "6", "--out", str(out))) == 0
    second = capsys.readouterr().err
    assert "resumed from step 3" in second
    assert "step 4/6" in second and "step 2/6" not in second
    ckpt = torch.load(run / vq.CHECKPOINT_NAME, map_location="cpu", weights_only=True)
    assert ckpt["step"] == 6
    assert "step 6/6" in (run / "log.txt").read_text()

    metrics = json.loads((run / vq.METRICS_NAME).read_text())
    assert metrics["steps"] == 6 and metrics["heldout_images"] == 4
    assert 0 < metrics["codes_used"] <= 32 and metrics["params"] > 0
    assert np.isfinite(metrics["heldout_psnr"])

    model = load_vq(out)
    assert model.args.codebook_size == 32
    x = torch.rand(2, 3, 16, 16) * 2 - 1
    codes = model.encode(x)
    assert codes.shape == (2, 8, 8)
    assert model.decode_codes(codes).shape == (2, 3, 16, 16)

    # a straight run gives the same weights as the interrupted + resumed one
    run2 = tmp_path / "run2"
    assert vq.run(cli(dataset, run2, "--steps", "6")) == 0
    a = torch.load(run / vq.CHECKPOINT_NAME, weights_only=True)["model"]
    b = torch.load(run2 / vq.CHECKPOINT_NAME, weights_only=True)["model"]
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=1e-5, atol=1e-6, msg=k)

    # already finished: re-running just re-exports; --export works from the checkpoint
    assert vq.run(cli(dataset, run, "--steps", "6", "--export", "--out", str(out))) == 0
    assert torch.load(run / vq.CHECKPOINT_NAME, weights_only=True)["step"] == 6


def test_budget_stops_cleanly_and_bad_input(dataset, tmp_path, capsys):
    run = tmp_path / "run"
    assert vq.run(cli(dataset, run, "--steps", "50", "--budget-minutes", "0")) == 0
    assert torch.load(run / vq.CHECKPOINT_NAME, weights_only=True)["step"] == 0
    assert "wall budget" in capsys.readouterr().err
    assert vq.run(cli(tmp_path / "nowhere", run, "--steps", "5")) == 2
    assert "images.npy" in capsys.readouterr().err
    assert vq.run(cli(dataset, run, "--steps", "0")) == 2
    assert "--steps" in capsys.readouterr().err


def test_evaluate_and_kmeans():
    from lantern_studio.engine.tokenizer import VQArgs, VQModel

    m = VQModel(VQArgs(ch=32, encoder_ch_mult=[1, 1], decoder_ch_mult=[1, 1], z_channels=16,
                       codebook_size=16, codebook_embed_dim=4))
    imgs = np.random.default_rng(1).integers(0, 256, (3, 8, 8, 3), dtype=np.uint8)
    res = vq.evaluate(m, imgs, batch_size=2)
    assert set(res) >= {"psnr", "codes_used", "codes_used_fraction", "n_images"}
    assert res["n_images"] == 3 and 1 <= res["codes_used"] <= 16
    assert res["codes_used_fraction"] == res["codes_used"] / 16
    g = torch.Generator().manual_seed(0)
    pts = torch.nn.functional.normalize(torch.randn(200, 4, generator=g), dim=1)
    c = vq.spherical_kmeans(pts, 8, 5, g)
    assert c.shape == (8, 4)
    torch.testing.assert_close(c.norm(dim=1), torch.ones(8))


def test_decoder_only_keeps_every_token(dataset, tmp_path, capsys):
    # a first tokenizer, then a decoder-only fine-tune from its exported weights
    base = tmp_path / "base.safetensors"
    assert vq.run(cli(dataset, tmp_path / "run0", "--steps", "4", "--out", str(base))) == 0
    assert vq.run(cli(dataset, tmp_path / "bad", "--steps", "2", "--decoder-only")) == 2
    assert "--decoder-only needs --init-from" in capsys.readouterr().err

    fine = tmp_path / "fine.safetensors"
    run = tmp_path / "run1"
    common = ("--init-from", str(base), "--decoder-only", "--lr", "3e-3")
    assert vq.run(cli(dataset, run, "--steps", "6", "--stop-after", "3", *common)) == 0
    # resuming without the flag is refused (the optimizer holds only decoder weights)
    assert vq.run(cli(dataset, run, "--steps", "6", "--init-from", str(base))) == 2
    assert "--decoder-only" in capsys.readouterr().err
    assert vq.run(cli(dataset, run, "--steps", "6", "--out", str(fine), *common)) == 0
    out = capsys.readouterr().err
    assert "k-means" not in out and "resumed from step 3" in out

    a, b = load_vq(base), load_vq(fine)
    sa, sb = a.state_dict(), b.state_dict()
    changed = {name for name in sa if not torch.equal(sa[name], sb[name])}
    decoder = {name for name in sa if name.startswith(vq.DECODER_PREFIXES)}
    assert changed <= decoder  # encoder, quant_conv and codebook untouched
    assert len(changed) >= 0.8 * len(decoder)  # (an attention key bias gets no gradient at all)
    assert "decoder.conv_out.weight" in changed and "post_quant_conv.weight" in changed
    images = torch.from_numpy(vq.load_vq_data(dataset).train[:8]).permute(0, 3, 1, 2).float() / 127.5 - 1
    assert torch.equal(a.encode(images), b.encode(images))
    assert json.loads((run / vq.METRICS_NAME).read_text())["decoder_only"] is True
