"""Resuming a run reads untrusted input (training/loop.py ``read_checkpoint`` / ``restore``, inside the
lifecycle): a hostile ``checkpoint.pt`` in the run folder of ``train heads`` or ``train ar`` — a missing
key, wrong shapes, a mismatched optimiser, a wrong-size RNG state, ``step: "two"``, a config asking for
gigabytes, a directory — is one ``lantern-studio:`` line naming it and exit 2, before memory is spent;
a full disk during a save keeps the last good checkpoint and says so in one line."""

from __future__ import annotations

import errno
import os
import resource
import shutil
import subprocess
import sys

import pytest
import torch

from lantern_studio.cli import main
from lantern_studio.engine import draft_heads
from lantern_studio.training import common, loop
from lantern_studio.training.loop import CHECKPOINT_NAME, read_checkpoint
from support.tiny import tiny_v3_model_and_pack


@pytest.fixture(scope="module")
def model_and_pack(tmp_path_factory):
    """The tiny factorised class model and pack of support/tiny.py, built once for the module."""
    return tiny_v3_model_and_pack(tmp_path_factory.mktemp("resume"))


def _heads_argv(folder, pack, run, steps):
    return ["train", "heads", "--model", str(folder), "--pack", str(pack), "--run", str(run), "--steps", str(steps),
            "--heads", "2", "--hidden", "8", "--batch", "2", "--warmup", "1", "--eval-every", "0", "--eval-images",
            "2", "--log-every", "1000", "--threads", "1"]


def _ar_argv(folder, pack, run, steps):
    return ["train", "ar", "--pack", str(pack), "--condition", "class", "--run", str(run), "--steps", str(steps),
            "--dim", "16", "--layers", "1", "--heads", "2", "--batch", "2", "--warmup", "1", "--eval-every", "0",
            "--log-every", "1000", "--threads", "1"]


ARGV = {"heads": _heads_argv, "ar": _ar_argv}


@pytest.fixture(scope="module")
def good_runs(model_and_pack, tmp_path_factory):
    """{kind: a run folder trained 2 steps (its checkpoint good)}."""
    folder, pack = model_and_pack
    runs = {}
    for kind, argv in ARGV.items():
        run = tmp_path_factory.mktemp(f"good-{kind}") / "run"
        assert main(argv(folder, pack, run, 2)) == 0
        assert read_checkpoint(run / CHECKPOINT_NAME, kind)["step"] == 2
        runs[kind] = run
    return runs


def _hostile_run(good_runs, kind, tmp_path, mutate):
    run = tmp_path / "run"
    shutil.copytree(good_runs[kind], run)
    ck = torch.load(run / CHECKPOINT_NAME, weights_only=True)
    mutate(ck)
    torch.save(ck, run / CHECKPOINT_NAME)
    return run


def _first_param(ck) -> str:
    return next(iter(ck["model"]))


def _wrong_shapes(ck):
    k = _first_param(ck)
    ck["model"][k] = torch.zeros(*[s + 1 for s in ck["model"][k].shape])


def _optimiser_groups(ck):
    ck["optimizer"]["param_groups"][0]["params"] = ck["optimizer"]["param_groups"][0]["params"][:-1]


def _optimiser_state_shape(ck):
    state = next(iter(ck["optimizer"]["state"].values()))
    state["exp_avg"] = torch.zeros(3, 3, 3)


def _optimiser_lr(ck):
    ck["optimizer"]["param_groups"][0]["betas"] = "fast"


CASES = {  # name: (mutation, what the line must name)
    "missing model": (lambda ck: ck.pop("model"), '"model"'),
    "model not a dict": (lambda ck: ck.update(model=[1, 2]), '"model"'),
    "wrong shapes": (_wrong_shapes, "shape mismatch"),
    "missing a parameter": (lambda ck: ck["model"].pop(_first_param(ck)), "missing key"),
    "optimiser groups": (_optimiser_groups, '"optimizer" has parameter groups'),
    "optimiser state shape": (_optimiser_state_shape, "exp_avg"),
    "optimiser hyper-parameter": (_optimiser_lr, "betas"),
    "optimiser missing": (lambda ck: ck.pop("optimizer"), '"optimizer"'),
    "rng wrong size": (lambda ck: ck.update(rng=torch.zeros(10, dtype=torch.uint8)), '"rng"'),
    "torch rng wrong size": (lambda ck: ck.update(torch_rng=torch.zeros(7, dtype=torch.uint8)), '"torch_rng"'),
    "rng not bytes": (lambda ck: ck.update(rng=torch.zeros(5056)), '"rng"'),
    "step two": (lambda ck: ck.update(step="two"), '"step"'),
    "step negative": (lambda ck: ck.update(step=-3), '"step"'),
    "wall seconds": (lambda ck: ck.update(wall_seconds=float("nan")), '"wall_seconds"'),
    "history": (lambda ck: ck.update(history=[{"loss": 1}]), '"history"'),
    "extra not a dict": (lambda ck: ck.update(extra=[1]), '"extra"'),
}


