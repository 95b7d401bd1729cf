"""Fabricated emoji package folders (emoji-datasource PNG sets and emojibase data) for the
dataset build tests: a few train and held-out identities, skin tones, a name-less one."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import numpy as np
from PIL import Image

from lantern_studio.training import art_sets, identities

# --------------------------------------------------------------------------- #
# Fake packages
# --------------------------------------------------------------------------- #


def _codes(n_train: int, n_heldout: int) -> tuple[list[str], list[str]]:
    """Code points (as identities) landing in each split under the real split hash."""
    train, held = [], []
    cp = 0x1F400
    while len(train) < n_train or len(held) < n_heldout:
        code = f"{cp:X}"
        if identities.is_heldout(code):
            if len(held) < n_heldout:
                held.append(code)
        elif len(train) < n_train:
            train.append(code)
        cp += 1
    return train, held


TRAIN_CODES, HELD_CODES = _codes(3, 1)
THUMBS = TRAIN_CODES[0]  # has skin tones
PLAIN = TRAIN_CODES[1]  # plain emoji, FE0F only on the emoji-datasource side
NONAME = TRAIN_CODES[2]  # no emojibase entry → short_name fallback
HELD = HELD_CODES[0]

# RGBA colours of each fake rendering's opaque centre, per vendor.
COLOURS = {"google": (200, 30, 30, 255), "twitter": (30, 30, 200, 255)}


def _png(path: Path, centre: tuple[int, int, int, int], *, half: bool = False) -> None:
    """64×64 RGBA PNG: transparent black border, opaque centre, one half-alpha pixel."""
    arr = np.zeros((64, 64, 4), dtype=np.uint8)  # fully transparent *black*
    arr[16:48, 16:48] = centre
    if half:
        arr[0, 0] = (255, 0, 0, 128)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(arr, "RGBA").save(path)


def _datasource_entries() -> list[dict]:
    def flags(v: bool = True) -> dict:
        return {f"has_img_{v_}": v for v_ in ("apple", "google", "twitter", "facebook")}

    thumbs_skins = {
        key: {
            "unified": f"{THUMBS}-{key}",
            "image": f"{THUMBS.lower()}-{key.lower()}.png",
            "non_qualified": None,
            **flags(),
        }
        for key in ("1F3FB", "1F3FD")
    }
    return [
        {
            "name": "THUMBS UP SIGN", "unified": THUMBS, "non_qualified": None,
            "image": f"{THUMBS.lower()}.png", "short_name": "+1", "short_names": ["+1"],
            "category": "People & Body", "subcategory": "hand-fingers-closed",
            "sort_order": 1, **flags(), "skin_variations": thumbs_skins,
        },
        {
            "name": "PLAIN", "unified": f"{PLAIN}-FE0F", "non_qualified": PLAIN,
            "image": f"{PLAIN.lower()}-fe0f.png", "short_name": "plain_thing",
            "short_names": ["plain_thing"], "category": "Objects", "subcategory": "tool",
            "sort_order": 2, **flags(),
        },
        {
            "name": "NO NAME", "unified": NONAME, "non_qualified": None,
            "image": f"{NONAME.lower()}.png", "short_name": "mystery_box",
            "short_names": ["mystery_box"], "category": "Travel & Places",
            "subcategory": "transport-ground", "sort_order": 3,
            **flags(), "has_img_twitter": False,  # only the Google rendering exists
        },
        {
            "name": "HELD", "unified": HELD, "non_qualified": None,
            "image": f"{HELD.lower()}.png", "short_name": "held_out_one",
            "short_names": ["held_out_one"], "category": "Animals & Nature",
            "subcategory": "animal-mammal", "sort_order": 4, **flags(),
        },
    ]


def _emojibase_entries() -> list[dict]:
    return [
        {
            "label": "thumbs up", "hexcode": THUMBS.lower(), "emoji": "x", "text": "",
            "type": 1, "order": 1, "group": 1, "subgroup": 3, "tags": ["+1", "hand", "up"],
            "version": 0.6,
            "skins": [
                # Only the medium tone has an emojibase skin entry; light is composed.
                {"label": "thumbs up: medium skin tone", "hexcode": f"{THUMBS}-1F3FD",
                 "emoji": "x", "text": "", "type": 1, "order": 3, "group": 1, "subgroup": 3,
                 "tone": 3, "version": 1},
            ],
        },
        {
            "label": "plain thing", "hexcode": PLAIN, "emoji": "x", "text": "", "type": 1,
            "order": 2, "group": 2, "subgroup": 7, "tags": ["plain", "thing"], "version": 1,
        },
        {
            "label": "held animal", "hexcode": HELD, "emoji": "x", "text": "", "type": 1,
            "order": 4, "group": 0, "subgroup": 5, "tags": ["animal"], "version": 1,
        },
    ]


GROUPS = {
    "groups": {"0": "animals-nature", "1": "people-body", "2": "objects"},
    "hierarchy": {"0": [5], "1": [3], "2": [7]},
    "subgroups": {"3": "hand-fingers-closed", "5": "animal-mammal", "7": "tool"},
}


def _make_packages(root: Path) -> tuple[Path, Path, Path]:
    entries = _datasource_entries()
    dirs = {}
    for vendor in art_sets.VENDORS:
        d = root / f"emoji-datasource-{vendor}" / "package"
        d.mkdir(parents=True)
        (d / "emoji.json").write_text(json.dumps(entries))
        (d / "package.json").write_text(
            json.dumps({"name": f"emoji-datasource-{vendor}", "version": "16.0.0", "license": "MIT"})
        )
        for e in entries:
            items = [e, *(e.get("skin_variations") or {}).values()]
            for it in items:
                if it.get(f"has_img_{vendor}"):
                    _png(d / "img" / vendor / "64" / it["image"], COLOURS[vendor], half=True)
        # Apple artwork present in the folder must never be used.
        _png(d / "img" / "apple" / "64" / entries[0]["image"], (0, 255, 0, 255))
        dirs[vendor] = d
    eb = root / "emojibase-data" / "package"
    (eb / "en").mkdir(parents=True)
    (eb / "meta").mkdir()
    (eb / "en" / "data.json").write_text(json.dumps(_emojibase_entries()))
    (eb / "meta" / "groups.json").write_text(json.dumps(GROUPS))
    (eb / "package.json").write_text(json.dumps({"name": "emojibase-data", "version": "17.0.0",
                                                 "license": "MIT"}))
    return dirs["google"], dirs["twitter"], eb


# --------------------------------------------------------------------------- #
# Fake Iconify art-set packages and tarballs (the licence rule's tests)
# --------------------------------------------------------------------------- #


def make_icon_set(root: Path, package: str, icons: dict[str, str], *, license: str | None = "MIT",
                  info_spdx: str | None = None, chars: dict | None = None, size: int = 32) -> Path:
    """An extracted ``@iconify-json/…`` package folder: ``icons.json`` of one filled square per
    icon (name → colour), ``package.json`` with ``license`` (left out when None), ``info.json``
    with ``license.spdx`` when ``info_spdx`` is given, ``chars.json`` when ``chars`` is."""
    d = root / package.replace("/", "+") / "package"
    d.mkdir(parents=True)
    q = size // 4
    doc = {"prefix": package.rsplit("/", 1)[-1], "width": size, "height": size,
           "icons": {n: {"body": f'<rect x="{q}" y="{q}" width="{2 * q}" height="{2 * q}" fill="{c}"/>'}
                     for n, c in icons.items()}}
    (d / "icons.json").write_text(json.dumps(doc))
    pj = {"name": package, "version": "1.0.0"}
    if license is not None:
        pj["license"] = license
    (d / "package.json").write_text(json.dumps(pj))
    if info_spdx is not None:
        (d / "info.json").write_text(json.dumps({"prefix": doc["prefix"], "license": {"spdx": info_spdx}}))
    if chars is not None:
        (d / "chars.json").write_text(json.dumps(chars))
    return d


def pack(src: Path, dest: Path) -> Path:
    """An npm-style tarball of package folder ``src`` (its files under ``package/``)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(dest, "w:gz") as tf:
        tf.add(src, arcname="package")
    return dest
