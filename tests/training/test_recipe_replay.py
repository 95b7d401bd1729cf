"""``train replay`` on a tiny two-stage recipe: it runs the schedule that actually ran (a run stopped and
resumed with another ``--steps``), lands on pinned tensors, resumes after ``--until-step`` to the same weights,
skips stages whose outputs match, and takes pinned files only when their hash is the recipe's."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
import torch

from lantern_studio.training import ar
from lantern_studio.training.common import tensors_digest
from lantern_studio.training.errors import TrainingError
from lantern_studio.training.recipe import parse_recipe
from lantern_studio.training.replay import replay
from support.dataset import class_dataset, tiny_vq_file

#: the tiny recipe's final weights, by the CPU capability torch dispatches its kernels for (float results
#: differ in their last bits between kernel families, so a hash is pinned per family it was measured on)
PINNED = {"AVX512": "14ebcae8bcda6fe9acadba449408f35f147df76bea13cc3d0046b8c7a7ec1c17"}


def common(data: Path, vq: Path) -> list[str]:
    return ["--data", str(data), "--vq", str(vq), "--run", "{out}", "--repertoire", "everyday", "--styles", "all",
            "--dim", "32", "--layers", "1", "--heads", "2", "--batch", "4", "--warmup", "2", "--no-bf16",
            "--eval-every", "0", "--log-every", "100", "--checkpoint-seconds", "1000"]


def recipe_text(data: Path, vq: Path, first_schedule: str, expect: dict | None = None) -> str:
    def toml_list(items):
        return "[" + ", ".join(json.dumps(i) for i in items) + "]"

    expect = expect or {}
    ex = {k: f'expect = {{ "gpt.safetensors" = "tensors:{v}" }}' for k, v in expect.items()}
    return f"""
