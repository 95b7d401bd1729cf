"""The benchmark harness (eval/bench/): runs end to end on a tiny model,
interleaves methods, sees a deliberately slowed method, picks a default.

No timed asserts: the one timing comparison below uses a slowdown many times
larger than the work it is added to (a sleep per decode step)."""

from __future__ import annotations

import csv
import json
import time

import numpy as np
import pytest
from PIL import Image

from lantern_studio.cli import main as cli_main
from lantern_studio.eval import bench
from lantern_studio.eval.bench import METHOD_FIELDS, PER_PROMPT_FIELDS, Method, method_grid, pick_default, select_methods
from lantern_studio.eval.plots import pareto_front
from lantern_studio.models import load_pipeline
from lantern_studio.models.tiny import build_tiny_model_dir
from support.compiler import needs_cxx

from lantern_studio.engine.precision import native_bf16
from lantern_studio.engine.settings import GenerationSettings

VANILLAS = ["vanilla-fp32"] + (["vanilla-bf16"] if native_bf16("cpu")[0] else [])  # what `bench` runs here
QUICK_NAMES = [*VANILLAS, "exact-eagle", "exact-jacobi", "lantern-eagle-k63-d0.1", "lantern-eagle-k63-d0.4",
               "lantern-jacobi-k63-d0.2"]  # V = 64: k 64 and 256 clip to 63


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    """One torch thread: tiny models decode several times faster on a busy machine
    (and `bench --threads` changes the process-wide setting: restore it)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return build_tiny_model_dir(tmp_path_factory.mktemp("models") / "tiny", grid=4)


@pytest.fixture(scope="module")
def quick_run(tiny_dir, tmp_path_factory):
    """One `bench --quick` through the CLI; shared by the checks below."""
    out = tmp_path_factory.mktemp("bench")
    mp = pytest.MonkeyPatch()
    mp.setenv("LANTERN_STUDIO_CACHE", str(out / "cache"))
    import contextlib
    import io

    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            rc = cli_main(["bench", "--model", str(tiny_dir), "--quick", "--quiet", "--threads", "1", "--json", str(out / "r.json"),
                           "--csv", str(out / "r.csv"), "--out", str(out / "pics")])
    finally:
        mp.undo()
    return rc, out, buf.getvalue()


def test_quick_end_to_end_has_every_method_and_field(quick_run):
    rc, out, stdout = quick_run
    assert rc == 0, stdout
    report = json.loads((out / "r.json").read_text())
    for key in ("schema", "machine", "model", "config", "prompts", "order", "methods", "quality", "default_pick", "files"):
        assert key in report, key
    for key in ("cpu", "torch", "threads", "date", "command", "device"):
        assert report["machine"][key] not in (None, ""), key
    assert [m["name"] for m in report["methods"]] == QUICK_NAMES
    assert len(report["prompts"]) == 2
    for m in report["methods"]:
        assert set(m) == set(METHOD_FIELDS), m["name"]
        assert m["images"] == 2 and len(m["per_prompt"]) == 2
        for row in m["per_prompt"]:
            assert set(row) == set(PER_PROMPT_FIELDS)
        for key in ("speedup_median", "speedup_q25", "speedup_q75", "speedup_min", "speedup_max", "seconds_median",
                    "mean_accepted_length", "target_forwards_per_image", "drafter_cost_share", "tokens_per_second"):
            assert m[key] is not None and m[key] >= 0, (m["name"], key)
        assert m["tokens_per_image"] == 16
        assert m["speedup_q25"] <= m["speedup_median"] <= m["speedup_q75"]
        # no recogniser in a tiny model: quality is null, not made up
        assert m["prompt_fidelity"] is None and m["fidelity_delta"] is None and m["frechet_distance"] is None
    by = {m["name"]: m for m in report["methods"]}
    ref = bench.reference_of(report["methods"])
    assert ref["name"] in VANILLAS and report["reference"] == ref["name"] and ref["reference"] is True
    assert sum(1 for m in report["methods"] if m["reference"]) == 1
    assert ref["speedup_median"] == 1.0 and ref["mean_accepted_length"] == 1.0
    assert ref["target_forwards_per_image"] == 16
    assert by["vanilla-fp32"]["precision"] == "fp32"
    # the speculative rows run in the machine's fastest precision and say so
    assert by["exact-jacobi"]["precision"] == ("bf16" if "vanilla-bf16" in VANILLAS else "fp32")
    for m in report["methods"]:  # per-round forward time and overhead are reported
        assert m["forward_ms_per_round"] > 0 and m["overhead_ms_per_round"] is not None
    assert [f["precision"] for f in report["step_floor"]] == [v.split("-")[1] for v in VANILLAS]
    # the verify's width-cost curve, per precision the bench times vanilla in, and its line in the output
    assert [c["precision"] for c in report["width_cost"]] == [v.split("-")[1] for v in VANILLAS]
    for c in report["width_cost"]:
        assert [p["width"] for p in c["curve"]][0] == 1 and all(p["ms"] > 0 for p in c["curve"])
    assert "verify cost by width" in stdout and report["window_picks"] == []  # --quick runs one window
    assert by["exact-eagle"]["drafter_forwards_per_image"] > 0
    assert by["exact-eagle"]["relaxed_share"] == 0 and by["exact-jacobi"]["relaxed_share"] == 0
    assert by["lantern-eagle-k63-d0.1"]["settings"]["k"] == 63
    assert report["default_pick"]["name"] in by
    assert "quality unchecked" in report["default_pick"]["criterion"]
    # stdout table, CSV, pictures
    for name in QUICK_NAMES:
        assert name in stdout
    assert "default pick:" in stdout
    with open(out / "r.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["name"] for r in rows] == QUICK_NAMES and set(rows[0]) == set(bench.CSV_FIELDS)
    for kind in ("plot", "grid"):
        with Image.open(report["files"][kind]) as im:
            assert im.format == "PNG" and im.size[0] > 200
    with Image.open(report["files"]["grid"]) as im:  # 6 rows of 128 px cells
        assert im.size[1] >= 6 * 128


def test_interleaving_alternates(quick_run):
    _, out, _ = quick_run
    report = json.loads((out / "r.json").read_text())
    names = [m["name"] for m in report["methods"]]
    warm = [o for o in report["order"] if o["phase"] == "warmup"]
    timed = [o for o in report["order"] if o["phase"] == "timed"]
    assert report["order"][: len(warm)] == warm  # warm-up first, one per method
    assert [o["method"] for o in warm] == names
    assert [(o["prompt_index"], o["method"]) for o in timed] == [(i, n) for i in range(2) for n in names]
    assert all(a["method"] != b["method"] for a, b in zip(timed, timed[1:]))
    # same seed for every method on a prompt; different prompts, different seeds
    seeds = {i: {o["seed"] for o in timed if o["prompt_index"] == i} for i in range(2)}
    assert all(len(s) == 1 for s in seeds.values()) and seeds[0] != seeds[1]


class _SlowRun:
    """A Decoding that sleeps after every step (forwarding everything else)."""

    def __init__(self, run, pause):
        self._run, self._pause = run, pause

    def __iter__(self):
        for ev in self._run:
            time.sleep(self._pause)
            yield ev

    def __getattr__(self, name):
        return getattr(self._run, name)


def test_slowed_method_shows_up_slower_and_order_is_real(tiny_dir, monkeypatch):
    pipe = load_pipeline(str(tiny_dir))
    pause = 0.02  # × 16 steps: ~0.3 s on top of a decode that takes a few ms to ~0.1 s
    calls = []
    real_generate = bench.generate_one

    def generate_one(pipe, method, prompt, seed, prompt_index=0):
        calls.append((method.name, prompt_index, seed))
        if method.name != "vanilla-slowed":
            return real_generate(pipe, method, prompt, seed, prompt_index)
        real_decoding = pipe.decoding
        pipe.decoding = lambda *a, **k: (lambda rc: (_SlowRun(rc[0], pause), rc[1]))(real_decoding(*a, **k))
        try:
            return real_generate(pipe, method, prompt, seed, prompt_index)
        finally:
            del pipe.decoding

    monkeypatch.setattr(bench.runner, "generate_one", generate_one)  # the name run_bench calls
    methods = [Method("vanilla", "vanilla"), Method("exact-jacobi", "exact", "jacobi"),
               Method("vanilla-slowed", "vanilla-slowed")]
    report = bench.run_bench(pipe, ["red heart", "cat face", "rocket"], methods, seed=5)
    by = {m["name"]: m for m in report["methods"]}
    slow = by["vanilla-slowed"]
    assert slow["speedup_median"] < 1.0
    assert all(r["seconds"] >= 16 * pause for r in slow["per_prompt"])  # the sleep really ran inside the timing
    # identical settings and seeds: the slowed run decodes the very same tokens
    assert [r["tokens"] for r in slow["per_prompt"]] == [r["tokens"] for r in by["vanilla"]["per_prompt"]]
    assert np.array_equal(report["_images"]["vanilla-slowed"][0], report["_images"]["vanilla"][0])
    # the recorded order is the order the generations actually ran
    assert [(o["method"], o["prompt_index"], o["seed"]) for o in report["order"]] == calls
    assert [c[0] for c in calls[3:]] == ["vanilla", "exact-jacobi", "vanilla-slowed"] * 3


@pytest.mark.parametrize("slowed", ["fp32", "bf16"])
def test_reference_is_the_faster_vanilla_precision(tiny_dir, monkeypatch, slowed):
    """Vanilla runs in fp32 and bf16; whichever is faster in the run is the reference
    (slowing one down deliberately moves the reference to the other)."""
    pipe = load_pipeline(str(tiny_dir), precision="fp32")
    real_generate = bench.generate_one

    def generate_one(p, method, prompt, seed, prompt_index=0):
        if method.name == f"vanilla-{slowed}":
            assert p.precision == slowed  # the method really ran in its precision
            real_decoding = p.decoding
            p.decoding = lambda *a, **k: (lambda rc: (_SlowRun(rc[0], 0.02), rc[1]))(real_decoding(*a, **k))
            try:
                return real_generate(p, method, prompt, seed, prompt_index)
            finally:
                del p.decoding
        return real_generate(p, method, prompt, seed, prompt_index)

    monkeypatch.setattr(bench.runner, "generate_one", generate_one)  # the name run_bench calls
    methods = [*bench.vanilla_methods(("fp32", "bf16")), Method("exact-jacobi", "exact", "jacobi")]
    report = bench.run_bench(pipe, ["red heart", "cat face"], methods, seed=1, warmup=False, precision="bf16")
    by = {m["name"]: m for m in report["methods"]}
    fast = "bf16" if slowed == "fp32" else "fp32"
    assert report["reference"] == f"vanilla-{fast}" and by[f"vanilla-{fast}"]["reference"] is True
    assert by[f"vanilla-{fast}"]["speedup_median"] == 1.0 and by[f"vanilla-{slowed}"]["speedup_median"] < 1.0
    assert by["exact-jacobi"]["precision"] == "bf16"
    assert pipe.precision == "fp32"  # the caller's pipeline is left as it was


def _row(name, family, speed, fid, mal=2.0):
    return {"name": name, "family": family, "speedup_median": speed, "prompt_fidelity": fid,
            "mean_accepted_length": mal, "fidelity_delta": None if fid is None else fid - 0.80}


def test_pick_default_from_hand_made_table():
    table = [
        _row("vanilla", "vanilla", 1.0, 0.80, 1.0),
        _row("exact-eagle", "exact", 1.3, 0.81, 2.1),
        _row("lantern-a", "lantern", 1.9, 0.78, 3.0),   # −2 points: allowed
        _row("lantern-c", "lantern", 1.9, 0.77, 3.1),   # −3 points: allowed, same speed, lower fidelity
        _row("lantern-b", "lantern", 2.6, 0.70, 4.0),   # −10 points: too much
        _row("lantern-x", "lantern", 3.0, None, 5.0),   # fidelity unknown: not eligible
    ]
    pick = pick_default(table)
    assert pick["name"] == "lantern-a"
    assert pick["speedup_median"] == 1.9 and pick["prompt_fidelity"] == 0.78 and pick["vanilla_fidelity"] == 0.80
    assert "within 3 points" in pick["criterion"]
    assert pick_default({"methods": table}, max_fidelity_drop=0.15)["name"] == "lantern-b"
    assert pick_default(table, max_fidelity_drop=0.0)["name"] == "exact-eagle"
    # the boundary counts as within: 0.77 is exactly 3 points below
    assert pick_default([r for r in table if r["name"] != "lantern-a"])["name"] == "lantern-c"
    # no fidelity anywhere: best speed-up, ties broken by mean accepted length
    blind = [_row("vanilla", "vanilla", 1.0, None, 1.0), _row("p", "lantern", 2.0, None, 3.0),
             _row("q", "lantern", 2.0, None, 3.5), _row("r", "exact", 1.5, None, 2.0)]
    pick = pick_default(blind)
    assert pick["name"] == "q" and "quality unchecked" in pick["criterion"]
    assert pick_default([]) is None


def test_the_pick_says_how_large_a_fidelity_difference_its_pictures_can_tell_from_noise():
    """Two methods' fidelities on n pictures each, near p, differ by noise alone within 1.96·√(2p(1−p)/n) (95 %):
    at 0.80 that is ±28 points on 16 pictures and ±5.5 on 400, so a 3-point rule needs hundreds of pictures."""
    from lantern_studio.eval.bench.report import format_table

    table = [_row("vanilla", "vanilla", 1.0, 0.80, 1.0), _row("lantern-a", "lantern", 1.9, 0.78, 3.0)]
    small, large = pick_default(table, images=16), pick_default(table, images=400)
    assert abs(small["fidelity_noise"] - 0.2772) < 1e-3 and abs(large["fidelity_noise"] - 0.0554) < 1e-3
    assert pick_default(table)["fidelity_noise"] is None  # the number of pictures unknown: no claim
    rows = [dict(r, precision=None, speedup_q25=None, speedup_q75=None, speedup_min=None, speedup_max=None,
                 target_forwards_per_image=None, acceptance_rate=None, relaxed_share=None, drafter_cost_share=None,
                 seconds_median=None, frechet_distance=None)
            for r in table]
    text = format_table({"methods": rows, "default_pick": small})
    assert "from 16 pictures a method: a difference within ±28 points is sampling noise" in text


def test_quality_fields_when_the_folder_ships_a_recogniser(tiny_dir, tmp_path):
    import shutil

    import torch

    from lantern_studio.models.recogniser import RecogniserConfig, RecogniserNet, save_recogniser

    folder = tmp_path / "tinyq"
    shutil.copytree(tiny_dir, folder)
    classes = ["face-smiling", "animal-mammal", "food-fruit"]
    torch.manual_seed(0)
    net = RecogniserNet(RecogniserConfig(classes=classes, stem=8, widths=[8, 16], feature_dim=8))
    save_recogniser(net.eval(), folder / "recogniser.safetensors")
    (folder / "heldout_prompts.json").write_text(json.dumps(
        [{"prompt": "grinning face", "subgroup": "face-smiling"}, {"prompt": "cat face", "subgroup": "animal-mammal"},
         {"prompt": "red apple", "subgroup": "food-fruit"}]))
    np.save(folder / "heldout_features.npy", np.random.default_rng(0).normal(size=(12, 8)).astype(np.float32))
    out = tmp_path / "out"
    rc = cli_main(["bench", "--model", str(folder), "--n", "3", "--methods", "exact-jacobi", "--no-warmup",
                   "--no-pictures", "--quiet", "--json", str(out / "r.json"), "--out", str(out)])
    assert rc == 0
    report = json.loads((out / "r.json").read_text())
    assert [m["name"] for m in report["methods"]] == [*VANILLAS, "exact-jacobi"]
    assert [p["prompt"] for p in report["prompts"]] == ["grinning face", "cat face", "red apple"]
    assert report["config"]["prompt_source"].endswith("heldout_prompts.json")
    assert report["quality"]["real_images"] == 12
    for m in report["methods"]:
        assert 0.0 <= m["prompt_fidelity"] <= 1.0
        assert m["frechet_distance"] is not None and m["frechet_distance"] >= 0
    assert bench.reference_of(report["methods"])["fidelity_delta"] == 0.0
    assert "within 3 points" in report["default_pick"]["criterion"]


def test_identity_judge_fields_and_seeds_per_prompt(tiny_dir, tmp_path):
    import shutil

    import torch

    from lantern_studio.models.recogniser import RecogniserConfig, RecogniserNet, save_recogniser

    folder = tmp_path / "tinyj"
    shutil.copytree(tiny_dir, folder)
    groups = {"1F600": "face-smiling", "1F603": "face-smiling", "1F431": "animal-mammal", "1F34E": "food-fruit"}
    torch.manual_seed(0)
    net = RecogniserNet(RecogniserConfig(classes=list(groups), stem=8, widths=[8, 16], feature_dim=8,
                                                 label="identity", groups=groups))
    save_recogniser(net.eval(), folder / "recogniser.safetensors")
    prompts = tmp_path / "common.json"
    prompts.write_text(json.dumps(
        [{"prompt": "a big grin", "identities": ["1F600", "1F603"], "subgroups": ["face-smiling"]},
         {"prompt": "a cat", "identities": ["1F431"], "subgroups": ["animal-mammal"]}]))
    out = tmp_path / "out"
    rc = cli_main(["bench", "--model", str(folder), "--prompts", str(prompts), "--n", "2", "--seeds-per-prompt", "2",
                   "--methods", "exact-jacobi", "--no-warmup", "--no-pictures", "--quiet",
                   "--json", str(out / "r.json"), "--out", str(out)])
    assert rc == 0
    report = json.loads((out / "r.json").read_text())
    assert [(p["prompt"], p["seed"]) for p in report["prompts"]] == [
        ("a big grin", 0), ("a big grin", 1), ("a cat", 2), ("a cat", 3)]
    assert report["prompts"][0]["identities"] == ["1F600", "1F603"]
    assert report["config"]["seeds_per_prompt"] == 2
    for m in report["methods"]:
        assert 0.0 <= m["identity_top1"] <= m["identity_top5"] <= 1.0
        assert 0.0 <= m["prompt_fidelity"] <= 1.0  # subgroup top-5 from the judge's identities
    # 4 identity classes ≤ 5: every image has its identity in the top 5, and its subgroup too
    assert all(m["identity_top5"] == 1.0 and m["prompt_fidelity"] == 1.0 for m in report["methods"])
    assert cli_main(["bench", "--model", str(folder), "--prompts", str(prompts), "--seeds-per-prompt", "0",
                     "--quiet"]) == 2


def test_method_grid_and_selection(tiny_dir, tmp_path, capsys):
    full = method_grid(("none", "jacobi", "eagle"), 16384)
    names = [m.name for m in full]
    assert len(names) == len(set(names)) == 1 + 2 + 12 + 2 + 4 + 5 + 4 + 3 + 2 + 5
    assert names[:3] == ["vanilla-fp32", "exact-eagle", "exact-jacobi"]
    both = [m.name for m in method_grid(("none", "jacobi"), 64, vanilla_precisions=("fp32", "bf16"))]
    assert both[:2] == ["vanilla-fp32", "vanilla-bf16"]
    assert "lantern-eagle-k256-d0.05" in names and "lantern++-eagle-k64-l4" in names
    assert names[-5:] == ["step-jacobi-k64-d0.2", "step-jacobi-k64-d0.4", "step-jacobi-k256-d0.2",
                          "step-jacobi-k256-d0.4", "step-jacobi-k256-d0.4-ad"]  # the step bound at equal (k, δ)
    assert names[-23:-5] == ["lantern-jacobi-k64-d0.2", "lantern-jacobi-k64-d0.4", "lantern-jacobi-k256-d0.2",
                           "lantern-jacobi-k256-d0.4", "exact-jacobi-L24", "lantern-jacobi-k64-d0.2-L16",
                           "lantern-jacobi-k64-d0.2-L24", "lantern-jacobi-k256-d0.4-L16", "lantern-jacobi-k256-d0.4-L24",
                           "exact-jacobi-L8", "exact-jacobi-L12", "lantern-jacobi-k64-d0.2-L8",
                           "lantern-jacobi-k64-d0.2-L12", "lantern-jacobi-k64-d0.4-g0.7-L12",
                           "lantern-jacobi-k64-d0.4-g0.5-L12", "lantern-jacobi-k256-d0.6-g0.5-L12",
                           "exact-sjd", "lantern-sjd-k64-d0.2"]
    tight = next(m for m in full if m.name == "lantern-jacobi-k64-d0.4-g0.5-L12").settings(GenerationSettings(), 0)
    assert tight.delta_decay == 0.5 and tight.delta == 0.4 and tight.draft_length == 12
    long = next(m for m in full if m.name == "lantern-jacobi-k256-d0.4-L24").settings(GenerationSettings(), 0)
    assert long.draft_length == 24 and long.k == 256 and long.coupling
    assert not next(m for m in full if m.name == "exact-sjd").settings(GenerationSettings(), 0).coupling
    assert all(m.drafter == "eagle" for m in full if m.family in ("lantern", "lantern++"))
    # no learned drafter: LANTERN runs on Jacobi drafts; the relaxed-Jacobi points are then duplicates
    no_eagle = method_grid(("none", "jacobi"), 16384)
    assert "exact-eagle" not in [m.name for m in no_eagle] and len(no_eagle) == 1 + 1 + 12 + 2 + 5 + 4 + 3 + 2 + 5
    # k clipped to V − 1, duplicates dropped
    small = method_grid(("none", "jacobi", "eagle"), 64)
    assert max(m.k for m in small) == 63 and len(small) == 1 + 2 + 8 + 2 + 2 + 5 + 4 + 3 + 2 + 3
    assert [m.name for m in method_grid(("none", "jacobi", "eagle"), 64, quick=True,
                                        vanilla_precisions=[v.split("-")[1] for v in VANILLAS])] == QUICK_NAMES
    assert [m.name for m in select_methods(full, ["lantern++"])] == ["vanilla-fp32", "lantern++-eagle-k64-l2",
                                                                      "lantern++-eagle-k64-l4"]
    assert [m.name for m in select_methods(full, ["exact-*,*k16-d0.4"])] == [
        "vanilla-fp32", "exact-eagle", "exact-jacobi", "lantern-eagle-k16-d0.4", "exact-jacobi-L24", "exact-jacobi-L8",
        "exact-jacobi-L12", "exact-sjd"]
    with pytest.raises(bench.BenchError, match="--methods"):
        select_methods(full, ["nope*"])
    assert cli_main(["bench", "--model", str(tiny_dir), "--methods", "nope"]) == 2
    assert cli_main(["bench", "--model", str(tiny_dir), "--n", "0"]) == 2
    assert cli_main(["bench", "--model", str(tiny_dir), "--prompts", str(tmp_path / "missing.txt")]) == 2
    assert "--methods" in capsys.readouterr().err


def test_pareto_front():
    xs = [0.80, 0.81, 0.78, 0.70, 0.60, 0.78]
    ys = [1.00, 1.30, 1.90, 2.60, 2.50, 1.50]
    assert pareto_front(xs, ys) == [3, 2, 1]
    assert pareto_front([0.5, None], [1.0, 2.0]) == [0]


def test_json_prompt_sets_carry_lists_of_subgroups(tmp_path):
    f = tmp_path / "common.json"
    f.write_text(json.dumps([{"prompt": "a happy dog", "subgroups": ["animal-mammal"]},
                             {"prompt": "red heart", "subgroup": "heart"}, "a plain prompt", {"prompt": ""}]))
    assert bench.read_prompt_set(f) == [("a happy dog", ["animal-mammal"]), ("red heart", "heart"),
                                        ("a plain prompt", None)]
    chosen, source = bench.choose_prompts(None, 2, f)
    assert chosen == [("a happy dog", ["animal-mammal"]), ("a plain prompt", None)] and source == str(f)
    f.write_text("{not json")
    with pytest.raises(bench.BenchError, match="not a readable JSON prompt set"):
        bench.read_prompt_set(f)


def test_train_captions_are_one_name_per_training_identity():
    from lantern_studio.eval.bench.prompts import TRAIN_CAPTIONS, training_names

    meta = [{"identity": "1F44D", "name": "thumbs up", "subgroup": "hand-fingers-closed", "split": "train",
             "skin_tone": None},
            {"identity": "1F44D", "name": "thumbs up: dark skin tone", "subgroup": "hand-fingers-closed",
             "split": "train", "skin_tone": "dark"},
            {"identity": "1F44D", "name": "thumbs up", "subgroup": "hand-fingers-closed", "split": "train",
             "skin_tone": None},
            {"identity": "1F436", "name": "dog face", "subgroup": "animal-mammal", "split": "train", "skin_tone": None},
            {"identity": "1F9A4", "name": "dodo", "subgroup": "animal-bird", "split": "heldout", "skin_tone": None}]
    assert training_names(meta) == [("thumbs up", "hand-fingers-closed", ["1F44D"]),
                                    ("dog face", "animal-mammal", ["1F436"])]
    chosen, source = bench.choose_prompts(None, 2, TRAIN_CAPTIONS, (None, meta, {}), identities=True)
    assert chosen == training_names(meta) and "validation" in source
    assert bench.choose_prompts(None, 1, TRAIN_CAPTIONS, (None, meta, {}))[0] == [("thumbs up", "hand-fingers-closed")]
    with pytest.raises(bench.BenchError, match="needs the dataset"):
        bench.choose_prompts(None, 2, TRAIN_CAPTIONS, None)


def test_the_window_is_picked_from_the_cost_curve_and_the_tokens_per_round():
    """A made-up machine where a verify costs 1 ms up to width 9 and then grows steeply: window 8 accepts
    2.5 tokens per round, 24 accepts 3.2, so 8 wins (2.5/1 against 3.2/3); on a flat curve 24 wins. The
    mutant that ignores the cost (picks the most tokens per round) is rejected by the first case."""
    from lantern_studio.eval.width_cost import cost_at, pick_window, window_picks

    steep = [{"width": 1, "ms": 1.0}, {"width": 9, "ms": 1.0}, {"width": 25, "ms": 3.0}]
    flat = [{"width": 1, "ms": 1.0}, {"width": 49, "ms": 1.0}]
    tpr = {8: 2.5, 24: 3.2}
    assert cost_at(steep, 17) == pytest.approx(2.0) and cost_at(steep, 100) == 3.0
    pick = pick_window(steep, tpr)
    assert pick["window"] == 8 and pick["predicted"][8] == pytest.approx(2.5)
    assert pick["predicted"][24] == pytest.approx(3.2 / 3.0)
    assert pick_window(flat, tpr)["window"] == 24
    assert max(tpr, key=tpr.get) != pick["window"]  # what a cost-blind pick would say
    rows = [{"settings": {"drafter": "jacobi", "coupling": True, "k": 64, "delta": 0.2, "bound": "lantern",
                          "adaptive_delta": False}, "draft_length": w, "precision": "bf16", "tokens_per_image": 256,
             "rounds_per_image": 256 / t, "overhead_ms_per_round": 0.0, "speedup_median": t} for w, t in tpr.items()]
    rows.append({"settings": {"drafter": "none"}, "draft_length": 8, "rounds_per_image": 256})  # vanilla: no group
    groups = window_picks(rows, [{"precision": "bf16", "curve": steep}, {"precision": "fp32", "curve": flat}])
    assert len(groups) == 1 and groups[0]["picks"]["bf16"]["window"] == 8
    assert groups[0]["picks"]["fp32"]["window"] == 24
    assert groups[0]["tokens_per_round"] == pytest.approx(tpr)
    # compiled rows are weighed on the compiled path's curve only (and eager rows on the eager curves):
    # here compiling flattened the steep curve, so the compiled group picks 24 while the eager one keeps 8
    twins = [dict(r, compiled=True) for r in rows[:2]]
    curves = [{"precision": "bf16", "curve": steep}, {"precision": "bf16", "compiled": True, "curve": flat}]
    groups = window_picks(rows + twins, curves)
    by_path = {g["compiled"]: g["picks"] for g in groups}
    assert set(by_path[False]) == {"bf16"} and by_path[False]["bf16"]["window"] == 8
    assert set(by_path[True]) == {"bf16 compiled"} and by_path[True]["bf16 compiled"]["window"] == 24


@needs_cxx
@pytest.mark.slow  # compiles four graphs (~40 s); tests/engine/test_compiled.py covers compiled steps in CI
def test_compile_adds_compiled_twins_that_say_they_ran_compiled(tiny_dir, tmp_path, monkeypatch, capsys):
    """bench --compile: each chosen method gains a NAME-compiled twin whose forwards all ran a compiled
    graph (compiled_share 1.0), the same decode as its eager twin, and the output says so per twin."""
    monkeypatch.setenv("LANTERN_STUDIO_CACHE", str(tmp_path / "cache"))
    rc = cli_main(["bench", "--model", str(tiny_dir), "--n", "1", "--quiet", "--threads", "1", "--no-pictures",
                   "--methods", "exact-jacobi", "--precision", "fp32", "--compile", "--json", str(tmp_path / "r.json"),
                   "--out", str(tmp_path / "out")])
    stdout = capsys.readouterr().out
    assert rc == 0, stdout
    rows = {r["name"]: r for r in json.loads((tmp_path / "r.json").read_text())["methods"]}
    assert {"vanilla-fp32-compiled", "exact-jacobi-compiled"} <= set(rows)
    for name, r in rows.items():
        assert set(r) == set(METHOD_FIELDS), name
        assert r["compiled"] == name.endswith("-compiled")
        if r["compiled"]:
            assert r["compiled_share"] == 1.0 and r["compile_seconds"] > 0 and r["compiled_note"] is None
            assert f"{name}: compiled steps used for 100% of forwards" in stdout
            eager = rows[name.removesuffix("-compiled")]
            assert r["tokens_per_image"] == eager["tokens_per_image"]
        else:
            assert r["compiled_share"] == 0.0 and r["compile_seconds"] is None
    assert "vanilla decode step (fp32, compiled)" in stdout


def _sample(prompt, seed, value):
    return bench.sample.Sample("m", 0, prompt, seed, 1.0, {}, np.full((8, 8, 3), value, np.uint8))


def test_seeds_differ_counts_prompts_whose_first_two_seeds_are_different_pictures():
    from lantern_studio.eval.bench.summary import seed_variety

    same = [_sample("a cat", 0, 100), _sample("a cat", 1, 100), _sample("a dog", 2, 30), _sample("a dog", 3, 30)]
    assert seed_variety(same) == {"seed_distance": 0.0, "seeds_differ": 0.0, "seed_pairs": 2}
    # a dog's seeds 40 of 255 apart (≥ 12: different), a cat's 5 apart (the same picture, give or take noise);
    # a third seed of a dog is not compared
    mixed = [_sample("a cat", 0, 100), _sample("a cat", 1, 105), _sample("a dog", 2, 30), _sample("a dog", 3, 70),
             _sample("a dog", 4, 30)]
    got = seed_variety(mixed)
    assert got["seeds_differ"] == 0.5 and got["seed_pairs"] == 2
    assert got["seed_distance"] == pytest.approx((5 + 40) / 2)
    # one seed per prompt: nothing to compare, so no figure rather than 0
    assert seed_variety([_sample("a cat", 0, 1), _sample("a dog", 1, 200)])["seeds_differ"] is None


def test_style_reaches_every_method_and_a_bad_style_is_one_error_line(tmp_path, capsys):
    from support.tiny import tiny_v3_folder

    folder = tiny_v3_folder(tmp_path / "m")
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("red square\nsun\n")
    out = tmp_path / "out"
    rc = cli_main(["bench", "--model", str(folder), "--n", "2", "--prompts", str(prompts), "--seeds-per-prompt", "2",
                   "--methods", "exact-jacobi", "--no-warmup", "--no-pictures", "--quiet", "--style", "any",
                   "--json", str(out / "r.json"), "--out", str(out)])
    assert rc == 0
    report = json.loads((out / "r.json").read_text())
    assert {m["settings"]["style"] for m in report["methods"]} == {"any"}
    assert all(m["seed_pairs"] == 2 and 0.0 <= m["seeds_differ"] <= 1.0 for m in report["methods"])
    capsys.readouterr()
    assert cli_main(["bench", "--model", str(folder), "--n", "1", "--prompts", str(prompts), "--style", "oil",
                     "--no-warmup", "--no-pictures", "--quiet", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "style" in err[0] and "'oil'" in err[0]
