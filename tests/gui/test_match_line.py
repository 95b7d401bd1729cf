"""The prompt box of a snapping model: the match line under it follows what is typed (off the GUI
thread), offers the next matches, and its style choice reaches the job."""

from __future__ import annotations

import pytest

from support.studio import WAIT, open_window, run_job
from support.tiny import tiny_v3_folder


@pytest.fixture(scope="module")
def v3(tmp_path_factory):
    return tiny_v3_folder(tmp_path_factory.mktemp("v3") / "model")


def test_typing_shows_the_match_and_alternatives_and_the_style_reaches_the_job(qtbot, v3):
    w = open_window(qtbot, v3)
    c = w.controls
    line = c.match_line
    assert line.isVisible() and not c.class_mode  # free text, not the ImageNet class picker
    assert [line.style_box.itemData(i) for i in range(line.style_box.count())] == ["", "any", "a", "b"]
    c.prompt.setPlainText("a blue star")
    qtbot.waitUntil(lambda: line.label.text().startswith("Draws: blue star · b — matched from 'a blue star'"),
                    timeout=WAIT)
    shown = list(line.shown_alternatives)
    assert len(shown) == 3 and "blue star" not in shown and all(n in line.alternatives.text() for n in shown)
    # one click on an alternative puts it in the prompt box, and the line follows
    line.alternatives.linkActivated.emit("0")
    assert c.prompt.toPlainText() == shown[0]
    qtbot.waitUntil(lambda: line.label.text().startswith(f"Draws: {shown[0]} · b"), timeout=WAIT)
    # the style selector is part of the next job's settings, and the line says it too
    line.set_style("a")
    assert c.settings().style == "a"
    qtbot.waitUntil(lambda: f"{shown[0]} · a — " in line.label.text(), timeout=WAIT)
    _job, result = run_job(qtbot, w, "blue star")
    assert result.job.settings.style == "a" and result.note.startswith("blue star · a — matched from 'blue star'")
    assert result.record()["settings"]["style"] == "a"


def test_a_bad_prompt_says_so_in_the_line_without_a_banner(qtbot, v3):
    w = open_window(qtbot, v3)
    line = w.controls.match_line
    w.controls.prompt.setPlainText("#99")
    qtbot.waitUntil(lambda: "class number must be in [0, 3]" in line.label.text(), timeout=WAIT)
    assert not line.alternatives.isVisible() and line.shown_alternatives == ()


def test_a_caption_model_has_no_match_line(qtbot, tiny):
    w = open_window(qtbot, tiny)
    assert not w.controls.match_line.isVisible()
    assert w.controls.settings().style == ""


def test_the_style_selector_lists_only_the_styles_the_model_offers(qtbot, tmp_path):
    import json

    folder = tiny_v3_folder(tmp_path / "model")
    man = json.loads((folder / "model.json").read_text())
    man["conditioning"]["offered_styles"] = ["b"]  # what train ship writes for a run trained on style b only
    (folder / "model.json").write_text(json.dumps(man))
    w = open_window(qtbot, folder)
    box = w.controls.match_line.style_box
    assert [box.itemData(i) for i in range(box.count())] == ["", "any", "b"]


def test_a_model_that_defaults_to_any_says_so_and_lists_any_once(qtbot, tmp_path):
    import json

    folder = tiny_v3_folder(tmp_path / "model")
    man = json.loads((folder / "model.json").read_text())
    man["conditioning"]["styles"] = ["a", "any"]  # a model taught the style "any" (train ar --style-dropout)
    man["conditioning"]["default_style"] = "any"
    (folder / "model.json").write_text(json.dumps(man))
    w = open_window(qtbot, folder)
    box = w.controls.match_line.style_box
    assert [box.itemData(i) for i in range(box.count())] == ["", "any", "a"]
    assert box.itemText(0) == "default (any design)" and box.currentIndex() == 0
