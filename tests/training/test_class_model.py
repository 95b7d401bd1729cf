"""The factorised class model learns its classes (and a shuffled-label mutant does not), its
model folder round-trips through ship and load, and the CLI says what it drew."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest
import torch

from lantern_studio.engine.decode import generate_tokens
from lantern_studio.engine.settings import GenerationSettings
from lantern_studio.models import load_pipeline
from lantern_studio.models.classes import TONES, ClassVocabulary, class_rows, vocabulary_from_meta
from lantern_studio.training import ar
from lantern_studio.training.errors import TrainingError
from lantern_studio.training.prepared import prep_from_dict
from support.tiny import tiny_v3_folder

GRID, VOCAB = 4, 12
IDENTITIES, STYLES, RENDERINGS = 4, 2, 3


def _pattern(identity: int, style: int) -> np.ndarray:
    """A 4×4 token grid: the identity decides the shape (which cells are 'ink'), the style the ink's tokens."""
    rng = np.random.default_rng(100 + identity)
    ink = rng.random((GRID, GRID)) < 0.5
    background, colours = 0, (1 + 5 * style, 2 + 5 * style, 3 + 5 * style)
    grid = np.full((GRID, GRID), background)
    grid[ink] = rng.choice(colours, int(ink.sum()))
    return grid


def _prepared(shuffle_labels: bool) -> dict:
    rng = np.random.default_rng(0)
    codes, cond = [], []
    for i in range(IDENTITIES):
        for s in range(STYLES):
            for _ in range(RENDERINGS):
                g = _pattern(i, s).copy()
                flip = rng.integers(0, GRID, 2)  # each rendering a little different
                g[flip[0], flip[1]] = rng.integers(0, VOCAB)
                codes.append(g)
                cond.append([i, s, 0])
    cond = torch.tensor(cond)
    if shuffle_labels:  # the mutant: the same images under labels that no longer say which they are
        cond = cond[torch.randperm(len(cond), generator=torch.Generator().manual_seed(1))]
    n = len(codes)
    vocab = ClassVocabulary([{"identity": f"X{i}", "name": f"thing {i}", "styles": ["a", "b"]} for i in range(IDENTITIES)],
                            ["a", "b"], list(TONES))
    return {"kind": "class", "codes": torch.tensor(np.stack(codes))[None].to(torch.int16), "cond": cond,
            "train": torch.ones(n, dtype=torch.bool), "weights": torch.full((n,), 1.0 / n, dtype=torch.float64),
            "vocab_size": VOCAB, "grid": GRID, "vocabulary": vocab.to_json(), "identities": IDENTITIES,
            "styles": vocab.styles, "tones": vocab.tones}


def train_class(tmp_path, prep: dict, run: str = "run", extra=(), steps: int = 300, warmup: int = 20,
                batch: int = 16, layers: int = 2):
    """A tiny class run of ``train ar`` on ``prep`` (prepared rows, no tokenizer) in ``tmp_path / run``, with
    ``extra`` flags → (its weights, its metrics)."""
    from lantern_studio.engine.checkpoints import load_gpt

    p = argparse.ArgumentParser()
    ar.add_arguments(p)
    args = p.parse_args(["--vq", "unused", "--run", str(tmp_path / run), "--condition", "class", "--steps", str(steps),
                         "--batch", str(batch), "--dim", "32", "--layers", str(layers), "--heads", "2", "--lr", "3e-3",
                         "--warmup", str(warmup), "--dropout", "0", "--threads", "1", "--eval-every", "1000",
                         "--styles", "all", "--log-every", "100", *extra])
    args.prepared = prep
    metrics = ar.train(args)
    return load_gpt(tmp_path / run / "gpt.safetensors"), metrics


def _train(tmp_path, prep: dict, steps: int = 300):
    return train_class(tmp_path, prep, steps=steps)[0]


def classes_reproduced(gpt) -> int:
    """How many of the 8 (identity, style) classes, drawn at a low temperature, come out nearer
    (Hamming distance over the token grid) to their own pattern than to any other class's."""
    patterns = {(i, s): _pattern(i, s).reshape(-1) for i in range(IDENTITIES) for s in range(STYLES)}
    hits = 0
    for (i, s), want in patterns.items():
        tok = generate_tokens(gpt, torch.tensor([[i, s, 0]]), GenerationSettings(seed=i * 2 + s, temperature=0.3,
                                                                                    cfg_scale=1.0))[0].numpy()
        dist = {k: int((tok != v).sum()) for k, v in patterns.items()}
        hits += min(dist, key=dist.get) == (i, s) and dist[(i, s)] < min(d for k, d in dist.items() if k != (i, s))
    return hits


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    return _train(tmp_path_factory.mktemp("classes"), _prepared(shuffle_labels=False))