def _one_line(capsys, rc, *names):
    err = capsys.readouterr().err
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("[")]  # the run log's own lines aside
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("lantern-studio: "), err
    assert "Traceback" not in err and "weights_only=False" not in err, err
    for name in names:
        assert name in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("kind", list(ARGV))
@pytest.mark.parametrize("case", list(CASES))
def test_a_hostile_checkpoint_is_one_line_and_exit_2(model_and_pack, good_runs, tmp_path, capsys, case, kind):
    mutate, name = CASES[case]
    run = _hostile_run(good_runs, kind, tmp_path, mutate)
    before = (run / CHECKPOINT_NAME).read_bytes()
    capsys.readouterr()
    _one_line(capsys, main(ARGV[kind](*model_and_pack, run, 4)), str(run / CHECKPOINT_NAME), name)
    assert (run / CHECKPOINT_NAME).read_bytes() == before  # the user's file is left as it was


def test_a_heads_checkpoint_asking_for_gigabytes_is_refused_before_any_is_spent(model_and_pack, good_runs, tmp_path,
                                                                                  capsys, monkeypatch):
    """``extra.config.hidden`` 3e6 (or 3000000, or a million heads) would build gigabytes of heads: it is
    bounded by the target's width before anything is built."""
    built = []
    real = draft_heads.DraftHeads.__init__

    def spy(self, dim, n_heads, hidden):
        built.append((n_heads, hidden))
        assert n_heads <= draft_heads.MAX_HEADS and hidden <= draft_heads.HIDDEN_PER_WIDTH * dim, "built unchecked"
        real(self, dim, n_heads, hidden)

    monkeypatch.setattr(draft_heads.DraftHeads, "__init__", spy)
    for i, (field, value) in enumerate([("hidden", 3e6), ("hidden", 3_000_000), ("heads", 10**6), ("hidden", -1),
                                        ("loss", "mse"), ("temperature", 0.0)]):
        run = _hostile_run(good_runs, "heads", tmp_path / str(i), lambda ck: ck["extra"]["config"].update({field: value}))
        capsys.readouterr()
        _one_line(capsys, main(_heads_argv(*model_and_pack, run, 4)), str(run / CHECKPOINT_NAME), f'"{field}"')
    assert built == []
    # the options are held to the same bounds a heads file is
    capsys.readouterr()
    argv = _heads_argv(*model_and_pack, tmp_path / "fresh", 2)
    argv[argv.index("--hidden") + 1] = "300000"
    _one_line(capsys, main(argv), "train heads", '"hidden"', "[1, 256]")
    assert built == []


def test_an_ar_checkpoint_of_a_huge_model_is_refused_before_it_is_built(model_and_pack, good_runs, tmp_path, capsys,
                                                                         monkeypatch):
    def huge(ck):
        ck["extra"]["model_args"]["dim"] = 3_000_000

    run = _hostile_run(good_runs, "ar", tmp_path, huge)
    capsys.readouterr()
    _one_line(capsys, main(_ar_argv(*model_and_pack, run, 4)), str(run / CHECKPOINT_NAME))
    # its saved settings missing altogether: named, not a KeyError
    run2 = _hostile_run(good_runs, "ar", tmp_path / "b", lambda ck: ck["extra"].pop("model_args"))
    _one_line(capsys, main(_ar_argv(*model_and_pack, run2, 4)), str(run2 / CHECKPOINT_NAME), "model_args")


@pytest.mark.parametrize("kind", list(ARGV))
def test_a_checkpoint_that_is_a_directory_is_named_not_started_fresh(model_and_pack, tmp_path, capsys, kind):
    run = tmp_path / "run"
    (run / CHECKPOINT_NAME).mkdir(parents=True)
    capsys.readouterr()
    _one_line(capsys, main(ARGV[kind](*model_and_pack, run, 2)), str(run / CHECKPOINT_NAME), "is a directory")
    assert (run / CHECKPOINT_NAME).is_dir() and not list((run / CHECKPOINT_NAME).iterdir())
    assert not (run / ("heads.safetensors" if kind == "heads" else "gpt.safetensors")).exists()  # nothing trained


