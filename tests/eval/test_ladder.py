"""The δ and k ladders of a bench run (eval/bench/ladder.py) and the profile `bench --write-profile`
keeps in a model folder: which rows are rungs, where pictures break, and the file the studio reads."""

from __future__ import annotations

import json
import shutil

import pytest

from lantern_studio.cli import main as cli_main
from lantern_studio.eval.bench.ladder import BREAK_DROP, describe, ladder, profile
from lantern_studio.models.lantern_profile import PROFILE_FILE, parse_profile, read_profile
from lantern_studio.models.tiny import build_tiny_model_dir

DEFAULTS = {"drafter": "jacobi", "draft_length": 12, "k": 64, "delta": 0.2, "coupling": True, "temperature": 0.5,
            "top_k": 10, "top_p": 1.0, "greedy": False, "cfg_scale": 1.0}


def _row(name, family, k=0, delta=0.0, fid=0.8, tpf=2.9, relaxed=0.0, drafter="jacobi", length=12, **settings):
    return {"name": name, "family": family, "drafter": drafter, "draft_length": length, "k": k, "delta": delta,
            "bound": "lantern", "precision": "fp32", "compiled": False, "identity_top5": fid,
            "prompt_fidelity": fid, "mean_accepted_length": tpf, "relaxed_share": relaxed, "speedup_median": 1.0,
            "settings": {"coupling": True, "delta_decay": 1.0, "adaptive_delta": False, **settings}}


def _report(rows):
    vanilla = _row("vanilla-fp32", "vanilla", drafter="none", fid=0.8, tpf=1.0) | {"reference": True}
    return {"methods": [vanilla, *rows], "model": {"defaults": DEFAULTS}, "config": {"n": 8, "prompt_source": "p"},
            "machine": {"cpu": "test cpu", "device": "cpu", "threads": 1}, "prompts": [{}] * 8}


LADDER = [
    _row("exact-jacobi-L12", "exact", fid=0.80, tpf=2.9),
    _row("lantern-jacobi-k64-d0.1-L12", "jacobi-relaxed", 64, 0.1, fid=0.78, tpf=3.1, relaxed=0.05),
    _row("lantern-jacobi-k64-d0.5-L12", "jacobi-relaxed", 64, 0.5, fid=0.69, tpf=3.6, relaxed=0.2),  # −11 points
    _row("lantern-jacobi-k64-d0.3-L12", "jacobi-relaxed", 64, 0.3, fid=0.72, tpf=3.3, relaxed=0.1),  # −8 points
    _row("lantern-jacobi-k64-d1-L12", "jacobi-relaxed", 64, 1.0, fid=0.10, tpf=9.0, relaxed=0.8),
    # not rungs of the δ ladder at k 64: another k, another window, decaying δ, compiled, another drafter
    _row("lantern-jacobi-k256-d0.2-L12", "jacobi-relaxed", 256, 0.2, fid=0.70),
    _row("lantern-jacobi-k64-d0.2-L24", "jacobi-relaxed", 64, 0.2, length=24, fid=0.0),
    _row("lantern-jacobi-k64-d0.4-g0.7-L12", "jacobi-relaxed", 64, 0.4, fid=0.0, delta_decay=0.7),
    _row("lantern-jacobi-k64-d0.7-L12-compiled", "jacobi-relaxed", 64, 0.7, fid=0.0) | {"compiled": True},
    _row("lantern-eagle-k64-d0.7", "lantern", 64, 0.7, drafter="eagle", fid=0.0),
]


def test_the_delta_ladder_takes_only_the_defaults_path_and_breaks_at_the_first_rung_ten_points_down():
    lad = ladder(_report(LADDER), "delta")
    assert [r["delta"] for r in lad["rungs"]] == [0.0, 0.1, 0.3, 0.5, 1.0]  # sorted; exact is rung 0
    assert lad["fixed"] == {"k": 64}
    assert lad["breaks_at"] == 0.5  # 0.3 lost 8 points (kept), 0.5 lost 11
    assert lad["rungs"][2]["fidelity_change"] == pytest.approx(-0.08)
    assert lad["rungs"][3]["tokens_per_forward"] == 3.6 and lad["rungs"][3]["relaxed_share"] == 0.2
    # the same run with a wider tolerance: 0.5 no longer breaks, δ 1 does (the threshold is what decides)
    assert ladder(_report(LADDER), "delta", break_drop=0.2)["breaks_at"] == 1.0
    assert BREAK_DROP == 0.10


def test_the_k_ladder_is_read_at_the_default_delta_and_a_run_without_rungs_has_none():
    lad = ladder(_report(LADDER), "k")
    assert [r["k"] for r in lad["rungs"]] == [0.0, 256.0] and lad["fixed"] == {"delta": 0.2}
    assert lad["breaks_at"] == 256.0  # 70 % against vanilla's 80 %
    assert ladder(_report(LADDER[:1]), "delta") is None  # exact alone is no ladder
    assert ladder(_report(LADDER[1:2] + LADDER[2:3]), "delta")["breaks_at"] == 0.5  # no exact: still a ladder
    no_drafter = _report(LADDER) | {"model": {"defaults": DEFAULTS | {"drafter": "none"}}}
    assert ladder(no_drafter, "delta") is None and profile(no_drafter) is None