def test_a_few_hundred_steps_teach_every_identity_and_style(trained):
    assert classes_reproduced(trained) >= 7  # of 8; chance is 1 in 8 per class


def test_the_same_check_rejects_a_model_trained_on_shuffled_labels(tmp_path):
    mutant = _train(tmp_path, _prepared(shuffle_labels=True))
    assert classes_reproduced(mutant) < 7


def test_the_same_command_trains_the_same_weights_whatever_ran_before(tmp_path, trained):
    """--seed decides a run's first weights and its dropout draws, not torch's global generator as other code
    left it (the mutant: before this, the statistical test above failed about one run in eight)."""
    torch.rand(17)  # something else used the global generator first
    again = _train(tmp_path, _prepared(shuffle_labels=False))
    for (name, a), b in zip(trained.state_dict().items(), again.state_dict().values()):
        assert torch.equal(a, b), name


def test_vocabulary_from_dataset_rows_under_a_repertoire_rule():
    meta = [
        {"identity": "A", "name": "dog face", "style": "google", "subgroup": "animal-mammal", "skin_tone": None,
         "emoji_version": 0.6},
        {"identity": "A", "name": "dog face", "style": "twitter", "subgroup": "animal-mammal", "skin_tone": None,
         "emoji_version": 0.6},
        {"identity": "B", "name": "thumbs up", "style": "google", "subgroup": "hand-fingers-closed",
         "skin_tone": "dark skin tone", "emoji_version": 0.6},
        {"identity": "C", "name": "firefighter", "style": "google", "subgroup": "person-role", "skin_tone": None,
         "emoji_version": 4.0},
        {"identity": "D", "name": "piñata", "style": "twitter", "subgroup": "game", "skin_tone": None,
         "emoji_version": 12.0},
    ]
    v = vocabulary_from_meta(meta, "everyday")
    assert [r["name"] for r in v.identities] == ["dog face", "thumbs up", "piñata"]
    assert [r["name"] for r in v.outside] == ["firefighter"]
    assert v.styles == ["google", "twitter"] and v.identities[1]["tones"] is True
    assert class_rows(meta, v) == [[0, 0, 0], [0, 1, 0], [1, 0, 5], None, [2, 1, 0]]
    core = vocabulary_from_meta(meta, "core")
    assert [r["name"] for r in core.identities] == ["dog face", "thumbs up"]
    grown = core.grown([r for r in v.identities if r["name"] == "piñata"])
    assert [r["name"] for r in grown.identities] == ["dog face", "thumbs up", "piñata"]
    assert "piñata" not in [r["name"] for r in grown.outside]
    # a new art set: its style is appended after the old ones (no old index moves), and an identity already in
    # the vocabulary lists it when the new rows give it that style
    google_only = vocabulary_from_meta([m for m in meta if m["style"] == "google"], "everyday")
    assert google_only.styles == ["google"] and google_only.identities[0]["styles"] == ["google"]
    wider = google_only.grown(v.identities, styles=v.styles)
    assert wider.styles == ["google", "twitter"]
    assert [r["name"] for r in wider.identities] == ["dog face", "thumbs up", "piñata"]
    assert wider.identities[0]["styles"] == ["google", "twitter"] and wider.identities[1]["styles"] == ["google"]
    assert class_rows(meta, wider) == [[0, 0, 0], [0, 1, 0], [1, 0, 5], None, [2, 1, 0]]
    assert google_only.grown(v.identities).styles == ["google"]  # no styles given: none appended
    assert google_only.grown(v.identities).identities[0]["styles"] == ["google"]
    with pytest.raises(ValueError, match="unknown rule 'famous'"):
        vocabulary_from_meta(meta, "famous")


