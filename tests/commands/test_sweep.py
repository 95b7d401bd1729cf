"""``lantern-studio sweep``: one prompt at several δ (or k) values and vanilla, three seeds each by default, on a
tiny model folder — the printed table (speed-ups and fidelity over the seeds), each PNG with its settings, the
captioned contact sheet, sweep.json's mean, low, high and n a value, and one line for bad values."""

from __future__ import annotations

import json
import statistics

import numpy as np
import pytest
from PIL import Image

from lantern_studio import fidelity
from lantern_studio.cli import main as cli_main
from lantern_studio.commands import sweep
from lantern_studio.export import read_png_record, upscale
from lantern_studio.models.tiny import build_tiny_model_dir


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny_model_dir(tmp_path_factory.mktemp("models") / "tiny")


def table_rows(out: str) -> list:
    """The table's body as [value, tokens/forward, speed-up, seconds, fidelity] rows."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("value")) + 2
    rows = []
    for line in lines[start:]:
        if line.startswith("speed-up:"):
            break
        name, rest = line[:line.index("  ")], line[line.index("  "):].split()
        rows.append([name] + rest[:3] + [" ".join(rest[3:])])
    return rows


def test_a_delta_sweep_prints_the_table_and_writes_each_png_and_a_captioned_contact_sheet(tiny, tmp_path, capsys):
    out = tmp_path / "sweep"
    rc = cli_main(["sweep", "a red heart", "--model", str(tiny), "--delta", "0,0.1,0.2,0.5", "--k", "8",
                   "--seed", "3", "--out", str(out), "--quiet"])
    printed = capsys.readouterr()
    assert rc == 0, printed.err
    rows = table_rows(printed.out)
    assert [r[0] for r in rows] == ["vanilla", "delta 0", "delta 0.1", "delta 0.2", "delta 0.5"]
    assert "sweep of delta · seeds 3–5" in printed.out  # three seeds a value by default
    report = json.loads((out / sweep.REPORT).read_text())
    assert report["schema"] == sweep.REPORT_SCHEMA and report["seed"] == 3 and report["seeds"] == [3, 4, 5]
    assert [r["value"] for r in report["rows"]] == [r[0] for r in rows]
    by_value = {r["value"]: r for r in report["rows"]}
    vanilla_seconds = [s["seconds"] for s in by_value["vanilla"]["seeds"]]
    for name, tpf, speed, seconds, fid in rows:
        row = by_value[name]
        assert [s["seed"] for s in row["seeds"]] == [3, 4, 5]
        records = [read_png_record(out / s["file"]) for s in row["seeds"]]
        assert row["seeds"][0]["file"] == sweep.file_name(sweep.Run(name, None, None))  # the first seed: plain name
        for seed, rec in zip((3, 4, 5), records):
            assert rec["prompt"] == "a red heart" and rec["settings"]["seed"] == seed and rec["sweep"] == name
        assert tpf == f"{row['tokens_per_forward']:.2f}" and seconds == f"{row['seconds']:.3f}"
        assert row["seconds"] == pytest.approx(statistics.median(r["stats"]["wall_seconds"] for r in records))
        assert fid == "— (no recogniser)" and row["fidelity_n"] == 0 and row["fidelity_mean"] is None
        if name == "vanilla":
            assert speed == "baseline" and all(r["settings"]["drafter"] == "none" for r in records)
        else:
            assert all(r["settings"]["delta"] == pytest.approx(float(name.split()[1])) and r["settings"]["k"] == 8
                       and r["settings"]["drafter"] == "jacobi" for r in records)
            # the median over seeds of vanilla's decode seconds over the value's, seed by seed
            want = statistics.median(v / r["stats"]["wall_seconds"] for v, r in zip(vanilla_seconds, records))
            assert speed == f"{want:.2f}×"
    # the contact sheet: every value's first picture at 4×, in the table's order, each with its caption under it
    sheet = np.asarray(Image.open(out / sweep.SHEET).convert("RGB"))
    pictures = [np.asarray(Image.open(out / f"{r[0].replace(' ', '-')}.png").convert("RGB")) for r in rows]
    cell = sweep.SHEET_SCALE * pictures[0].shape[0]
    pad, top = 8, sweep.SHEET_FONT_SIZE + 4 + 8
    assert sheet.shape[1] == pad + len(rows) * (cell + pad)
    for i, picture in enumerate(pictures):
        x, y = pad + i * (cell + pad), pad + top
        want = np.asarray(upscale(picture, sweep.SHEET_SCALE, "nearest"))
        assert np.array_equal(sheet[y:y + cell, x:x + cell], want), i
        below = sheet[y + cell + 4:y + cell + 4 + 3 * (sweep.SHEET_FONT_SIZE + 4), x:x + cell]
        assert (below.max(axis=2) > 120).sum() > 100, f"no caption under picture {i}"  # text drawn
    names = ["vanilla", "delta-0", "delta-0.1", "delta-0.2", "delta-0.5"]
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [f"{n}.png" for n in names] + [f"{n}-seed{s}.png" for n in names for s in (4, 5)] + [sweep.SHEET, sweep.REPORT])
    # the same folder again: refused unless --overwrite
    assert cli_main(["sweep", "a red heart", "--model", str(tiny), "--out", str(out), "--quiet"]) == 2
    assert "--overwrite" in capsys.readouterr().err


def test_a_k_sweep_keeps_delta_fixed_and_the_contact_sheet_captions_name_k(tiny, tmp_path, capsys):
    out = tmp_path / "k"
    rc = cli_main(["sweep", "a red heart", "--model", str(tiny), "--k", "2,8,32", "--delta", "0.2", "--seed", "5",
                   "--seeds", "1", "--out", str(out), "--quiet"])
    printed = capsys.readouterr()
    assert rc == 0, printed.err
    assert [r[0] for r in table_rows(printed.out)] == ["vanilla", "k 2", "k 8", "k 32"]
    assert "sweep of k · seed 5 ·" in printed.out  # --seeds 1: one picture a value, as before
    for k in (2, 8, 32):
        s = read_png_record(out / f"k-{k}.png")["settings"]
        assert s["k"] == k and s["delta"] == pytest.approx(0.2) and s["seed"] == 5
    assert not any("seed" in p.name for p in out.iterdir())


def test_with_a_recogniser_the_table_gives_the_mean_fidelity_over_the_seeds_with_its_interval(tiny, tmp_path, capsys,
                                                                                              monkeypatch):
    real = sweep.load_pipeline

    def with_scorer(*args, **kwargs):  # a model folder that ships a recogniser, faked
        pipe = real(*args, **kwargs)
        pipe.scorer = lambda image, prompt: float(np.asarray(image).mean()) / 255.0
        return pipe

    monkeypatch.setattr(sweep, "load_pipeline", with_scorer)  # the module that runs `lantern-studio sweep`
    out = tmp_path / "fid"
    assert cli_main(["sweep", "a red heart", "--model", str(tiny), "--delta", "0.1,0.3", "--seeds", "4",
                     "--out", str(out), "--quiet"]) == 0
    report = {r["value"]: r for r in json.loads((out / sweep.REPORT).read_text())["rows"]}
    for name, *_rest, fid in table_rows(capsys.readouterr().out):
        row = report[name]
        scores = []
        for s in row["seeds"]:
            image = np.asarray(Image.open(out / s["file"]).convert("RGB"))
            assert s["prompt_fidelity"] == pytest.approx(image.mean() / 255.0)
            assert read_png_record(out / s["file"])["prompt_fidelity"] == pytest.approx(image.mean() / 255.0)
            scores.append(image.mean() / 255.0)
        iv = fidelity.mean_interval(scores)
        assert row["fidelity_n"] == 4 and len(row["seeds"]) == 4
        assert (row["fidelity_mean"], row["fidelity_low"], row["fidelity_high"]) == (
            pytest.approx(iv.mean), pytest.approx(iv.low), pytest.approx(iv.high))
        assert fid == fidelity.format_interval(iv) and fid.endswith("4 seeds)")


@pytest.mark.parametrize("argv, line", [
    (["--delta", "0,1.5"], "error: --delta: delta: must be in [0, 1], got 1.5"),
    (["--delta", "0,x"], "error: --delta: 'x' is not a number"),
    (["--delta", "0,nan"], "error: --delta: 'nan' is not a number"),
    (["--k", "16,abc"], "error: --k: 'abc' is not a whole number"),
    (["--k", "-1"], "error: --k: k: must be in [0, V-1], got -1"),
    (["--k", ","], "error: --k: no values"),
    (["--delta", "0,0.1", "--k", "2,4"], "error: --delta and --k: sweep one of them"),
    (["--k", "64"], "error: --k: k: must be in [0, 63], got 64"),  # past this model's codebook: after loading it
    (["--drafter", "none"], "error: --drafter: a sweep compares drafting against vanilla"),
    (["--cfg", "500"], "error: --cfg: cfg_scale: must be in [0, 100], got 500"),  # the other flags: as generate's
    (["--seeds", "0"], "error: --seeds: must be a whole number in [1, 16], got 0"),
    (["--seeds", "17"], "error: --seeds: must be a whole number in [1, 16], got 17"),
])
def test_bad_values_get_one_line_naming_the_field_and_write_nothing(tiny, tmp_path, capsys, argv, line):
    out = tmp_path / "bad"
    rc = cli_main(["sweep", "a red heart", "--model", str(tiny), "--out", str(out), "--quiet"] + argv)
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err.startswith(line) and "\n" not in err and "Traceback" not in err, err
    assert not out.exists() or not any(out.iterdir())