def test_the_profile_round_trips_through_the_reader_and_says_where_pictures_break():
    data = json.loads(json.dumps(profile(_report(LADDER))))
    p = parse_profile(data)
    assert p.breaks_at("delta") == 0.5 and p.breaks_at("k") == 256
    assert p.images == 8 and p.sampling == {"temperature": 0.5, "top_k": 10.0, "top_p": 1.0}
    assert "3.30 tokens/forward" in p.at("delta", 0.4) and "break from δ 0.5" in p.at("delta", 0.4)
    assert p.at("delta", 0.5).startswith("⚠") and "recognised 69%" in p.at("delta", 0.7)
    text = p.describe("delta")
    assert text.count("tokens/forward") == 5 and "Pictures break from δ 0.5" in text
    lines = describe(data["ladders"]["delta"])
    assert lines[-1].strip().startswith("pictures break from δ 0.5")


class _S:
    def __init__(self, temperature=0.5, top_k=10, top_p=1.0):
        self.temperature, self.top_k, self.top_p = temperature, top_k, top_p


def test_a_profile_says_when_it_was_measured_at_other_sampling():
    p = parse_profile(profile(_report(LADDER)))
    assert p.applies_to(_S()) and not p.applies_to(_S(temperature=1.0)) and not p.applies_to(_S(top_k=0))
    assert "other sampling settings" in p.describe("delta", _S(temperature=1.0))
    assert "other sampling settings" not in p.describe("delta", _S())


def _good():
    return json.loads(json.dumps(profile(_report(LADDER))))


@pytest.mark.parametrize("damage, words", [
    (lambda d: "not json {", "unreadable"),
    (lambda d: [1, 2], "JSON object"),
    (lambda d: d | {"schema": "other/9"}, "schema"),
    (lambda d: d | {"ladders": {}}, "ladders"),
    (lambda d: d | {"ladders": {"delta": d["ladders"]["delta"], "evil": {}}}, "ladders"),
    (lambda d: d["ladders"]["delta"]["rungs"][1].update(delta=float("nan")) or d, "rungs[1].delta"),
    (lambda d: d["ladders"]["delta"]["rungs"][1].update(delta=-1) or d, "rungs[1].delta"),
    (lambda d: d["ladders"]["delta"]["rungs"][1].update(fidelity="high") or d, "fidelity"),
    (lambda d: d["ladders"]["delta"]["rungs"][2].update(tokens_per_forward=True) or d, "tokens_per_forward"),
    (lambda d: d["ladders"]["delta"]["rungs"].reverse() or d, "rise"),
    (lambda d: d["ladders"]["delta"]["rungs"].extend([d["ladders"]["delta"]["rungs"][-1]] * 40) or d, "rungs"),
    (lambda d: d["ladders"]["delta"].update(breaks_at=0.42) or d, "breaks_at"),
    (lambda d: d["ladders"]["delta"].update(fixed={}) or d, "fixed"),
    (lambda d: d | {"images": -3}, "images"),
    (lambda d: d | {"machine": "x" * 5000}, "machine"),
    (lambda d: d | {"sampling": "hot"}, "sampling"),
    (lambda d: d | {"pad": "x" * 70_000}, "KB"),
])
def test_a_damaged_profile_is_left_out_with_one_line_naming_what_was_wrong(tmp_path, damage, words):
    d = damage(_good())
    (tmp_path / PROFILE_FILE).write_text(d if isinstance(d, str) else json.dumps(d))
    got, problem = read_profile(tmp_path)
    assert got is None
    assert problem.startswith(PROFILE_FILE) and words in problem and "\n" not in problem


def test_no_file_is_no_profile_and_no_problem(tmp_path):
    assert read_profile(tmp_path) == (None, None) and read_profile(None) == (None, None)
    (tmp_path / PROFILE_FILE).write_text(json.dumps(_good()))
    got, problem = read_profile(tmp_path)
    assert problem is None and got.breaks_at("delta") == 0.5


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return build_tiny_model_dir(tmp_path_factory.mktemp("models") / "tiny", grid=4)


def test_bench_write_profile_keeps_the_ladder_in_the_model_folder(tiny_dir, tmp_path, capsys):
    import torch

    folder = tmp_path / "tiny"
    shutil.copytree(tiny_dir, folder)
    before = torch.get_num_threads()
    try:
        rc = cli_main(["bench", "--model", str(folder), "--n", "1", "--no-warmup", "--no-pictures", "--quiet",
                       "--threads", "1", "--out", str(tmp_path / "out"), "--write-profile", "--methods",
                       "exact-jacobi", "lantern-jacobi-k8-d0.05", "lantern-jacobi-k8-d0.1", "lantern-jacobi-k8-d0.4"])
    finally:
        torch.set_num_threads(before)
    out = capsys.readouterr().out
    assert rc == 0, out
    got, problem = read_profile(folder)
    assert problem is None and [r.value for r in got.ladders["delta"].rungs] == [0.0, 0.05, 0.1, 0.4]
    assert [r.value for r in got.ladders["k"].rungs] == [0.0, 8.0]  # the tiny model's default: k 8, δ 0.1
    assert "δ ladder at k 8 (rung 0 = exact):" in out and f"profile: {folder / PROFILE_FILE}" in out
    report = json.loads((tmp_path / "out" / "bench.json").read_text())
    assert report["lantern_profile"]["ladders"]["delta"]["rungs"][0]["delta"] == 0.0
    # no ladder in the run: one error line, no file written
    (folder / PROFILE_FILE).unlink()
    rc = cli_main(["bench", "--model", str(folder), "--n", "1", "--no-warmup", "--no-pictures", "--quiet",
                   "--threads", "1", "--out", str(tmp_path / "out2"), "--write-profile", "--methods", "vanilla"])
    err = capsys.readouterr().err
    assert rc == 2 and "--write-profile: this run has no ladder" in err and not (folder / PROFILE_FILE).exists()
    torch.set_num_threads(before)