name = "tiny"
model = "unused"
[[stage]]
name = "first"
run = "train ar"
args = {toml_list(common(data, vq) + ["--lr", "3e-3"])}
schedule = {first_schedule}
{ex.get("first", "")}
[[stage]]
name = "second"
run = "train ar"
args = {toml_list(common(data, vq) + ["--lr", "1e-3", "--init-from", "{first}/gpt.safetensors", "--start-step", "0"])}
schedule = [{{ steps = 3, threads = 1 }}]
{ex.get("second", "")}
"""


#: the first stage was stopped at step 4 of an 8-step cosine and resumed with --steps 6
RAN = "[{ steps = 8, until = 4, threads = 1 }, { steps = 6, threads = 1 }]"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("replay")
    class_dataset(root / "data")
    return root / "data", tiny_vq_file(root / "vq.safetensors")


@pytest.fixture(scope="module")
def replayed(inputs, tmp_path_factory):
    """The recipe replayed from nothing: its work folder and each stage's weights' digest."""
    work = tmp_path_factory.mktemp("work")
    recipe = parse_recipe(recipe_text(*inputs, RAN), "tiny.toml")
    replay(recipe, work)
    return work, {s: tensors_digest(work / s / "gpt.safetensors") for s in ("first", "second")}


def by_hand(data: Path, vq: Path, run: Path, argv: list[str], stop_at: int | None = None) -> None:
    p = argparse.ArgumentParser()
    ar.add_arguments(p)
    args = p.parse_args([a.replace("{out}", str(run)) for a in argv])
    args.stop_at = stop_at  # what a SIGTERM at that step's checkpoint left
    assert ar.run(args) == 0


def test_the_replay_is_the_history_run_by_hand(inputs, replayed, tmp_path):
    """The same commands typed as they ran (stopped at step 4, re-run with --steps 6, then the second stage)
    give the very tensors the replay gives."""
    data, vq = inputs
    first = common(data, vq) + ["--lr", "3e-3", "--threads", "1"]
    by_hand(data, vq, tmp_path / "a", first + ["--steps", "8"], stop_at=4)
    by_hand(data, vq, tmp_path / "a", first + ["--steps", "6"])
    by_hand(data, vq, tmp_path / "b", common(data, vq) + [
        "--lr", "1e-3", "--init-from", str(tmp_path / "a" / "gpt.safetensors"), "--start-step", "0", "--steps", "3",
        "--threads", "1"])
    work, digests = replayed
    assert tensors_digest(tmp_path / "a" / "gpt.safetensors") == digests["first"]
    assert tensors_digest(tmp_path / "b" / "gpt.safetensors") == digests["second"]
    assert json.loads((work / "first" / "replay.json").read_text())["segments_done"] == 2


@pytest.mark.skipif(torch.backends.cpu.get_cpu_capability() not in PINNED,
                    reason="the tiny recipe's hash is pinned for the kernel families it was measured on")
def test_the_tiny_recipe_replays_to_its_pinned_tensors(replayed):
    assert replayed[1]["second"] == PINNED[torch.backends.cpu.get_cpu_capability()]


def test_the_schedule_that_ran_matters(inputs, replayed, tmp_path):
    """The mutant: the first stage's last command alone (--steps 6 from the start, as a log that kept only the
    final command would say) trains other weights."""
    replay(parse_recipe(recipe_text(*inputs, "[{ steps = 6, threads = 1 }]"), "tiny.toml"), tmp_path)
    assert tensors_digest(tmp_path / "first" / "gpt.safetensors") != replayed[1]["first"]


def test_until_step_stops_part_way_and_the_same_command_resumes_to_the_same_tensors(inputs, replayed, tmp_path):
    recipe = parse_recipe(recipe_text(*inputs, RAN), "tiny.toml")
    first = replay(recipe, tmp_path, until_step=2)
    assert list(first) == ["first"] and not (tmp_path / "second").exists()
    assert torch.load(tmp_path / "first" / "checkpoint.pt", weights_only=True)["step"] == 2
    replay(recipe, tmp_path)
    assert tensors_digest(tmp_path / "second" / "gpt.safetensors") == replayed[1]["second"]


def test_stages_whose_outputs_match_are_skipped_and_a_changed_one_runs_again(inputs, replayed, capsys):
    work, digests = replayed
    recipe = parse_recipe(recipe_text(*inputs, RAN, expect=digests), "tiny.toml")
    before = {s: (work / s / "gpt.safetensors").stat().st_mtime_ns for s in digests}
    assert replay(recipe, work) == {"first": True, "second": True}
    assert {s: (work / s / "gpt.safetensors").stat().st_mtime_ns for s in digests} == before
    assert capsys.readouterr().err.count("skipped") == 2
    wrong = parse_recipe(recipe_text(*inputs, RAN, expect={"second": "0" * 64}), "tiny.toml")
    assert replay(wrong, work, only="second") == {"second": False}  # not skipped: checked, and said to differ
    assert "second/gpt.safetensors: differs" in capsys.readouterr().err


PINNED_STAGE = """
name = "pins"
model = "unused"
[[stage]]
name = "tokenizer"
pinned = {{ "vq.safetensors" = "0000000:resources/models/emoji-64/vq.safetensors" }}
expect = {{ "vq.safetensors" = "tensors:{digest}" }}
"""


def test_a_pinned_file_is_taken_only_with_the_recipes_hash(tmp_path):
    """Where the commit is missing (a shallow clone), the working tree's file at that path is taken when its
    tensors are the recipe's; another file is refused in one line and not left behind."""
    good = "326dac9b9475c6b344779246f32cd46b531286974da69cf839e0dbefdbe2ba9a"
    assert replay(parse_recipe(PINNED_STAGE.format(digest=good), "pins.toml"), tmp_path / "ok") == {"tokenizer": True}
    with pytest.raises(TrainingError, match="is not the pinned file") as e:
        replay(parse_recipe(PINNED_STAGE.format(digest="1" * 64), "pins.toml"), tmp_path / "bad")
    assert "\n" not in str(e.value) and not (tmp_path / "bad" / "tokenizer" / "vq.safetensors").exists()
