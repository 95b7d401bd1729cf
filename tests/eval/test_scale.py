"""bench-scale: the bench's tokens per round weighed against a LlamaGen-sized target's cost curve."""

from __future__ import annotations

import json

import pytest

from lantern_studio.cli import main
from lantern_studio.eval.scale import ScaleError, acceptance_from, project

REPORT = {"methods": [
    {"name": "vanilla-fp32", "drafter": "none", "tokens_per_image": 256, "rounds_per_image": 255},
    {"name": "exact-jacobi-L12", "drafter": "jacobi", "draft_length": 12, "tokens_per_image": 256,
     "rounds_per_image": 64, "speedup_median": 1.8},
]}


def test_the_projection_weighs_tokens_per_round_against_the_verify_width():
    methods = acceptance_from(REPORT)
    assert [m["name"] for m in methods] == ["exact-jacobi-L12"] and methods[0]["tokens_per_round"] == 4.0
    curve = [{"width": 1, "ms": 10.0}, {"width": 8, "ms": 12.0}, {"width": 16, "ms": 20.0}]
    (got,) = project(curve, methods)
    assert got["verify_ms"] == pytest.approx(12.0 + 8.0 * 5 / 8)  # width 13, between 8 and 16
    assert got["projected_speedup"] == pytest.approx(4.0 * 10.0 / 17.0)
    # a flat curve (weight-bound verifies) projects the tokens per round themselves
    assert project([{"width": 1, "ms": 5.0}, {"width": 49, "ms": 5.0}], methods)[0]["projected_speedup"] == 4.0


def test_a_report_without_jacobi_rounds_is_refused():
    with pytest.raises(ScaleError, match="no Jacobi method"):
        acceptance_from({"methods": REPORT["methods"][:1]})


def test_the_command_times_a_preset_target_and_names_a_bad_report(tmp_path, capsys):
    report = tmp_path / "bench.json"
    report.write_text(json.dumps(REPORT))
    out = tmp_path / "scale.json"
    assert main(["bench-scale", "--preset", "GPT-B", "--grid", "4", "--acceptance", str(report), "--precision",
                 "fp32", "--no-cfg", "--widths", "1", "2", "4", "--rounds", "1", "--repeats", "1",
                 "--json", str(out)]) == 0
    got = json.loads(out.read_text())
    assert got["rows"] == 1 and got["params"] > 50e6 and [p["width"] for p in got["curve"]] == [1, 2, 4]
    assert all(p["ms"] > 0 for p in got["curve"]) and got["projection"][0]["name"] == "exact-jacobi-L12"
    assert "projected" in capsys.readouterr().out
    report.write_text("{not json")
    assert main(["bench-scale", "--acceptance", str(report)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(report) in err[0]
