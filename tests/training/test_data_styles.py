"""Dataset v2: Iconify SVG styles aligned to emojibase identities, and the
identity-balanced sampler. Fixtures are made here (tiny SVG sets beside the
fake PNG packages of support/emoji_packages.py); no npm, no network."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch

from lantern_studio.models.dataset import DatasetError, load_dataset, split_indices
from lantern_studio.training import captions, data, iconify, identities
from support.emoji_packages import HELD, PLAIN, THUMBS, _make_packages

STYLE_COLOURS = {"fluent-flat": "#c81e1e", "fluent-color": "#1ec81e", "emojione": "#1e1ec8"}


def _rect(colour: str, size: int) -> dict:
    q = size // 4
    return {"body": f'<rect x="{q}" y="{q}" width="{2 * q}" height="{2 * q}" fill="{colour}"/>'}


def _icon_set(root: Path, style: str, names: list[str], *, size: int, chars: dict | None,
              aliases: dict | None = None) -> Path:
    d = root / style / "package"
    d.mkdir(parents=True)
    doc = {"prefix": style, "icons": {n: _rect(STYLE_COLOURS[style], size) for n in names},
           "width": size, "height": size}
    if aliases:
        doc["aliases"] = {a: {"parent": p} for a, p in aliases.items()}
    (d / "icons.json").write_text(json.dumps(doc))
    if chars is not None:
        (d / "chars.json").write_text(json.dumps(chars))
    (d / "package.json").write_text(json.dumps({"name": f"@iconify-json/{style}", "version": "1.0.0",
                                                "license": "MIT"}))
    return d


@pytest.fixture()
def multi_style(tmp_path):
    google, twitter, eb = _make_packages(tmp_path / "pk")
    flat_names = ["thumbs-up", "thumbs-up-light", "thumbs-up-medium", "plain-thing", "not-an-emoji"]
    flat = _icon_set(tmp_path / "ic", "fluent-flat", flat_names, size=32, chars={
        THUMBS.lower(): "thumbs-up", f"{THUMBS.lower()}-1f3fb": "thumbs-up-light",
        f"{THUMBS.lower()}-1f3fd": "thumbs-up-medium", f"{PLAIN.lower()}-fe0f": "plain-thing",
        "1f9ff": "not-an-emoji",
    })
    # Same names, no code-point map of its own: aligned through fluent flat's.
    color = _icon_set(tmp_path / "ic", "fluent-color", flat_names, size=32, chars=None)
    # No code-point map at all: aligned by CLDR-name slug (and an alias).
    one = _icon_set(tmp_path / "ic", "emojione", ["thumbs-up", "thumbs-up-medium-skin-tone", "held-animal-old",
                                                 "mystery-shape"], size=64, chars=None,
                    aliases={"held-animal": "held-animal-old"})
    icon_dirs = {"fluent-flat": (flat, None), "fluent-color": (color, flat), "emojione": (one, None)}
    out = tmp_path / "out"
    manifest = data.build_from_extracted(google, twitter, eb, out, icon_dirs=icon_dirs, progress=False)
    return out, manifest


def test_every_style_is_aligned_to_the_emojibase_identity(multi_style):
    out, manifest = multi_style
    images, meta, _ = load_dataset(out, verify=True)
    by_style = Counter(m["style"] for m in meta)
    # thumbs: base + light + medium; plain; the unknown code point is left out.
    assert by_style["fluent-flat"] == 4 and by_style["fluent-color"] == 4
    # thumbs base + medium by name, held animal through its alias; "mystery-shape" has no label.
    assert by_style["emojione"] == 3
    assert manifest["icons_not_matched_to_emojibase"] == {"fluent-flat": 1, "fluent-color": 1, "emojione": 1}
    assert manifest["styles"] == ["google", "twitter", "fluent-flat", "fluent-color", "emojione"]
    caps = {m["caption"] for m in meta}
    assert {"thumbs up, fluent flat style", "thumbs up: light skin tone, fluent color style",
            "thumbs up: medium skin tone, emojione style", "held animal, emojione style",
            "plain thing, fluent flat style"} <= caps
    # All styles of one emoji share the PNG styles' identity string (FE0F kept where they use it).
    plain_ids = {m["identity"] for m in meta if m["name"] == "plain thing"}
    assert plain_ids == {f"{PLAIN}-FE0F"}
    thumbs = [m for m in meta if m["name"] == "thumbs up"]
    assert {m["identity"] for m in thumbs} == {THUMBS}
    light = [m for m in thumbs if m["style"] == "fluent-flat" and m["skin_tone"]]
    assert sorted(m["skin_tone"] for m in light) == ["light skin tone", "medium skin tone"]
    # The held-out split follows the identity in every style.
    assert {m["split"] for m in meta if m["identity"] == HELD} == {"heldout"}
    # Rasterised SVGs: style colour in the middle, white around.
    for img, m in zip(images, meta):
        if m["style"] in STYLE_COLOURS:
            want = [int(STYLE_COLOURS[m["style"]][i : i + 2], 16) for i in (1, 3, 5)]
            assert np.abs(img[32, 32].astype(int) - want).max() <= 1
            assert (img[2, 2] == 255).all()


def test_short_caption_strips_every_style():
    for words in captions.STYLE_WORDS.values():
        assert captions.short_caption(f"thumbs up: dark skin tone, {words} style") == "thumbs up: dark skin tone"
    assert captions.short_caption("a fashion style") == "a fashion style"


def _identity_shares(meta, rows, draws: torch.Tensor) -> dict[str, float]:
    c = Counter(meta[rows[int(i)]]["identity"] for i in draws)
    return {k: v / len(draws) for k, v in c.items()}


def _balanced(shares: dict[str, float], n_ids: int, tol: float) -> bool:
    return len(shares) == n_ids and all(abs(s - 1 / n_ids) <= tol for s in shares.values())


def test_identity_balanced_sampler_does_not_oversample_variant_heavy_identities(multi_style):
    out, _ = multi_style
    _, meta, _ = load_dataset(out)
    rows = [int(i) for i in split_indices(meta, "train")]
    per_id = Counter(meta[i]["identity"] for i in rows)
    # The fixture is lopsided: thumbs up has many more renderings than the others.
    assert per_id[THUMBS] >= 4 * min(per_id.values())
    w = identities.identity_weights(meta, rows)
    assert w.shape == (len(rows),) and abs(w.sum() - 1) < 1e-12
    for ident in per_id:  # each identity's total weight is equal
        assert abs(sum(w[j] for j, i in enumerate(rows) if meta[i]["identity"] == ident) - 1 / len(per_id)) < 1e-12
    # Statistical check, fixed seed: 20k draws, every identity within ±1.5 points of 1/n.
    g = torch.Generator().manual_seed(0)
    n = 20_000
    draws = torch.multinomial(torch.from_numpy(w), n, replacement=True, generator=g)
    assert _balanced(_identity_shares(meta, rows, draws), len(per_id), tol=0.015)
    # Mutant: uniform over rows (the v1 sampler) — the same check rejects it.
    uniform = torch.randint(0, len(rows), (n,), generator=torch.Generator().manual_seed(0))
    assert not _balanced(_identity_shares(meta, rows, uniform), len(per_id), tol=0.015)


def test_ar_prepare_carries_identity_weights(multi_style, tmp_path):
    """The AR trainer samples with the dataset's identity weights (prepare stores them)."""
    from lantern_studio.engine.tokenizer import VQArgs, VQModel, save_vq
    from lantern_studio.training import ar

    out, _ = multi_style
    vq = VQModel(VQArgs(ch=16, encoder_ch_mult=[1, 1, 1, 1], decoder_ch_mult=[1, 1, 1, 1], z_channels=16,
                        codebook_size=32, codebook_embed_dim=4, norm_groups=8))
    vq_path = tmp_path / "vq.safetensors"
    save_vq(vq, vq.args, vq_path)
    prep = ar.prepare(out, vq_path, tmp_path / "run", encoder="hash:16", length=6, shifts=[(0, 0)], log=lambda m: None)
    _, meta, _ = load_dataset(out)
    rows = [int(i) for i in split_indices(meta, "train")]
    assert torch.allclose(prep.weights[rows], torch.from_numpy(identities.identity_weights(meta, rows)))
    assert float(prep.weights[~prep.train].abs().sum()) == 0.0


def test_align_by_name_without_code_map():
    base = {"1F600": {"label": "grinning face", "hexcode": "1F600"}}
    skin = {"1F44D-1F3FB": {"label": "thumbs up: light skin tone", "hexcode": "1F44D-1F3FB"}}
    d = iconify.IconData({"grinning-face": {"body": ""}, "thumbs-up-light-skin-tone": {"body": ""},
                          "other": {"body": ""}}, {}, {}, 16, 16)
    assert iconify.align(d, base, skin) == [("thumbs-up-light-skin-tone", "1F44D-1F3FB"),
                                            ("grinning-face", "1F600")]


def test_unreadable_icon_set_is_one_clear_error(tmp_path):
    google, twitter, eb = _make_packages(tmp_path / "pk")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "icons.json").write_text("{not json")
    (bad / "package.json").write_text(json.dumps({"name": "@iconify-json/fluent-emoji-flat", "license": "MIT"}))
    with pytest.raises(DatasetError, match="fluent-flat: icons.json is not readable JSON"):
        data.build_from_extracted(google, twitter, eb, tmp_path / "o", icon_dirs={"fluent-flat": (bad, None)},
                                  progress=False)
