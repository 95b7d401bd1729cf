"""Every trainer has the same entry points and the same loop-flag checks (training/lifecycle.py's
``entry_points``, training/loop.py's ``check_loop_arguments``), and one optimiser step (training/step.py)
is the block each used to write by hand."""

from __future__ import annotations

import argparse
import copy

import pytest
import torch

from lantern_studio.training import ar, drafter, heads, recogniser, self_distill, vq
from lantern_studio.training.step import optimizer_step

TRAINERS = {"vq": vq, "recogniser": recogniser, "ar": ar, "drafter": drafter, "heads": heads}
# what each needs before it reads the loop flags (a file it never gets to open)
REQUIRED = {"drafter": ["--gpt", "nothing.safetensors"], "heads": ["--model", "nothing"]}


def parse(module, argv):
    p = argparse.ArgumentParser()
    module.add_arguments(p)
    return p.parse_args(argv)


@pytest.mark.parametrize("name", sorted(TRAINERS))
def test_every_trainer_has_the_same_entry_points(name):
    module = TRAINERS[name]
    for entry in ("add_arguments", "train", "run", "main"):
        assert callable(getattr(module, entry)), f"training/{name}.py has no {entry}"


#: --steps 0 exports the start weights of a grown or warm-started model in these (as before the shared check)
MIN_STEPS = {"vq": 1, "recogniser": 1, "ar": 0, "drafter": 0, "heads": 0}


@pytest.mark.parametrize("name", sorted(TRAINERS))
@pytest.mark.parametrize("flag, value, allowed", [("--steps", "-1", None), ("--batch", "0", ">= 1"),
                                                  ("--lr", "0", "> 0"), ("--threads", "0", ">= 1"),
                                                  ("--log-every", "0", ">= 1"),
                                                  ("--checkpoint-seconds", "0", "> 0")])
def test_a_loop_flag_out_of_range_is_one_line_and_exit_2_in_every_trainer(name, flag, value, allowed, tmp_path,
                                                                          capsys):
    module = TRAINERS[name]
    argv = [*REQUIRED.get(name, []), "--run", str(tmp_path / "run"), flag, value]
    args = parse(module, argv)
    shown = getattr(args, flag[2:].replace("-", "_"))
    assert module.run(args) == 2
    allowed = allowed or f">= {MIN_STEPS[name]}"
    assert capsys.readouterr().err.strip().splitlines() == [f"lantern-studio: {flag}={shown!r}: must be {allowed}"]
    with pytest.raises(ValueError, match=flag):  # the Python API raises instead (a TrainingError)
        module.train(parse(module, argv))


def test_train_drafter_with_a_model_self_distils_through_the_same_entry_points(monkeypatch, tmp_path):
    seen = []

    def distill(ns):
        seen.append(ns)
        return {"steps": 7, "stopped_by": "SIGTERM", "path": str(tmp_path / "eagle.safetensors")}

    monkeypatch.setattr(self_distill, "distill", distill)
    args = parse(drafter, ["--model", "tiny", "--steps", "9", "--sequences", "5", "--batch", "3", "--seed", "4"])
    assert drafter.run(args) == 143  # stopped by SIGTERM, as the command says
    assert drafter.train(args)["steps"] == 7
    ns = seen[0]
    assert (ns.name, ns.steps, ns.sequences, ns.batch, ns.seed) == ("tiny", 9, 5, 3, 4)


@pytest.mark.parametrize("clip", [0.0, 0.05, 1.0])
def test_one_optimiser_step_is_the_block_it_replaces(clip):
    """optimizer_step does what each trainer wrote out: lr into every group, zero_grad, backward, clip
    (when clip > 0), step; it returns the gradient norm before clipping (None when it did not clip)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    twin = copy.deepcopy(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1.0, weight_decay=0.1)
    opt_twin = torch.optim.AdamW(twin.parameters(), lr=1.0, weight_decay=0.1)
    x = torch.randn(16, 4)
    for lr in (1e-2, 3e-3):
        norm = optimizer_step(opt, model(x).pow(2).mean(), model.parameters(), lr=lr, clip=clip)
        for g in opt_twin.param_groups:
            g["lr"] = lr
        loss = twin(x).pow(2).mean()
        opt_twin.zero_grad(set_to_none=True)
        loss.backward()
        want = torch.nn.utils.clip_grad_norm_(twin.parameters(), clip) if clip > 0 else None
        opt_twin.step()
        assert (norm is None) == (want is None) and (norm is None or torch.equal(norm, want))
        assert all(g["lr"] == lr for g in opt.param_groups)
        for a, b in zip(model.parameters(), twin.parameters()):
            assert torch.equal(a, b)