def test_a_v3_folder_round_trips_and_generate_says_what_it_drew(trained, tmp_path, capsys):
    from lantern_studio.cli import main as cli_main

    folder = tiny_v3_folder(tmp_path / "v3", gpt=trained, names=["red square", "green circle", "blue star", "sun"])
    pipe = load_pipeline(str(folder), verify=True)
    a = pipe.generate("a blue star", pipe.defaults.with_(seed=3))
    b = pipe.generate("a blue star", pipe.defaults.with_(seed=3))
    assert np.array_equal(a.image, b.image) and a.note.startswith("blue star · b — matched from 'a blue star'")
    # the CLI prints it and the PNG records it
    out = tmp_path / "star.png"
    assert cli_main(["generate", "blue star", "--model", str(folder), "--style", "a", "--out", str(out), "--quiet"]) == 0
    from PIL import Image

    record = json.loads(Image.open(out).text["lantern-studio"])
    assert record["understood_as"].startswith("blue star · a — matched from 'blue star'")
    assert record["settings"]["style"] == "a"
    assert cli_main(["generate", "blue star", "--model", str(folder), "--style", "crayon", "--out",
                     str(tmp_path / "x.png")]) == 2
    assert "style: unknown style 'crayon'" in capsys.readouterr().err


def test_growing_the_repertoire_through_the_trainer_keeps_old_classes_token_for_token(tmp_path):
    """Train a model on the 'core' identities, then grow it to 'everyday' with --grow-from: the old
    classes keep their rows (and their pictures, same seed), the new identities get rows of their own."""
    from lantern_studio.engine.checkpoints import load_gpt
    from support.dataset import class_dataset, tiny_vq_file

    data = tmp_path / "data"
    class_dataset(data, names=("dog face", "red heart", "piñata", "mirror ball"), styles=("google", "twitter"),
                  versions=(0.6, 0.6, 12.0, 14.0), subgroup="game")
    tiny_vq_file(tmp_path / "vq.safetensors", codebook_size=16)

    def train(run, *extra):
        p = argparse.ArgumentParser()
        ar.add_arguments(p)
        ar.train(p.parse_args(["--vq", str(tmp_path / "vq.safetensors"), "--data", str(data), "--run", str(run),
                               "--condition", "class", "--batch", "4", "--dim", "32", "--layers", "1", "--heads", "2",
                               "--threads", "1", "--eval-every", "1000", "--styles", "all", "--shifts", "three",
                               "--warmup", "1", *extra]))
        return load_gpt(run / "gpt.safetensors")

    core = train(tmp_path / "core", "--repertoire", "core", "--steps", "3")
    assert core.config.num_classes == 2
    grown = train(tmp_path / "grown", "--repertoire", "everyday", "--steps", "0", "--grow-from",
                  str(tmp_path / "core" / "gpt.safetensors"))
    assert grown.config.num_classes == 4
    rows = json.loads((tmp_path / "grown" / "identities.json").read_text())["classes"]
    assert [r["name"] for r in rows] == ["dog face", "red heart", "piñata", "mirror ball"]
    s = GenerationSettings(seed=2, temperature=1.0, cfg_scale=2.0)
    for i in range(2):
        for style in range(2):
            c = torch.tensor([[i, style, 0]])
            assert torch.equal(generate_tokens(core, c, s)[0], generate_tokens(grown, c, s)[0])


