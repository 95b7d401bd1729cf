"""The k and δ sliders say what each measured rung did on the loaded model and where its pictures break
(models/lantern_profile.py, written by `bench --write-profile`)."""

from __future__ import annotations

from dataclasses import replace

from lantern_studio.engine.settings import GenerationSettings
from lantern_studio.gui.controls import ControlsPanel
from lantern_studio.models.lantern_profile import parse_profile
from lantern_studio.studio.jobs import ModelInfo

PROFILE = {
    "schema": "lantern-studio-profile/1", "measured": "2026-12-03", "machine": "test cpu", "images": 32,
    "sampling": {"temperature": 0.5, "top_k": 10, "top_p": 1.0},
    "ladders": {
        "delta": {"fixed": {"k": 64}, "vanilla_fidelity": 0.69, "break_drop": 0.1, "breaks_at": 1.0, "rungs": [
            {"delta": 0.0, "tokens_per_forward": 2.91, "relaxed_share": 0.0, "fidelity": 0.66, "fidelity_change": -0.03},
            {"delta": 0.2, "tokens_per_forward": 2.90, "relaxed_share": 0.0, "fidelity": 0.66, "fidelity_change": -0.03},
            {"delta": 1.0, "tokens_per_forward": 3.29, "relaxed_share": 0.39, "fidelity": 0.12, "fidelity_change": -0.56},
        ]},
    },
}


def _panel(qtbot) -> ControlsPanel:
    c = ControlsPanel()
    qtbot.addWidget(c)
    return c


def _info(profile=None):
    d = GenerationSettings(temperature=0.5, top_k=10, drafter="jacobi", k=64, delta=0.2)
    return ModelInfo(None, "m", 4, 1024, ("jacobi",), d, False, profile=profile)


def test_the_delta_slider_warns_from_where_this_models_pictures_break(qtbot):
    c = _panel(qtbot)
    try:
        _check_warning(c)
    finally:
        c.match_line.shutdown()  # its matcher thread ends with the panel


def _check_warning(c):
    c.set_model_info(_info(parse_profile(PROFILE)))
    c.set_settings(_info().defaults)
    assert "On this model (measured 2026-12-03, k 64, T 0.5 / top-k 10, 32 images; recognised:" in c.delta.toolTip()
    assert "Pictures break from δ 1" in c.delta.toolTip()
    assert "Measured on this model at δ 0.2 (k 64): 2.90 tokens/forward" in c.guarantee.text()
    assert c.guarantee.text().startswith("Sampled drafts")  # no warning: what the setting promises comes first
    assert not c.delta.warning() and c.delta.spin.styleSheet() == ""
    c.delta.setValue(1.0)
    assert c.delta.warning() and c.delta.spin.styleSheet()
    assert c.guarantee.text().startswith("⚠ On this model pictures break from δ 1")  # first: seen unscrolled
    assert "Sampled drafts" in c.guarantee.text()
    c.delta.setValue(0.5)  # back below: the warning goes
    assert not c.delta.warning() and c.delta.spin.styleSheet() == "" and "⚠" not in c.guarantee.text()
    c.temperature.setValue(1.0)  # sampled otherwise than measured: the tooltip says the figures may not hold
    assert "other sampling settings" in c.delta.toolTip()


def test_without_a_profile_or_outside_lantern_the_sliders_say_nothing_measured(qtbot):
    c = _panel(qtbot)
    try:
        _check_silent(c)
    finally:
        c.match_line.shutdown()


def _check_silent(c):
    c.set_model_info(_info(None))
    c.set_settings(replace(_info().defaults, delta=1.0))
    assert "On this model" not in c.delta.toolTip() and "Measured" not in c.guarantee.text()
    assert not c.delta.warning()
    c.set_model_info(_info(parse_profile(PROFILE)))
    c.set_settings(replace(_info().defaults, delta=1.0, bound="lantern++", lam=2.0))  # another bound: no ladder
    assert "On this model" not in c.delta.toolTip() and not c.delta.warning()


