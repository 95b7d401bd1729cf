"""`lantern-studio batch` (commands/batch*.py, eval/sweep.py): many images from a
prompt list, resumable and exact, a sweep's report, and the same on a local Ray
cluster (the tests marked slow; they skip where Ray is not installed).

Everything runs on a tiny random model (16 tokens an image), one torch thread."""

from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path

import pytest

from lantern_studio.cli import build_parser, main as cli_main
from lantern_studio.commands import batch, batch_ray, batch_run
from lantern_studio.commands.batch_plan import MANIFEST, Manifest, item_key, parse_set, parse_sweeps, read_prompts
from lantern_studio.export import read_png_record
from lantern_studio.models.tiny import build_tiny_model_dir

PROMPTS = ["red heart", "grinning face", "cat face", "rocket"]
SEEDS = 3  # × 4 prompts = 12 images


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return build_tiny_model_dir(tmp_path_factory.mktemp("models") / "tiny", grid=4)


@pytest.fixture
def prompts_file(tmp_path):
    f = tmp_path / "prompts.txt"
    f.write_text("# a comment\n" + "\n".join(PROMPTS) + "\n\n", encoding="utf-8")
    return f


def _argv(prompts, out, model, *extra):
    return ["batch", str(prompts), "--out", str(out), "--model", str(model), "--quiet", *extra]


def _run(argv, hook=None):
    args = build_parser().parse_args(argv)
    return batch.run_batch(args, hook=hook)


def _lines(out: Path) -> list[dict]:
    return [json.loads(ln) for ln in (out / MANIFEST).read_text(encoding="utf-8").splitlines() if ln.strip()]


def _pngs(out: Path) -> dict:
    """{file name: bytes} of the finished images (no hidden temporary files)."""
    return {p.name: p.read_bytes() for p in sorted((out / "images").glob("*.png")) if not p.name.startswith(".")}


