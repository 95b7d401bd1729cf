"""Every training command end to end on a tiny slice, in seconds, without network:
dataset → tokenizer → AR model → drafter → shipped model folder → generation."""

from __future__ import annotations

import argparse
import hashlib
import json

import numpy as np
import pytest
import torch

from lantern_studio.engine import GenerationSettings
from lantern_studio.models import load_pipeline
from lantern_studio.training import ar, drafter, ship, vq
from lantern_studio.training.loop import CHECKPOINT_NAME, read_checkpoint
from support.dataset import tiny_vq_file

SUBGROUPS = ["animal-mammal", "food-fruit", "heart"]


def parse(module, argv):
    p = argparse.ArgumentParser()
    module.add_arguments(p)
    return p.parse_args(argv)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    d = tmp_path_factory.mktemp("data")
    rng = np.random.default_rng(0)
    n = 24
    imgs = np.full((n, 64, 64, 3), 255, np.uint8)
    rows = []
    for i in range(n):
        y, x = rng.integers(4, 40, 2)
        colour = [(220, 30, 30), (30, 160, 40), (40, 60, 220)][i % 3]
        imgs[i, y : y + 20, x : x + 20] = colour
        name = ["red square", "green square", "blue square"][i % 3]
        vendor = "google" if i % 2 else "twitter"
        rows.append({"caption": f"{name} {i // 6}, {vendor} style", "name": name, "identity": f"X{i // 6}",
                     "vendor": vendor, "skin_tone": None, "group": "g", "subgroup": SUBGROUPS[i % 3],
                     "tags": [], "split": "heldout" if i >= 18 else "train"})
    np.save(d / "images.npy", imgs)
    with open(d / "meta.jsonl", "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    files = {k: {"sha256": hashlib.sha256((d / k).read_bytes()).hexdigest()} for k in ("images.npy", "meta.jsonl")}
    (d / "manifest.json").write_text(json.dumps({"files": files, "subgroups": SUBGROUPS}))
    return d


def test_all_training_commands_end_to_end(dataset, tmp_path):
    runs = tmp_path / "runs"
    tiny_vq = json.dumps({"ch": 16, "encoder_ch_mult": [1, 1, 1, 1], "decoder_ch_mult": [1, 1, 1, 1],
                          "z_channels": 16, "codebook_size": 32, "codebook_embed_dim": 4, "norm_groups": 8})
    assert vq.run(parse(vq, ["--data", str(dataset), "--run", str(runs / "vq"), "--steps", "3", "--batch", "4",
                             "--vq-args", tiny_vq, "--kmeans-step", "1", "--kmeans-batches", "1", "--threads", "1",
                             "--precision", "fp32", "--eval-every", "0", "--warmup", "1"])) == 0
    vq_file = runs / "vq" / "vq.safetensors"
    assert vq_file.is_file()

    ar_args = parse(ar, ["--vq", str(vq_file), "--data", str(dataset), "--run", str(runs / "ar"), "--steps", "3",
                         "--batch", "4", "--dim", "32", "--layers", "1", "--heads", "2", "--condition", "caption",
                         "--encoder", "hash:16", "--threads", "1", "--eval-every", "2",
                         "--warmup", "1", "--log-every", "1"])
    m = ar.train(ar_args)
    assert m["step"] == 3 and np.isfinite(m["heldout_nll"])
    # resuming with a larger target continues from step 3, not from 0
    ar_args.steps = 4
    assert ar.train(ar_args)["step"] == 4
    assert "resumed from step 3" in (runs / "ar" / "log.txt").read_text()
    # a new machine resumes from the committed weights alone
    fresh = parse(ar, ["--vq", str(vq_file), "--data", str(dataset), "--run", str(runs / "ar2"), "--steps", "5",
                       "--batch", "4", "--dim", "32", "--layers", "1", "--heads", "2", "--condition", "caption",
                       "--encoder", "hash:16", "--threads", "1", "--init-from", str(runs / "ar" / "gpt.safetensors"),
                       "--start-step", "4", "--eval-every", "100"])
    fresh.prepared = torch.load(runs / "ar" / "prepared.pt", weights_only=True)
    assert ar.train(fresh)["step"] == 5
    assert "initialised from" in (runs / "ar2" / "log.txt").read_text()

    d_args = parse(drafter, ["--gpt", str(runs / "ar" / "gpt.safetensors"), "--prepared",
                             str(runs / "ar" / "prepared.pt"), "--run", str(runs / "drafter"), "--steps", "3",
                             "--batch", "4", "--threads", "1", "--eval-images", "4", "--warmup", "1"])
    dm = drafter.train(d_args)
    assert 0.0 <= dm["heldout_top1_agreement"] <= 1.0
    # a warm start from exported drafter weights, in a fresh run folder, begins with exactly those weights
    w_args = parse(drafter, ["--gpt", str(runs / "ar" / "gpt.safetensors"), "--prepared",
                             str(runs / "ar" / "prepared.pt"), "--run", str(runs / "drafter2"), "--steps", "1",
                             "--batch", "4", "--threads", "1", "--eval-images", "4", "--warmup", "1", "--lr", "1e-9",
                             "--init-from", str(runs / "drafter" / "eagle.safetensors")])
    warm = drafter.train(w_args)
    assert "initialised from" in (runs / "drafter2" / "log.txt").read_text()
    assert abs(warm["heldout_kl"] - dm["heldout_kl"]) < 1e-3

    out = tmp_path / "model"
    s_args = parse(ship, ["--out", str(out), "--data", str(dataset), "--vq", str(vq_file),
                          "--gpt", str(runs / "ar" / "gpt.safetensors"), "--eagle",
                          str(runs / "drafter" / "eagle.safetensors"), "--recogniser", str(tmp_path / "none"),
                          "--encoder", "hash:16", "--grid"])
    assert ship.run(s_args) == 0
    man = json.loads((out / "model.json").read_text())
    assert set(man["files"]) >= {"gpt.safetensors", "vq.safetensors", "eagle.safetensors", "captions.json"}
    # the tokenizer ships byte for byte as trained (fp16 already): its hash and training metadata stay
    assert (out / "vq.safetensors").read_bytes() == vq_file.read_bytes()
    assert not (out / "MODEL_CARD.md").exists()  # no recipe names this folder: no card claims to describe it

    pipe = load_pipeline(str(out), verify=True)
    s = GenerationSettings(seed=5, drafter="eagle", k=4, delta=0.1, cfg_scale=2.0)
    a = pipe.generate("red square", s)
    b = pipe.generate("red square", s)
    assert a.image.shape == (64, 64, 3)
    assert np.array_equal(a.image, b.image)
    assert "nearest caption: red square" in a.note


def test_ar_ema_weights_are_exported_and_export_only_rewrites_them(dataset, tmp_path):
    """--ema keeps an average of the weights in the checkpoint and exports it; --export
    rewrites gpt.safetensors from the checkpoint without training a step."""
    from lantern_studio.engine.checkpoints import load_gpt
    from lantern_studio.engine.tokenizer import VQArgs, VQModel, save_vq

    vq_model = VQModel(VQArgs(ch=16, encoder_ch_mult=[1, 1, 1, 1], decoder_ch_mult=[1, 1, 1, 1], z_channels=16,
                              codebook_size=32, codebook_embed_dim=4, norm_groups=8))
    vq_file = save_vq(vq_model, vq_model.args, tmp_path / "vq.safetensors")
    argv = ["--vq", str(vq_file), "--data", str(dataset), "--run", str(tmp_path / "ar"), "--steps", "4",
            "--batch", "4", "--dim", "32", "--layers", "1", "--heads", "2", "--condition", "caption", "--encoder", "hash:16",
            "--threads", "1", "--eval-every", "100", "--warmup", "1", "--lr", "1e-2"]
    m = ar.train(parse(ar, [*argv, "--ema", "0.5"]))
    assert m["ema"] == 0.5 and np.isfinite(m["heldout_nll_ema"])
    ck = torch.load(tmp_path / "ar" / CHECKPOINT_NAME, weights_only=True)
    exported = load_gpt(tmp_path / "ar" / "gpt.safetensors").state_dict()
    some = "tok_embeddings.weight" if "tok_embeddings.weight" in exported else next(iter(exported))
    # The export is the average (to fp16), not the raw last weights.
    assert torch.allclose(exported[some].float(), ck["extra"]["ema"][some].half().float())
    assert not torch.allclose(ck["extra"]["ema"][some], ck["model"][some])
    (tmp_path / "ar" / "gpt.safetensors").unlink()
    m2 = ar.train(parse(ar, [*argv, "--ema", "0.5", "--export"]))
    assert m2["step"] == 4 and (tmp_path / "ar" / "gpt.safetensors").is_file()
    assert torch.load(tmp_path / "ar" / CHECKPOINT_NAME, weights_only=True)["step"] == 4


@pytest.mark.slow
def test_train_ar_under_torchrun_ddp_ends_with_identical_weights_on_both_ranks(dataset, tmp_path):
    """`train ar` unchanged under torchrun: 2 CPU processes (gloo), different batches per rank,
    gradients all-reduced, so both ranks end with the same weights (digests in their logs)."""
    import os
    import re
    import subprocess
    import sys

    from lantern_studio.engine.tokenizer import VQArgs, VQModel, save_vq

    vq_model = VQModel(VQArgs(ch=16, encoder_ch_mult=[1, 1, 1, 1], decoder_ch_mult=[1, 1, 1, 1], z_channels=16,
                              codebook_size=32, codebook_embed_dim=4, norm_groups=8))
    vq_file = save_vq(vq_model, vq_model.args, tmp_path / "vq.safetensors")
    run = tmp_path / "ddp"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           "-m", "lantern_studio", "--", "train", "ar", "--vq", str(vq_file), "--data", str(dataset), "--run", str(run),
           "--steps", "4", "--batch", "4", "--dim", "32", "--layers", "1", "--heads", "2", "--condition", "caption",
           "--encoder", "hash:16", "--threads", "1", "--eval-every", "100", "--warmup", "1",
           "--lr", "1e-2"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    digest = re.compile(r"rank (\d) final weights sha256 ([0-9a-f]{64})")
    d0 = digest.findall((run / "log.txt").read_text())
    d1 = digest.findall((run / "rank1" / "log.txt").read_text())
    assert d0 and d1 and d0[-1][0] == "0" and d1[-1][0] == "1"
    assert d0[-1][1] == d1[-1][1]  # identical weights on both ranks
    assert "per rank × 2 ranks (DDP)" in (run / "log.txt").read_text()
    assert (run / "gpt.safetensors").is_file() and not (run / "rank1" / "gpt.safetensors").exists()
    # and the weights did change: a single-process run of the same settings is a different model
    m = json.loads((run / "metrics.json").read_text())
    assert m["step"] == 4


def _command(kind, dataset, vq_file, run, steps):
    """The same tiny training command of each trainer: checkpoints every 0.3 s, never logs."""
    import sys

    common = ["--run", str(run), "--steps", str(steps), "--threads", "1", "--checkpoint-seconds", "0.3",
              "--log-every", "1000000", "--warmup", "1"]
    if kind == "ar":
        return [sys.executable, "-m", "lantern_studio", "train", "ar", "--vq", str(vq_file), "--data", str(dataset),
                "--batch", "2", "--dim", "16", "--layers", "1", "--heads", "2", "--condition", "caption", "--encoder",
                "hash:16", "--eval-every", "1000000", *common]
    if kind == "vq":
        tiny = json.dumps({"ch": 8, "encoder_ch_mult": [1, 1, 1, 1], "decoder_ch_mult": [1, 1, 1, 1],
                           "z_channels": 8, "codebook_size": 32, "codebook_embed_dim": 4, "norm_groups": 4})
        return [sys.executable, "-m", "lantern_studio", "train", "vq", "--data", str(dataset), "--batch", "2",
                "--vq-args", tiny, "--kmeans-step", "-1", "--precision", "fp32", "--eval-every", "0", *common]
    assert kind == "recogniser"
    return [sys.executable, "-m", "lantern_studio", "train", "recogniser", "--data", str(dataset), "--batch", "4",
            "--stem", "4", "--widths", "4,8", "--feature-dim", "8", "--eval-every", "0", "--train-eval-images", "4",
            *common]


def _wait_for_checkpoint(proc, kind, run, at_least: int, timeout: float = 120.0) -> None:
    import time

    t0 = time.time()
    while time.time() - t0 < timeout:
        assert proc.poll() is None, "training ended before it could be stopped"
        if (run / CHECKPOINT_NAME).is_file() and read_checkpoint(run / CHECKPOINT_NAME, kind)["step"] >= at_least:
            return
        time.sleep(0.1)
    raise AssertionError("no checkpoint appeared")


TRAINERS = ["ar", "vq", "recogniser"]


# the kill loop of the two slowest trainers is behind -m slow; CI kills the recogniser's (the same loop driver)
@pytest.mark.parametrize("kind", [pytest.param(k, marks=pytest.mark.slow) if k in ("ar", "vq") else k
                                  for k in TRAINERS])
def test_kill_9_mid_training_loses_only_the_steps_since_the_last_checkpoint(kind, dataset, tmp_path):
    """Every trainer runs on the one loop driver: SIGKILL at an arbitrary moment (after a few checkpoints)
    leaves the checkpoint on disk whole (written to a temporary file and renamed, never in place), and the
    same command resumes from its step."""
    import subprocess

    vq_file, run = tiny_vq_file(tmp_path / "vq.safetensors"), tmp_path / "run"
    proc = subprocess.Popen(_command(kind, dataset, vq_file, run, 10**9), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        _wait_for_checkpoint(proc, kind, run, at_least=3)
    finally:
        proc.kill()
        proc.wait()
    ck = read_checkpoint(run / CHECKPOINT_NAME, kind)  # loads: never torn
    done = ck["step"]
    assert done >= 3 and not list(run.glob("*.tmp*"))
    out = subprocess.run(_command(kind, dataset, vq_file, run, done + 2), capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"resumed from step {done}" in (run / "log.txt").read_text()
    assert read_checkpoint(run / CHECKPOINT_NAME, kind)["step"] == done + 2


@pytest.mark.parametrize("kind", TRAINERS)
def test_sigterm_checkpoints_the_step_it_stopped_at_and_exits_143(kind, dataset, tmp_path):
    import signal
    import subprocess

    vq_file, run = tiny_vq_file(tmp_path / "vq.safetensors"), tmp_path / "run"
    proc = subprocess.Popen(_command(kind, dataset, vq_file, run, 10**9), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        _wait_for_checkpoint(proc, kind, run, at_least=2)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 143
    finally:
        if proc.poll() is None:
            proc.kill()
    log = (run / "log.txt").read_text()
    step = read_checkpoint(run / CHECKPOINT_NAME, kind)["step"]
    assert f"stopped by SIGTERM at step {step}; checkpoint saved" in log


def test_a_checkpoint_of_another_trainer_or_format_is_refused_by_name(tmp_path):
    """One checkpoint format, with the trainer's kind in it: a vq checkpoint in an ar run folder, a
    torn file, or the old per-trainer format each get one line naming the file."""
    from lantern_studio.training.loop import FORMAT

    path = tmp_path / CHECKPOINT_NAME
    torch.save({"format": FORMAT, "kind": "vq", "step": 3}, path)
    with pytest.raises(ValueError, match="a checkpoint of `train vq`, not `train ar`"):
        read_checkpoint(path, "ar")
    path.write_bytes(b"PK\x03\x04 torn")
    with pytest.raises(ValueError, match="unreadable checkpoint"):
        read_checkpoint(path, "vq")
    torch.save({"step": 3, "model": {}}, path)
    with pytest.raises(ValueError, match="not a lantern-studio training checkpoint"):
        read_checkpoint(path, "vq")
    path.unlink()
    assert read_checkpoint(path, "vq") is None
    torch.save({"step": 3}, tmp_path / "ckpt.pt")
    with pytest.raises(ValueError, match="ckpt.pt: a checkpoint in the format before"):
        read_checkpoint(path, "ar")


def test_self_distillation_runs_on_the_loop_and_a_cancel_ends_it_with_a_head(tmp_path):
    """`train drafter --model` (self-distillation) is the fifth trainer on the loop driver: the caller's
    cancel ends training after the step it asked at, and the head trained so far is written and reported."""
    from support.tiny import tiny_v3_folder

    from lantern_studio.training.self_distill import train_drafter_for_model

    folder = tiny_v3_folder(tmp_path / "v3")
    seen = []
    out = tmp_path / "eagle.safetensors"
    summary = train_drafter_for_model(str(folder), steps=50, sequences=4, batch=2, out=out,
                                      progress=lambda phase, done, total: seen.append((phase, done)),
                                      should_stop=lambda: ("training", 3) in seen)
    assert summary["steps"] == 3 and [d for p, d in seen if p == "training"] == [1, 2, 3]
    assert out.is_file() and summary["history"][-1]["step"] == 3 and 0.0 <= summary["heldout_top1_agreement"] <= 1
    # uncancelled, the same call trains every step
    full = train_drafter_for_model(str(folder), steps=5, sequences=4, batch=2, out=out)
    assert full["steps"] == 5 and full["stopped_by"] is None


def test_ship_sampling_sets_a_class_models_temperature_top_k_and_guidance_and_keeps_the_method():
    picked = ship.class_defaults(parse(ship, ["--sampling", "1.0/0/2"]).sampling)
    assert (picked.temperature, picked.top_k, picked.cfg_scale, picked.greedy) == (1.0, 0, 2.0, False)
    base = ship.CLASS_DEFAULTS
    assert (picked.drafter, picked.k, picked.delta, picked.draft_length) == (base.drafter, base.k, base.delta,
                                                                              base.draft_length)
    assert ship.class_defaults(parse(ship, []).sampling) == base  # no flag: the defaults as before
    assert ship.class_defaults(parse(ship, ["--sampling", "greedy/1.5"]).sampling).greedy


def test_ship_refuses_a_sampling_it_cannot_read_in_one_line(capsys):
    with pytest.raises(SystemExit):
        parse(ship, ["--sampling", "1.0/ten/2"])
    assert "write T/K/CFG" in capsys.readouterr().err


def test_ship_names_a_class_models_missing_vocabulary_in_one_line(tmp_path, capsys):
    """A class model's weights copied away from their run folder (no identities.json beside them): one line that
    says what is missing, exit 2, and nothing written, before the dataset or tokenizer is read."""
    from support.tiny import tiny_v3_folder

    folder = tiny_v3_folder(tmp_path / "v3")
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "gpt.safetensors").write_bytes((folder / "gpt.safetensors").read_bytes())
    args = parse(ship, ["--out", str(tmp_path / "out"), "--gpt", str(alone / "gpt.safetensors"),
                        "--vq", str(tmp_path / "no-vq"), "--data", str(tmp_path / "no-data")])
    assert ship.run(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "identities.json" in err[0] and str(alone / "gpt.safetensors") in err[0]
    assert not (tmp_path / "out" / "model.json").exists()