def test_a_checkpoint_holding_python_objects_is_refused_without_the_unsafe_advice(model_and_pack, tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    torch.save({"format": loop.FORMAT, "kind": "heads", "payload": shutil.Error("not a tensor")}, run / CHECKPOINT_NAME)
    capsys.readouterr()
    _one_line(capsys, main(_heads_argv(*model_and_pack, run, 2)), str(run / CHECKPOINT_NAME), "refused")


@pytest.mark.parametrize("failure", ["ENOSPC", "torch zip writer"])
@pytest.mark.parametrize("kind", list(ARGV))
def test_a_full_disk_during_a_save_keeps_the_last_good_checkpoint_and_says_so(model_and_pack, good_runs, tmp_path,
                                                                               capsys, monkeypatch, failure, kind):
    run = tmp_path / "run"
    shutil.copytree(good_runs[kind], run)
    before = (run / CHECKPOINT_NAME).read_bytes()
    real_save = torch.save

    def full_disk(obj, f, *a, **k):
        if isinstance(obj, dict) and obj.get("format") == loop.FORMAT:
            with open(f, "wb") as fh:  # half written, then the disk is full
                fh.write(b"PK\x03\x04" + b"\0" * 100)
            if failure == "ENOSPC":
                raise OSError(errno.ENOSPC, "No space left on device")
            raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 704 vs 598")  # as seen
        return real_save(obj, f, *a, **k)

    monkeypatch.setattr(common.torch, "save", full_disk)
    capsys.readouterr()
    line = _one_line(capsys, main(ARGV[kind](*model_and_pack, run, 4)), str(run / CHECKPOINT_NAME),
                     "could not write the checkpoint of step 4", "the previous checkpoint is kept")
    assert ("No space left on device" if failure == "ENOSPC" else "file write failed") in line
    assert (run / CHECKPOINT_NAME).read_bytes() == before  # the last good checkpoint, byte for byte
    assert not [p.name for p in run.iterdir() if ".tmp" in p.name]  # no temporary file left
    monkeypatch.setattr(common.torch, "save", real_save)
    assert main(ARGV[kind](*model_and_pack, run, 4)) == 0  # space again: the same command resumes from step 2
    assert "resumed from step 2" in (run / "log.txt").read_text()
    assert read_checkpoint(run / CHECKPOINT_NAME, kind)["step"] == 4


def test_a_real_file_size_limit_during_a_save_is_one_line_and_keeps_the_checkpoint(model_and_pack, good_runs,
                                                                                    tmp_path):
    """No mock: RLIMIT_FSIZE in a child process makes the checkpoint's write fail as a full disk does
    (torch's zip writer raises its own RuntimeError); the previous checkpoint stays byte for byte."""
    run = tmp_path / "run"
    shutil.copytree(good_runs["heads"], run)
    before = (run / CHECKPOINT_NAME).read_bytes()
    limit = 16 * 1024
    assert len(before) > 2 * limit and (run / "log.txt").stat().st_size < limit // 4

    def small_disk():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    r = subprocess.run([sys.executable, "-m", "lantern_studio", *_heads_argv(*model_and_pack, run, 4)],
                       preexec_fn=small_disk, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    lines = [ln for ln in r.stderr.splitlines() if ln.strip() and not ln.startswith("[")]
    assert r.returncode == 2 and len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert str(run / CHECKPOINT_NAME) in lines[0] and "the previous checkpoint is kept" in lines[0], lines[0]
    assert (run / CHECKPOINT_NAME).read_bytes() == before
    assert not [p.name for p in run.iterdir() if ".tmp" in p.name]


def test_an_ar_checkpoint_whose_weight_average_does_not_fit_is_one_line(model_and_pack, good_runs, tmp_path, capsys):
    def bad_ema(ck):
        ck["extra"]["ema"] = {k: torch.zeros(2) for k in ck["model"]}

    run = _hostile_run(good_runs, "ar", tmp_path, bad_ema)
    capsys.readouterr()
    _one_line(capsys, main(ARGV["ar"](*model_and_pack, run, 4)), str(run / CHECKPOINT_NAME), "weight average (ema)")
