"""`train colours`: how a tokenizer keeps each hue, by picture and by token patch."""

import numpy as np
import pytest

from lantern_studio.training.colours import colour_whitening, hue_balance, hue_family, hue_fidelity, own_codes, picture_families

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


def test_colour_whitening_weighs_the_direction_the_data_hardly_varies_along_most():
    """Pictures whose green mostly follows red and blue (as emoji do), with a little green-against-magenta
    spread: through W every colour axis has the same variance (the largest), so the green–magenta axis gets the
    largest weight; the identity (the mutant: a plain RGB loss) leaves its variance 1/20 of brightness's."""
    rng = np.random.default_rng(0)
    n = 4000
    brightness = rng.uniform(-60, 60, n)
    red_blue = rng.uniform(-40, 40, n)
    green_magenta = rng.normal(0, 8, n)
    rgb = np.stack([120 + brightness + red_blue - green_magenta / 2, 120 + brightness + green_magenta,
                    120 + brightness - red_blue - green_magenta / 2], 1)
    images = np.clip(rgb, 0, 255).astype(np.uint8).reshape(40, 10, 10, 3)
    w, spread = colour_whitening(images)
    px = images.reshape(-1, 3).astype(np.float64) / 127.5 - 1
    cov = np.cov(px.T)
    assert np.allclose(w @ cov @ w.T, spread.max() * np.eye(3), atol=1e-6 * spread.max())
    heaviest = w[np.argmax(np.linalg.norm(w, axis=1))]
    heaviest = heaviest / np.linalg.norm(heaviest)
    assert abs(heaviest @ np.array([-0.5, 1.0, -0.5]) / np.linalg.norm([-0.5, 1.0, -0.5])) > 0.95
    assert np.linalg.norm(w, axis=1).max() > 3  # sqrt of a spread ratio above 9
    plain = np.eye(3)  # the mutant: no whitening
    v = plain @ cov @ plain.T
    assert not np.allclose(v, v.max() * np.eye(3), atol=0.1 * v.max())
    with pytest.raises(ValueError, match="drawn pixels"):
        colour_whitening(np.full((2, 4, 4, 3), 255, np.uint8))


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