def _check_manifest(out: Path, n: int) -> list[dict]:
    lines = _lines(out)
    assert len(lines) == n and len({ln["key"] for ln in lines}) == n
    for ln in lines:
        data = (out / ln["file"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == ln["sha256"] and len(data) == ln["bytes"]
    assert len(_pngs(out)) == n
    return lines


@pytest.fixture(scope="module")
def full_run(tiny_dir, tmp_path_factory):
    """12 images in-process, uninterrupted: what every other run must reproduce."""
    root = tmp_path_factory.mktemp("full")
    prompts = root / "prompts.txt"
    prompts.write_text("\n".join(PROMPTS) + "\n", encoding="utf-8")
    out = root / "out"
    rc = _run(_argv(prompts, out, tiny_dir, "--seeds", str(SEEDS)))
    return rc, out, prompts


# --------------------------------------------------------------------------- in-process


def test_a_batch_writes_every_image_with_its_record_and_hash(full_run, tiny_dir):
    rc, out, _ = full_run
    assert rc == 0
    lines = _check_manifest(out, len(PROMPTS) * SEEDS)
    assert sorted((ln["prompt"], ln["seed"]) for ln in lines) == sorted((p, s) for p in PROMPTS for s in range(SEEDS))
    for ln in lines:
        rec = read_png_record(out / ln["file"])  # parameters embedded, as the studio's PNGs
        assert rec["prompt"] == ln["prompt"] and rec["settings"] == ln["settings"]
        assert rec["settings"]["seed"] == ln["seed"] and rec["batch"]["key"] == ln["key"]
        assert rec["stats"]["tokens"] == 16 and "wall_seconds" not in rec["stats"]  # counts, not timings
        assert ln["stats"]["tokens"] == 16 and ln["seconds"] > 0 and ln["worker"] == "local"
        # the key is the model, the precision, the prompt and every setting
        assert ln["key"] == item_key(ln["model_id"], ln["precision"], ln["prompt"], ln["settings"])
    report = json.loads((out / "report.json").read_text())
    assert [r["name"] for r in report["methods"]] == ["batch"] and report["methods"][0]["images"] == 12


def test_a_second_run_does_no_work(full_run, tiny_dir, monkeypatch, capsys):
    rc, out, prompts = full_run
    assert rc == 0
    before = (out / MANIFEST).read_bytes(), _pngs(out)

    def refuse(*a, **k):
        raise AssertionError("a finished batch loaded the model again")

    monkeypatch.setattr(batch_run, "load_pipeline", refuse)
    assert cli_main(_argv(prompts, out, tiny_dir, "--seeds", str(SEEDS))) == 0
    assert "nothing to render: all 12 images" in capsys.readouterr().out
    assert ((out / MANIFEST).read_bytes(), _pngs(out)) == before
    report = json.loads((out / "report.json").read_text())  # recomputed from the manifest, runs kept
    assert [r["rendered"] for r in report["runs"]] == [12, 0] and report["methods"][0]["images"] == 12


class Stop(Exception):
    pass


def test_an_interrupted_run_finishes_the_rest_and_matches(full_run, tiny_dir, prompts_file, tmp_path):
    _, full_out, _ = full_run
    out = tmp_path / "out"
    seen = []

    def stop_after_five(executor, line):
        seen.append(line["key"])
        if len(seen) == 5:
            raise Stop

    with pytest.raises(Stop):
        _run(_argv(prompts_file, out, tiny_dir, "--seeds", str(SEEDS)), hook=stop_after_five)
    assert len(_lines(out)) == 5
    # what a kill leaves: a half-written PNG's temporary file, a torn last manifest line,
    # and (another way to lose one) a finished image deleted by hand
    (out / "images" / ".red-heart-seed9.png.abc123.tmp.png").write_bytes(b"\x89PNG half")
    lost = _lines(out)[1]
    (out / lost["file"]).unlink()
    with open(out / MANIFEST, "ab") as fh:
        fh.write(b'{"key": "0123", "file": "images/x.png", "sha2')

    rendered = []
    assert _run(_argv(prompts_file, out, tiny_dir, "--seeds", str(SEEDS)),
                hook=lambda ex, line: rendered.append(line["key"])) == 0
    assert len(rendered) == 12 - 5 + 1 and lost["key"] in rendered
    assert not set(rendered) & (set(seen) - {lost["key"]})  # the finished ones were skipped
    _check_manifest(out, 12)  # compacted: exactly one line per image, torn line gone
    assert not [p for p in (out / "images").iterdir() if p.name.startswith(".")]
    assert _pngs(out) == _pngs(full_out)  # byte for byte the uninterrupted run's images


def test_a_sweep_reports_every_setting_against_vanilla(tiny_dir, tmp_path, capsys):
    prompts = tmp_path / "p.txt"
    prompts.write_text("red heart\ncat face\n", encoding="utf-8")
    out = tmp_path / "sweep"
    rc = cli_main(_argv(prompts, out, tiny_dir, "--seeds", "2", "--set", "drafter=jacobi",
                        "--sweep", "k=4,16", "--sweep", "delta=0,0.2"))
    assert rc == 0
    report = json.loads((out / "report.json").read_text())
    names = ["vanilla", "k=4 delta=0", "k=4 delta=0.2", "k=16 delta=0", "k=16 delta=0.2"]
    assert [r["name"] for r in report["methods"]] == names and report["reference"] == "vanilla"
    by = {r["name"]: r for r in report["methods"]}
    assert [r["name"] for r in report["methods"] if r["reference"]] == ["vanilla"]
    v = by["vanilla"]
    assert v["settings"]["drafter"] == "none" and v["family"] == "vanilla"
    assert v["speedup_median"] == 1.0 and v["mean_accepted_length"] == 1.0 and v["target_forwards_per_image"] == 16
    for name in names:
        r = by[name]
        assert r["images"] == r["planned"] == 4 and r["pairs"] == 4 and r["tokens_per_image"] == 16
        assert r["speedup_median"] > 0 and r["speedup_q25"] <= r["speedup_median"] <= r["speedup_q75"]
        assert r["prompt_fidelity"] is None and r["frechet_distance"] is None  # no recogniser in a tiny model
    for k in (4, 16):
        for d in (0.0, 0.2):
            r = by[f"k={k} delta={d:g}"]
            assert (r["settings"]["k"], r["settings"]["delta"], r["drafter"]) == (k, d, "jacobi")
            assert r["mean_accepted_length"] > 1.0
    assert by["k=4 delta=0"]["family"] == "exact" and by["k=16 delta=0.2"]["family"] == "lantern"
    assert by["k=16 delta=0"]["relaxed_share"] == 0 and by["k=16 delta=0.2"]["relaxed_share"] > 0
    _check_manifest(out, 5 * 4)  # every setting on the same 2 prompts × 2 seeds
    pairs = {name: sorted((p["prompt"], p["seed"]) for p in by[name]["per_prompt"]) for name in names}
    assert len({tuple(p) for p in pairs.values()}) == 1
    assert (out / "speedup-vs-fidelity.png").stat().st_size > 1000
    stdout = capsys.readouterr().out
    assert all(name in stdout for name in names) and "reference: vanilla" in stdout


def test_jsonl_lines_bring_their_own_seed_and_settings(tiny_dir, tmp_path):
    prompts = tmp_path / "p.jsonl"
    prompts.write_text(json.dumps({"prompt": "red heart", "seed": 7, "settings": {"drafter": "none"}}) + "\n"
                       + json.dumps({"prompt": "rocket", "settings": {"draft-length": 4, "cfg": 1.5}}) + "\n",
                       encoding="utf-8")
    out = tmp_path / "out"
    assert _run(_argv(prompts, out, tiny_dir, "--seeds", "2", "--set", "k=3")) == 0
    lines = sorted(_lines(out), key=lambda ln: (ln["prompt"], ln["seed"]))
    assert [(ln["prompt"], ln["seed"]) for ln in lines] == [("red heart", 7), ("rocket", 0), ("rocket", 1)]
    assert lines[0]["settings"]["drafter"] == "none" and lines[0]["settings"]["k"] == 3
    assert lines[1]["settings"]["draft_length"] == 4 and lines[1]["settings"]["cfg_scale"] == 1.5


def test_without_ray_the_flag_says_what_to_install_and_in_process_still_works(tiny_dir, prompts_file, tmp_path,
                                                                             monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails as if it were not installed
    rc = cli_main(_argv(prompts_file, tmp_path / "ray", tiny_dir, "--ray", "local", "--workers", "2"))
    err = capsys.readouterr().err.strip()
    assert rc != 0 and len(err.splitlines()) == 1
    assert "pip install 'lantern-studio[cluster]'" in err and err.startswith("error:")
    assert not (tmp_path / "ray" / MANIFEST).exists()
    assert cli_main(_argv(prompts_file, tmp_path / "local", tiny_dir)) == 0
    assert len(_lines(tmp_path / "local")) == len(PROMPTS)


def test_an_unreachable_address_fails_fast_in_one_line(tiny_dir, prompts_file, tmp_path, capsys):
    pytest.importorskip("ray")
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.perf_counter()
    rc = cli_main(_argv(prompts_file, tmp_path / "o", tiny_dir, "--ray", f"127.0.0.1:{port}"))
    err = capsys.readouterr().err.strip()
    assert rc != 0 and len(err.splitlines()) == 1 and f"127.0.0.1:{port}" in err and "ray start --head" in err
    assert time.perf_counter() - t0 < 30


@pytest.mark.parametrize("lines, extra, says", [
    ('{"prompt": "red heart"}\n{"prompt": "cat", \n', [], "p.jsonl line 2: not valid JSON"),
    ('{"prompt": "red heart"}\n{"seed": 3}\n', [], 'line 2: "prompt" must be a non-empty string'),
    ('{"prompt": "red heart", "seed": "x"}\n', [], 'line 1: "seed" must be a 64-bit integer'),
    ('{"prompt": "red heart", "settings": {"k": "many"}}\n', [], "line 1: settings: k must be an integer"),
    ('{"prompt": "red heart", "settings": {"speed": 3}}\n', [], "unknown setting 'speed'"),
    ('{"prompt": "red heart", "colour": 3}\n', [], "line 1: unknown key 'colour'"),
    ('{"prompt": "x"}\n', ["--set", "k=abc"], "--set 'k=abc': k must be an integer, got 'abc'"),
    ('{"prompt": "x"}\n', ["--set", "delta"], "--set 'delta': expected NAME=VALUE"),
    ('{"prompt": "x"}\n', ["--set", "nosuch=1"], "unknown setting 'nosuch'"),
    ('{"prompt": "x"}\n', ["--set", "delta=2"], "delta: must be in [0, 1], got 2.0"),
    ('{"prompt": "x"}\n', ["--set", "seed=3"], "'seed' is not a setting here"),
    ('{"prompt": "x"}\n', ["--set", "greedy=maybe"], "greedy must be true or false"),
    ('{"prompt": "x"}\n', ["--sweep", "k="], "--sweep 'k=': no values"),
    ('{"prompt": "x"}\n', ["--sweep", "k=1,x"], "--sweep 'k=1,x': k must be an integer, got 'x'"),
    ('{"prompt": "x"}\n', ["--sweep", "k=1", "--sweep", "k=2"], "k is swept twice"),
    ("# only a comment\n\n", [], "no prompts"),
    # hostile input: bounded before anything is built, one short line naming the flag or the line
    ('{"prompt": "x", "seed": ' + "9" * 5000 + "}\n", [], "line 1: not valid JSON (a number of 5000 characters)"),
    ('{"prompt": "x", "settings": ' + "[" * 50000 + "]" * 50000 + "}\n", [], "line 1: nests deeper"),
    ('{"prompt": "x"}\n', ["--seeds", "1000000000"], "--seeds: must be in [1, 100000], got 1000000000"),
    ('{"prompt": "x"}\n', ["--sweep", "k=" + ",".join(map(str, range(40))), "--sweep",
                           "delta=" + ",".join(f"{i / 100}" for i in range(40)), "--sweep",
                           "temperature=" + ",".join(f"{1 + i / 10}" for i in range(40))],
     "--sweep: 64000 combinations of settings (at most 10000)"),
    ('{"prompt": "x"}\n', ["--set", "k=" + "9" * 5000], "k must be an integer, got '99999999999"),
    ('{"prompt": "x"}\n', ["--first-seed", "9223372036854775807", "--seeds", "2"],
     "--first-seed: 9223372036854775807 + 2 seeds runs past the largest seed"),
])
def test_bad_input_gets_one_line_naming_it(tiny_dir, tmp_path, capsys, lines, extra, says):
    prompts = tmp_path / ("p.txt" if lines.startswith("#") else "p.jsonl")
    prompts.write_text(lines, encoding="utf-8")
    rc = cli_main(_argv(prompts, tmp_path / "o", tiny_dir, *extra))
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and says in err, err
    assert len(err) < 400, err  # readable: a 5000-digit value is not echoed whole
    assert not (tmp_path / "o").exists()


def test_a_prompts_file_over_the_limits_is_refused_before_it_is_read(tiny_dir, tmp_path, capsys, monkeypatch):
    from lantern_studio.commands import batch_plan

    prompts = tmp_path / "p.txt"
    prompts.write_text("red heart\n" * 20, encoding="utf-8")
    monkeypatch.setattr(batch_plan, "MAX_PROMPTS_BYTES", 100)  # the real limit is 16 MiB: the same check
    assert cli_main(_argv(prompts, tmp_path / "o", tiny_dir)) == 2
    assert "200 bytes (at most 0 MiB); split the file" in capsys.readouterr().err
    monkeypatch.setattr(batch_plan, "MAX_PROMPTS_BYTES", 2**20)
    monkeypatch.setattr(batch_plan, "MAX_PROMPT_LINES", 10)
    assert cli_main(_argv(prompts, tmp_path / "o", tiny_dir)) == 2
    assert "20 lines (at most 10)" in capsys.readouterr().err


@pytest.mark.parametrize("planted", ["manifest", "images"])
def test_links_planted_in_the_output_folder_are_never_followed(tiny_dir, prompts_file, tmp_path, capsys, planted):
    """A symlinked manifest.jsonl would get lines appended to an outside file; a symlinked images/ would have
    its temporary files deleted: both are refused by name and the outside stays byte-identical."""
    out = tmp_path / "o"
    out.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "notes.txt").write_text("mine\n")
    (outside / ".x.tmp.png").write_bytes(b"keep me")
    if planted == "manifest":
        (out / MANIFEST).symlink_to(outside / "notes.txt")
    else:
        (out / "images").symlink_to(outside)
    before = {p.name: p.read_bytes() for p in outside.iterdir()}
    rc = cli_main(_argv(prompts_file, out, tiny_dir, "--seeds", "1"))
    err = capsys.readouterr().err
    assert rc != 0 and "is a symbolic link" in err and "refused" in err, err
    assert {p.name: p.read_bytes() for p in outside.iterdir()} == before


def test_settings_the_model_refuses_are_named_after_it_loads(tiny_dir, tmp_path, capsys):
    prompts = tmp_path / "p.txt"
    prompts.write_text("red heart\n", encoding="utf-8")
    rc = cli_main(_argv(prompts, tmp_path / "o", tiny_dir, "--sweep", "k=8,100"))  # V = 64
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "k=100" in err and "k: must be in [0, 63]" in err, err


def _bomb_in_place(png: Path) -> bytes:
    """Replace ``png`` by a 20000×20000 PNG header padded with zeros to the same byte count (the size check
    alone cannot tell); → the original bytes."""
    import struct
    import zlib

    original = png.read_bytes()
    ihdr = b"IHDR" + struct.pack(">IIBBBBB", 20000, 20000, 8, 2, 0, 0, 0)
    head = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + ihdr + struct.pack(">I", zlib.crc32(ihdr) & 0xFFFFFFFF)
    png.write_bytes(head + bytes(len(original) - len(head)))
    return original


@pytest.fixture
def judged_run(tiny_dir, tmp_path):
    """A finished run of a model that ships a recogniser (so the report opens every image), one PNG then
    replaced: → (argv, out, the replaced manifest line, its original bytes)."""
    import shutil

    import numpy as np
    import torch

    from lantern_studio.models.recogniser import RecogniserConfig, RecogniserNet, save_recogniser

    folder = tmp_path / "judged"
    shutil.copytree(tiny_dir, folder)
    torch.manual_seed(0)
    net = RecogniserNet(RecogniserConfig(classes=["face-smiling", "animal-mammal"], stem=8, widths=[8, 16],
                                         feature_dim=8))
    save_recogniser(net.eval(), folder / "recogniser.safetensors")
    np.save(folder / "heldout_features.npy", np.random.default_rng(0).normal(size=(12, 8)).astype(np.float32))
    prompts = tmp_path / "p.txt"
    prompts.write_text("red heart\ncat face\n", encoding="utf-8")
    out = tmp_path / "out"
    argv = _argv(prompts, out, folder, "--seeds", "1")
    assert cli_main(argv) == 0
    line = _lines(out)[0]
    return argv, out, line, _bomb_in_place(out / line["file"])


def _one_error_line(err: str, path: Path) -> str:
    errors = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in err, err
    assert str(path) in errors[0] and "not the image the manifest lists" in errors[0], err
    assert "20000×20000 pixels is not a studio image" in errors[0], err
    return errors[0]


@pytest.mark.parametrize("cached", [True, False], ids=["finished re-run", "model loaded"])
def test_a_replaced_png_under_no_verify_is_one_error_line(judged_run, capsys, cached):
    """--no-verify trusts the manifest's byte counts; the report then opens the image and finds a 20000×20000
    header: one error line naming the file and what is wrong, exit 1 (the finished re-run, which loads no
    model, let the BatchError escape as a traceback)."""
    argv, out, line, _original = judged_run
    if not cached:
        (out / batch.INFO).unlink()  # the model is loaded again: the same check, on the other way through
    capsys.readouterr()
    assert cli_main(argv + ["--no-verify"]) == 1
    err = capsys.readouterr().err
    assert "re-run without --no-verify" in _one_error_line(err, out / line["file"])
    if cached:
        assert len(err.strip().splitlines()) == 1, err


def test_a_replaced_png_is_rendered_again_unless_the_manifest_lists_its_bytes(judged_run, capsys):
    """Without --no-verify the hash check finds the replaced PNG and renders it again, byte for byte; a
    manifest that lists the replaced bytes' sha256 passes that check, and the image is then one error line,
    exit 1, saying to delete the file."""
    argv, out, line, original = judged_run
    png = out / line["file"]
    capsys.readouterr()
    assert cli_main(argv) == 0 and png.read_bytes() == original
    _bomb_in_place(png)
    lines = [ln if ln["key"] != line["key"] else {**ln, "sha256": hashlib.sha256(png.read_bytes()).hexdigest()}
             for ln in _lines(out)]
    (out / MANIFEST).write_text("".join(json.dumps(ln) + "\n" for ln in lines), encoding="utf-8")
    capsys.readouterr()
    assert cli_main(argv) == 1
    err = capsys.readouterr().err
    assert "delete the file and re-run" in _one_error_line(err, png) and len(err.strip().splitlines()) == 1, err


@pytest.mark.slow  # two torch threads on a busy 2-core machine decode a tiny model 10-100x slower than one
def test_the_thread_count_does_not_change_the_image(tiny_dir):
    """Ray workers run one torch thread, the in-process run may use more: the tokens (and
    so the PNG's bytes) must not depend on it."""
    import torch

    from lantern_studio.commands.batch_plan import PromptLine, build_plan

    r = batch_run.Renderer.load(str(tiny_dir), "cpu", "auto", warm=False)
    plan = build_plan([PromptLine("red heart", 1)], r.pipe.defaults, model=r.model, precision=r.pipe.precision,
                      seeds=2, sweeps=[("drafter", ["none", "jacobi"])], vocab_size=r.pipe.vocab_size)
    images = {}
    for threads in (1, 2):
        torch.set_num_threads(threads)  # the conftest fixture puts it back
        images[threads] = [r.render(it.to_dict())["png"] for it in plan.items]
    assert len(images[1]) == 6 and images[1] == images[2]


def test_plan_pieces():
    assert parse_set(["k=64", "draft-length=4", "cfg=2", "lam=none", "greedy=true"]) == {
        "k": 64, "draft_length": 4, "cfg_scale": 2.0, "lam": None, "greedy": True}
    assert parse_sweeps(["k=16,64,16", "delta=0,0.1"]) == [("k", [16, 64]), ("delta", [0.0, 0.1])]
    with pytest.raises(ValueError, match="not a file"):
        read_prompts("/nonexistent/prompts.txt")


def test_a_torn_manifest_tail_is_cut_before_the_next_line(tmp_path):
    m = Manifest(tmp_path)
    m.append({"key": "a", "file": "images/a.png"})
    with open(m.path, "ab") as fh:
        fh.write(b'{"key": "b", "fi')
    st = m.read()
    assert set(st.entries) == {"a"} and st.torn == 1
    m2 = Manifest(tmp_path)
    m2.append({"key": "c", "file": "images/c.png"})
    assert [json.loads(x)["key"] for x in m.path.read_text().splitlines()] == ["a", "c"]


# --------------------------------------------------------------------------- Ray (slow)


def _ray_argv(prompts, out, model, workers=2):
    return _argv(prompts, out, model, "--seeds", str(SEEDS), "--ray", "local", "--workers", str(workers))


@pytest.mark.slow
def test_ray_two_workers_render_the_same_bytes_and_a_rerun_does_no_work(full_run, tiny_dir, prompts_file, tmp_path,
                                                                       monkeypatch, capsys):
    pytest.importorskip("ray")
    _, full_out, _ = full_run
    out = tmp_path / "ray"
    assert _run(_ray_argv(prompts_file, out, tiny_dir)) == 0
    lines = _check_manifest(out, 12)
    assert {ln["worker"] for ln in lines} == {"w0", "w1"}  # both workers took items
    assert _pngs(out) == _pngs(full_out)  # the in-process run's images, byte for byte
    report = json.loads((out / "report.json").read_text())
    assert report["run"]["rendered"] == 12 and sum(report["run"]["per_worker"].values()) == 12
    capsys.readouterr()

    def refuse(*a, **k):
        raise AssertionError("a finished batch started Ray workers again")

    monkeypatch.setattr(batch_ray.RayExecutor, "__init__", refuse)
    before = (out / MANIFEST).read_bytes()
    assert _run(_ray_argv(prompts_file, out, tiny_dir)) == 0
    assert "nothing to render: all 12 images" in capsys.readouterr().out
    assert (out / MANIFEST).read_bytes() == before


@pytest.mark.slow
def test_ray_a_killed_worker_s_items_are_rendered_elsewhere(full_run, tiny_dir, prompts_file, tmp_path):
    ray = pytest.importorskip("ray")
    _, full_out, _ = full_run
    out = tmp_path / "ray-kill"
    killed = []

    def kill_after_first(executor, line):
        if not killed:
            killed.append(line["worker"])
            ray.kill(executor.actors[line["worker"]])

    assert _run(_ray_argv(prompts_file, out, tiny_dir), hook=kill_after_first) == 0
    lines = _check_manifest(out, 12)
    report = json.loads((out / "report.json").read_text())
    assert report["run"]["dead_workers"] == killed
    # it did its first item and at most what it had already finished when the kill came; the rest went elsewhere
    assert 1 <= sum(1 for ln in lines if ln["worker"] == killed[0]) <= 1 + batch_ray.IN_FLIGHT
    assert len(report["run"]["workers"]) == 3  # the two, and the fresh one that replaced the killed one
    assert _pngs(out) == _pngs(full_out)


def test_a_sweep_on_the_bundled_model_reports_the_meter_over_its_pictures(tmp_path, capsys):
    """Where runs are compared, quality is the meter's mean over the pictures with its interval (issue 60): each
    line of the manifest carries the meter's probability, and each setting of the report their mean and 95 %
    interval over its pictures."""
    prompts = tmp_path / "p.txt"
    prompts.write_text("a red heart\n")
    out = tmp_path / "out"
    assert cli_main(["batch", str(prompts), "--out", str(out), "--seeds", "2", "--sweep", "delta=0.2",
                     "--quiet"]) == 0
    lines = [json.loads(x) for x in (out / MANIFEST).read_text().splitlines() if x.strip()]
    assert lines and all(0.0 <= line["prompt_fidelity"] <= 1.0 for line in lines)
    report = json.loads((out / "report.json").read_text())
    rows = {r["name"]: r for r in report["methods"]}
    lantern = next(r for name, r in rows.items() if "0.2" in name)
    assert lantern["fidelity_n"] == 2
    assert lantern["fidelity_low"] <= lantern["fidelity_mean"] <= lantern["fidelity_high"]
    assert "meter (95%)" in capsys.readouterr().out