def test_a_training_pack_trains_without_the_dataset_and_the_gpu_script_runs_on_cpu(tmp_path):
    """`train ar --pack-out` writes a class run's prepared data as one file; `--pack` trains from it alone (no
    dataset, no tokenizer), and the GPU script's train step runs end to end with DEVICE=cpu: what a GPU machine
    runs, checked here. A pack whose classes do not extend the grown model's in order is refused by name."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from lantern_studio.engine.checkpoints import load_gpt

    prep = _prepared(shuffle_labels=False)
    p = argparse.ArgumentParser()
    ar.add_arguments(p)
    args = p.parse_args(["--run", str(tmp_path / "prep"), "--condition", "class", "--pack-out",
                         str(tmp_path / "pack.pt")])
    args.prepared = prep
    assert ar.train(args) == {"pack": str(tmp_path / "pack.pt")}
    assert not (tmp_path / "prep" / "gpt.safetensors").exists()  # packing trains nothing
    pack = ar.load_pack(tmp_path / "pack.pt")
    assert torch.equal(pack.codes, prep["codes"]) and pack.vocabulary == prep["vocabulary"]
    # the script's layout: the pack and the model it grows from, under gpu-pack/ of a copy of the repository
    repo = Path(__file__).resolve().parents[2]
    work = tmp_path / "repo"
    (work / "packaging" / "gpu").mkdir(parents=True)
    script = work / "packaging" / "gpu" / "train_v3_gpu.sh"
    script.write_bytes((repo / "packaging" / "gpu" / "train_v3_gpu.sh").read_bytes())
    (work / "app").symlink_to(repo / "app")
    (work / "gpu-pack").mkdir()
    (work / "gpu-pack" / "pack.pt").write_bytes((tmp_path / "pack.pt").read_bytes())
    env = dict(os.environ, DEVICE="cpu", STEPS="6", BATCH="8", LAYERS="1", DIM="32", HEADS="2", MINUTES="5",
               GROW_FROM="none", THREADS="1", EVAL_EVERY="3", LOG_EVERY="2", PATH=f"{Path(sys.executable).parent}:"
               + os.environ.get("PATH", ""))
    env.pop("PYTHONPATH", None)
    done = subprocess.run(["bash", str(script), "train", str(tmp_path / "out")], cwd=work, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    gpt = load_gpt(tmp_path / "out" / "gpt.safetensors")
    assert gpt.config.num_classes == IDENTITIES and gpt.config.dim == 32
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["step"] == 6 and (tmp_path / "out" / "identities.json").read_text() == prep["vocabulary"]
    # a run's own recipe: flags after OUT_DIR reach train ar; INIT_FROM weights start it
    done = subprocess.run(["bash", str(script), "train", str(tmp_path / "more"), "--ema", "0.5"], cwd=work,
                          env=dict(env, INIT_FROM=str(tmp_path / "out" / "gpt.safetensors")),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    more = json.loads((tmp_path / "more" / "metrics.json").read_text())
    assert more["ema"] == 0.5 and more["model_args"]["dim"] == 32 and more["model_args"]["n_layer"] == 1
    assert "initialised from" in (tmp_path / "more" / "log.txt").read_text()
    # growing from a model whose classes the pack does not start with: refused, naming identities.json
    other = tmp_path / "other"
    other.mkdir()
    (other / "gpt.safetensors").write_bytes((tmp_path / "out" / "gpt.safetensors").read_bytes())
    (other / "identities.json").write_text(json.dumps({"classes": [{"identity": "Z9", "name": "zebra"}], "outside": []}))
    args = p.parse_args(["--run", str(tmp_path / "grown"), "--condition", "class", "--pack", str(tmp_path / "pack.pt"),
                         "--grow-from", str(other / "gpt.safetensors"), "--steps", "1", "--batch", "4", "--dim", "32",
                         "--layers", "1", "--heads", "2", "--threads", "1"])
    with pytest.raises(TrainingError, match="identities.json"):
        ar.train(args)


def test_evaluate_averages_over_every_chunk_of_rows():
    """The NLL over more rows than one evaluation batch is the row-weighted mean of its chunks (a local that
    shadowed the batch size once broke every evaluation past the first chunk)."""
    from lantern_studio.engine.model import Transformer

    prep = prep_from_dict(_prepared(shuffle_labels=False))
    margs = ar.class_model_args(VOCAB, GRID, IDENTITIES, STYLES, len(TONES), 32, 1, 2, 0.0)
    torch.manual_seed(0)
    model = Transformer(margs)
    idx = torch.arange(len(prep.cond))
    whole = ar.evaluate(model, prep, idx, batch=10)
    parts = [(ar.evaluate(model, prep, idx[s : s + 10], batch=10), len(idx[s : s + 10])) for s in range(0, len(idx), 10)]
    assert len(parts) == 3 and whole == pytest.approx(sum(v * n for v, n in parts) / len(idx), rel=1e-5)


def test_a_class_run_measures_its_averaged_weights_on_the_rows_it_names(tmp_path, capsys):
    """A class run holds no identity out: its NLL (and the EMA's) is taken on a fixed sample of
    training rows, and the log says so rather than 'held-out'. Before, the EMA's figure was the
    mean over an empty set of rows: 0.0."""
    from support.dataset import class_dataset, tiny_vq_file

    data = tmp_path / "data"
    class_dataset(data, names=("dog face", "red heart"), styles=("google",), versions=(0.6, 0.6), subgroup="game")
    tiny_vq_file(tmp_path / "vq.safetensors", codebook_size=16)
    p = argparse.ArgumentParser()
    ar.add_arguments(p)
    m = ar.train(p.parse_args(["--vq", str(tmp_path / "vq.safetensors"), "--data", str(data), "--run",
                               str(tmp_path / "run"), "--condition", "class", "--batch", "4", "--dim", "32",
                               "--layers", "1", "--heads", "2", "--threads", "1", "--eval-every", "2",
                               "--styles", "all", "--shifts", "three", "--warmup", "1", "--steps", "2", "--ema", "0.5"]))
    assert m["heldout_nll_ema"] > 0.5  # a 16-code model after 2 steps is far from certain: ~ln 16
    said = "".join(capsys.readouterr())
    assert "NLL on sampled training rows" in said and "held-out NLL" not in said