def test_where_the_sliders_do_nothing_the_line_under_them_points_to_the_preview(qtbot):
    """v4.1's measured δ ladder relaxes under 5 % at every rung below its break, so the line under the sliders
    says where to see the trade-off; the v5 preview's ladder (18–33 % relaxed) is a curve and gets no such
    line, nor does a δ where v4.1's pictures break (the warning speaks there)."""
    from lantern_studio.models import PREVIEW_NAME, bundled_dir
    from lantern_studio.models.lantern_profile import read_profile

    flat, _ = read_profile(bundled_dir())
    curve, _ = read_profile(bundled_dir(PREVIEW_NAME))
    assert flat.flat("delta") and not curve.flat("delta")
    c = _panel(qtbot)
    try:
        c.flat_hint = "pick the preview"
        c.set_model_info(_info(flat))
        c.set_settings(_info().defaults)
        assert "pick the preview" in c.guarantee.text()
        c.delta.setValue(1.0)
        assert c.delta.warning() and "pick the preview" not in c.guarantee.text()
        c.set_model_info(_info(curve))
        c.delta.setValue(0.2)
        assert "Measured on this model at δ 0.2" in c.guarantee.text() and "pick the preview" not in c.guarantee.text()
    finally:
        c.match_line.shutdown()


def _with_intervals() -> dict:
    """PROFILE as the bench writes it since intervals are kept: each rung's mean fidelity with its 95 % interval
    over the pictures measured (models/lantern_profile.fidelity_fields)."""
    from copy import deepcopy

    from lantern_studio.fidelity import Interval
    from lantern_studio.models.lantern_profile import fidelity_fields

    data = deepcopy(PROFILE)
    lad = data["ladders"]["delta"]
    lad.update(fidelity_fields(Interval(0.69, 0.55, 0.81, 32), "vanilla_fidelity"))
    for rung, iv in zip(lad["rungs"], [Interval(0.66, 0.52, 0.79, 32), Interval(0.62, 0.48, 0.76, 32),
                                       Interval(0.12, 0.04, 0.23, 32)]):
        rung.update(fidelity_fields(iv))
    return data


def test_a_profile_with_intervals_says_each_rungs_mean_and_interval_and_an_old_one_still_reads():
    from lantern_studio.fidelity import Interval

    new = parse_profile(_with_intervals())
    rung = new.ladders["delta"].rungs[1]
    assert rung.fidelity == 0.62 and rung.interval == Interval(0.62, 0.48, 0.76, 32)
    assert "prompt fidelity 62% (48–76%, 32 pictures)" in new.at("delta", 0.2)
    assert "recognised" not in new.at("delta", 0.2)
    warning = new.at("delta", 1.0)
    assert warning.startswith("⚠") and "12% (4–23%, 32 pictures)" in warning and "vanilla's 69% (55–81%, 32 pictures)" in warning
    assert "the meter's mean probability over the pictures, with its 95 % interval" in new.describe("delta")
    # a profile written before intervals were kept: its figures as before, no interval made up
    old = parse_profile(PROFILE)
    assert old.ladders["delta"].rungs[1].interval is None and old.ladders["delta"].vanilla_interval is None
    assert "recognised 66%" in old.at("delta", 0.2) and "(" not in old.at("delta", 0.2).split("recognised")[1]
    assert "recognised: the judge's top 5" in old.describe("delta")


def test_a_profiles_interval_must_be_whole_and_hold_its_mean():
    import pytest

    from lantern_studio.models.lantern_profile import ProfileError

    for damage, words in [({"fidelity_interval": [0.7, 0.8]}, "must hold fidelity"),
                          ({"fidelity_interval": [0.5]}, r"\[low, high\]"), ({"fidelity_n": 0}, "fidelity_n"),
                          ({"fidelity_interval": [0.5, 1.5]}, r"fidelity_interval\[1\]"),
                          ({"fidelity": None}, "fidelity")]:
        data = _with_intervals()
        data["ladders"]["delta"]["rungs"][1].update(damage)
        with pytest.raises(ProfileError, match=words):
            parse_profile(data)
    # the bench's rows keep the interval without a count: the rung's images, else the profile's, are its pictures
    data = _with_intervals()
    rung = data["ladders"]["delta"]["rungs"][1]
    del rung["fidelity_n"]
    assert parse_profile(data).ladders["delta"].rungs[1].interval.n == 32  # the profile's images
    rung["images"] = 64
    assert parse_profile(data).ladders["delta"].rungs[1].interval.n == 64
    del data["images"], rung["images"]
    with pytest.raises(ProfileError, match="fidelity_n"):
        parse_profile(data)


def test_the_sliders_line_shows_the_measured_mean_and_interval(qtbot):
    c = _panel(qtbot)
    try:
        c.set_model_info(_info(parse_profile(_with_intervals())))
        c.set_settings(_info().defaults)
        assert "Measured on this model at δ 0.2 (k 64): 2.90 tokens/forward, prompt fidelity 62% (48–76%, 32 pictures)" \
            in c.guarantee.text()
        assert "δ 0.2: 2.90 tokens/forward, prompt fidelity 62% (48–76%, 32 pictures)" in c.delta.toolTip()
    finally:
        c.match_line.shutdown()
