"""The trade-off chart has a shape and a key entry for every family a DecodeMethod can be (the step bound
included), and keys the step bound only once such a point is drawn."""

from lantern_studio.engine.decode_method import FAMILIES, STEP
from lantern_studio.gui.chart import MARKS, SYMBOLS, key_text
from lantern_studio.studio.tradeoff import KINDS


def test_every_family_has_a_shape_and_a_glyph_of_its_own():
    assert set(SYMBOLS) == set(MARKS) == set(KINDS) == set(FAMILIES)
    assert len(set(SYMBOLS.values())) == len(SYMBOLS) and len(set(MARKS.values())) == len(MARKS)


def test_the_key_names_the_step_bound_once_a_step_bound_point_is_drawn():
    assert "▲" not in key_text(["LANTERN", "vanilla"])
    assert key_text([STEP]).endswith("▲ step bound")
    assert key_text(k for k in ("LANTERN", STEP)).endswith("▲ step bound")  # a generator, read once
    assert key_text([]).startswith("■ vanilla · ◆ exact · ● LANTERN · ★ LANTERN++")
