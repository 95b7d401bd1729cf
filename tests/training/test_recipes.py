"""The bundled models' recipes and cards: each recipe parses, names the very weights its model folder ships,
and the card is the one its folder and recipe write, short enough to read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lantern_studio.engine.files import sha256_file
from lantern_studio.training.common import tensors_digest
from lantern_studio.training.errors import TrainingError
from lantern_studio.training.model_card import card_text
from lantern_studio.training.recipe import parse_recipe, read_recipe, repo_root

ROOT = Path(__file__).resolve().parents[2]
RECIPES = sorted((ROOT / "recipes").glob("*.toml"))
GOOD = """
name = "tiny"
model = "resources/models/tiny"
[[stage]]
name = "a"
run = "train ar"
args = ["--run", "{out}"]
schedule = [{ steps = 6, until = 3 }, { steps = 5 }]
[[stage]]
name = "b"
run = "train ar"
args = ["--init-from", "{a}/gpt.safetensors", "--run", "{out}"]
schedule = [{ steps = 2 }]
"""


def test_the_recipes_are_the_bundled_models_and_the_checkout_is_their_repo():
    assert repo_root() == ROOT
    assert sorted(p.stem for p in RECIPES) == ["emoji-64", "emoji-64-v5"]
    for path in RECIPES:
        recipe = read_recipe(path)
        assert recipe.name == path.stem and (ROOT / recipe.model / "model.json").is_file()


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.stem)
def test_the_ship_stage_expects_the_weights_the_folder_ships(path):
    """Each tensors hash the last stage expects is the digest of the file in the model folder: the recipe
    describes these weights, not some other run's."""
    recipe = read_recipe(path)
    ship = recipe.stages[-1]
    assert ship.run == "train ship" and ship.expect
    folder = ROOT / recipe.model
    for name, want in ship.expect.items():
        assert want == f"tensors:{tensors_digest(folder / name)}", name
    # the AR stage the ship stage takes its weights from expects the same tensors
    ar_name = next(a for a in ship.args if a.endswith("/gpt.safetensors")).split("}")[0].lstrip("{")
    assert recipe.stage(ar_name).expect["gpt.safetensors"] == ship.expect["gpt.safetensors"]


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.stem)
def test_each_card_is_written_from_its_folder_and_recipe_and_is_short(path):
    recipe = read_recipe(path)
    folder = ROOT / recipe.model
    card = (folder / "MODEL_CARD.md").read_text(encoding="utf-8")
    assert card == card_text(folder, recipe, path)  # regenerate: python -m lantern_studio.training.model_card
    assert len(card.splitlines()) <= 200
    assert sha256_file(path) in card and f"train replay recipes/{path.name}" in card
    for name, digest in json.loads((folder / "model.json").read_text())["files"].items():
        assert f"`{name}`" in card and digest in card


def test_a_good_recipe_parses_into_its_stages_and_segments():
    r = parse_recipe(GOOD, "tiny.toml")
    assert [s.name for s in r.stages] == ["a", "b"]
    a, b = r.stages
    assert [(s.steps, s.until, s.end) for s in a.schedule] == [(6, 3, 3), (5, None, 5)]
    assert b.uses() == ["a"] and a.uses() == []


@pytest.mark.parametrize("change, says", [
    (lambda t: t.replace('run = "train ar"', 'run = "train everything"', 1), "is not one of"),
    (lambda t: t.replace('"{a}/gpt', '"{c}/gpt'), "not an earlier stage"),
    (lambda t: t.replace("until = 3", "until = 9"), "past its steps"),
    (lambda t: t.replace("{ steps = 5 }", "{ steps = 5, until = 2 }"), "end past the one before"),
    (lambda t: t.replace('args = ["--run", "{out}"]', 'args = ["--run", "{out}", "--steps", "4"]'), "belong to the schedule"),
    (lambda t: t.replace('name = "b"', 'name = "a"'), "named twice"),
    (lambda t: t.replace('schedule = [{ steps = 2 }]', 'schedule = [{ steps = 2 }]\nexpect = { "gpt.safetensors" = "md5:1" }'),
     "sha256:HEX or tensors:HEX"),
    (lambda t: t.replace('run = "train ar"\nargs = ["--init', 'run = "train ar"\npinned = { "gpt.safetensors" = "abc1234:x" }\nargs = ["--init'),
     "exactly one of run"),
    (lambda t: t.replace('schedule = [{ steps = 2 }]', 'schedule = [{ steps = 0 }]'), "positive whole number"),
    (lambda t: t + "[[stage]]\nname = \"../up\"\nrun = \"train ar\"\n", "name must be"),
    (lambda t: t.replace("[[stage]]", "[[stage", 1), "not TOML"),
    (lambda t: t.replace('model = "resources/models/tiny"', ''), "needs a model"),
])
def test_a_malformed_recipe_is_one_line_naming_what_is_wrong(change, says):
    with pytest.raises(TrainingError) as e:
        parse_recipe(change(GOOD), "tiny.toml")
    assert says in str(e.value) and "tiny.toml" in str(e.value) and "\n" not in str(e.value)


def test_a_pinned_stage_needs_each_files_hash():
    text = GOOD.replace('run = "train ar"\nargs = ["--run", "{out}"]\nschedule = [{ steps = 6, until = 3 }, { steps = 5 }]',
                        'pinned = { "gpt.safetensors" = "abc1234:snapshots/x.safetensors" }')
    with pytest.raises(TrainingError, match="needs its expected hash"):
        parse_recipe(text, "tiny.toml")
    ok = text.replace('pinned = { "gpt.safetensors" = "abc1234:snapshots/x.safetensors" }',
                      'pinned = { "gpt.safetensors" = "abc1234:snapshots/x.safetensors" }\n'
                      f'expect = {{ "gpt.safetensors" = "tensors:{"0" * 64}" }}')
    assert parse_recipe(ok, "tiny.toml").stages[0].pinned == {"gpt.safetensors": "abc1234:snapshots/x.safetensors"}


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.stem)
def test_every_stage_of_the_recipes_parses_with_its_commands_flags_today(path, tmp_path):
    """A flag renamed or dropped in a trainer breaks the recipe that uses it: every command line of every stage
    parses with its command's own parser, and its steps are the schedule's."""
    from lantern_studio.training.replay import command_lines, parse_stage_args

    recipe = read_recipe(path)
    folders = {s.name: tmp_path / s.name for s in recipe.stages}
    for stage in recipe.stages:
        if stage.pinned:
            continue
        lines = command_lines(stage, folders[stage.name], folders, ROOT)
        assert len(lines) == max(1, len(stage.schedule))
        for (argv, until), seg in zip(lines, stage.schedule or [None] * len(lines)):
            ns = parse_stage_args(stage, argv)
            if seg is not None:
                assert (ns.steps, until) == (seg.steps, seg.until), stage.name
