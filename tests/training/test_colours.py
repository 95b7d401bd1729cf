"""`train colours`: how a tokenizer keeps each hue, by picture and by token patch."""

import numpy as np
import pytest

from lantern_studio.training.colours import hue_balance, hue_family, hue_fidelity, own_codes, picture_families

GREEN, BLUE, RED = (30, 160, 60), (30, 60, 200), (220, 30, 30)


def pictures(*colours, size=8):
    """One picture per colour: a coloured square on white."""
    out = np.full((len(colours), size, size, 3), 255, np.uint8)
    for i, c in enumerate(colours):
        out[i, 2:6, 2:6] = c
    return out


def test_hue_families():
    assert [hue_family(np.array(c)) for c in (GREEN, BLUE, RED, (128, 128, 128), (240, 200, 40))] == \
        ["green", "blue", "red", "grey", "orange/yellow"]


def test_picture_families_and_the_balance_of_a_rare_hue():
    blank = np.full((1, 8, 8, 3), 255, np.uint8)
    families = picture_families(np.concatenate([pictures(GREEN, RED, RED, RED, BLUE), blank]))
    assert families == ["green", "red", "red", "red", "blue", "blank"]
    share = lambda w, f: sum(x for x, g in zip(w, families) if g == f)  # noqa: E731
    as_is = hue_balance(families, 0.0)
    assert np.allclose(as_is, 1 / 6) and share(as_is, "red") == pytest.approx(0.5)
    even = hue_balance(families, 1.0)  # every family equally often: the one green as often as the three reds
    assert all(share(even, f) == pytest.approx(0.25) for f in ("green", "red", "blue", "blank"))
    half = hue_balance(families, 0.5)
    assert share(as_is, "green") < share(half, "green") < share(even, "green")
    with pytest.raises(ValueError, match="alpha"):
        hue_balance(families, 1.5)


def test_a_faithful_round_trip_moves_nothing_and_a_green_to_blue_swap_is_counted():
    orig = pictures(GREEN, GREEN, RED, BLUE)
    same = hue_fidelity(orig, orig.copy())
    assert same["green"] == {"n": 2, "rgb_error": 0.0, "median_shift": 0.0, "shifted": 0.0}
    swapped = orig[..., [0, 2, 1]]  # green and blue channels exchanged: green becomes blue, red stays red
    got = hue_fidelity(orig, swapped)
    assert got["green"]["shifted"] == 1.0 and got["green"]["median_shift"] > 30
    assert got["red"]["shifted"] == 0.0 and got["red"]["median_shift"] < 5
    assert got["blue"]["shifted"] == 1.0
    with pytest.raises(ValueError, match="differ in shape"):
        hue_fidelity(orig, orig[:2])


def test_a_hue_without_codes_of_its_own_is_found():
    """Two pictures of 2×2 tokens (4×4 px each): green patches encoded by the code the blue patches mostly use
    have no code of their own (0 %); given a code of their own they have it (100 %)."""
    orig = np.full((2, 8, 8, 3), 255, np.uint8)
    orig[0, :4, :4], orig[0, :4, 4:], orig[0, 4:, :4] = GREEN, BLUE, BLUE
    orig[1, :4, :4], orig[1, :4, 4:] = BLUE, RED
    codes = np.array([[[7, 7], [7, 0]], [[7, 3], [0, 0]]])  # code 7: one green patch, three blue ones
    got = own_codes(orig, codes)
    assert got["green"] == {"patches": 1, "codes": 1, "own": 0.0}
    assert got["blue"]["own"] == 1.0 and got["red"]["own"] == 1.0
    codes[0, 0, 0] = 5  # the mutant tokenizer that keeps green apart
    assert own_codes(orig, codes)["green"]["own"] == 1.0


def test_the_command_prints_a_row_per_hue(tmp_path, capsys):
    import argparse

    from lantern_studio.training import colours
    from support.dataset import class_dataset, tiny_vq_file

    class_dataset(tmp_path / "data", names=("dog face", "red heart"), styles=("google", "twitter"))
    tiny_vq_file(tmp_path / "vq.safetensors", codebook_size=16)
    p = argparse.ArgumentParser()
    colours.add_arguments(p)
    assert colours.run(p.parse_args(["--vq", str(tmp_path / "vq.safetensors"), "--data", str(tmp_path / "data"),
                                     "--images", "4"])) == 0
    out = capsys.readouterr().out
    assert "| main hue | pictures |" in out and out.count("\n| ") >= 2
    assert colours.run(p.parse_args(["--vq", str(tmp_path / "vq.safetensors"), "--data", str(tmp_path / "data"),
                                     "--images", "0"])) == 2
    assert capsys.readouterr().err.strip() == "lantern-studio: train colours --images: must be in [1, 8192], got 0"
