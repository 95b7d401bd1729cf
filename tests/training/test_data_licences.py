"""The data build's licence rule and the opt-in art sets (training/data.py, npm_packages.py,
iconify.py), on fake packages (support/emoji_packages.py); no real npm, no network."""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import shutil
import stat
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from lantern_studio import about, paths
from lantern_studio.engine.files import sha256_file
from lantern_studio.models.dataset import IMAGES_FILE, MANIFEST_FILE, META_FILE, DatasetError, load_dataset
from lantern_studio.training import art_sets, data, iconify, npm_packages

from support.emoji_packages import HELD, PLAIN, THUMBS, _make_packages, make_icon_set, pack

REAL = iconify.sets_by_style()
NOTO, FX, STREAM = REAL["noto-blob"], REAL["fxemoji"], REAL["streamline"]
COLOURS = {"noto-blob": "#c81e1e", "fxemoji": "#1ec81e", "streamline": "#1e1ec8"}


def _sets(root: Path, *, noto_licence="Apache-2.0", noto_info="Apache-2.0") -> dict[str, Path]:
    """Fake packages of the three opt-in sets, each named the way its real set names icons."""
    c = COLOURS
    return {
        # CLDR slugs, like Noto v1
        "noto-blob": make_icon_set(root, NOTO.package, {"thumbs-up": c["noto-blob"], "plain-thing": c["noto-blob"],
                                                        "not-an-emoji": c["noto-blob"]},
                                   license=noto_licence, info_spdx=noto_info),
        # Unicode names without separators, like Firefox OS ("THUMBS UP SIGN" in emoji-datasource)
        "fxemoji": make_icon_set(root, FX.package, {"thumbsupsign": c["fxemoji"], "plainthing": c["fxemoji"],
                                                    "foxweary": c["fxemoji"]},
                                 license="Apache-2.0", info_spdx="Apache-2.0"),
        # numbered variants, like Streamline; CC-BY-4.0 (its attribution is recorded in iconify.py)
        "streamline": make_icon_set(root, STREAM.package, {"thumbs-up-1": c["streamline"],
                                                           "thumbs-up-2": "#000000", "held-animal": c["streamline"]},
                                    license="CC-BY-4.0", info_spdx="CC-BY-4.0"),
    }


def _build(tmp_path: Path, icon_dirs: dict[str, Path], out: str = "out") -> dict:
    google, twitter, eb = _make_packages(tmp_path / f"pk-{out}")
    return data.build_from_extracted(google, twitter, eb, tmp_path / out, progress=False,
                                     icon_dirs={s: (d, None) for s, d in icon_dirs.items()})


# --------------------------------------------------------------------------- #
# An allowed set is taken
# --------------------------------------------------------------------------- #


def test_allowed_sets_are_taken_aligned_and_attributed(tmp_path):
    manifest = _build(tmp_path, _sets(tmp_path / "ic"))
    images, meta, _ = load_dataset(tmp_path / "out", verify=True)
    by_style: dict[str, list[dict]] = {}
    for m in meta:
        by_style.setdefault(m["style"], []).append(m)
    assert manifest["styles"] == ["google", "twitter", "noto-blob", "fxemoji", "streamline"]
    assert sorted(m["identity"] for m in by_style["noto-blob"]) == sorted([THUMBS, f"{PLAIN}-FE0F"])
    # fxemoji: by the Unicode name (THUMBS UP SIGN) and the compacted label; the fox is no emoji
    assert sorted(m["identity"] for m in by_style["fxemoji"]) == sorted([THUMBS, f"{PLAIN}-FE0F"])
    # streamline: the first numbered variant, and the plain slug
    assert sorted(m["identity"] for m in by_style["streamline"]) == sorted([THUMBS, HELD])
    assert manifest["icons_not_matched_to_emojibase"] == {"noto-blob": 1, "fxemoji": 1, "streamline": 1}
    for img, m in zip(images, meta):
        if m["style"] in COLOURS:  # the chosen icon's colour in the middle (not variant 2's black), white around
            want = [int(COLOURS[m["style"]][i: i + 2], 16) for i in (1, 3, 5)]
            assert np.abs(img[32, 32].astype(int) - want).max() <= 1 and (img[2, 2] == 255).all()
    assert "thumbs up, noto blob style" in {m["caption"] for m in meta}
    assert manifest["licences"][NOTO.package] == "Apache-2.0"
    assert manifest["licences"][STREAM.package] == "CC-BY-4.0"
    assert manifest["licences"]["emojibase-data"] == "MIT"
    assert manifest["attributions"]["streamline"] == STREAM.attribution and "Streamline" in STREAM.attribution
    assert "noto-blob" not in manifest["attributions"]  # Apache-2.0 asks for none


# --------------------------------------------------------------------------- #
# Refusals: each one line naming the package and why; nothing written
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("licence, info, why", [
    (None, "Apache-2.0", "no licence declared (package.json has none)"),
    ("CC-BY-SA-4.0", "CC-BY-SA-4.0", "licence CC-BY-SA-4.0 is not allowed"),
    ("UNLICENSED", None, "licence UNLICENSED is not allowed"),
    ("Apache-2.0", "CC-BY-SA-4.0", "its licence declarations disagree (package.json says Apache-2.0, "
                                   "info.json says CC-BY-SA-4.0)"),
])
def test_a_set_whose_licence_is_missing_not_allowed_or_contradicted_is_refused(tmp_path, licence, info, why):
    sets = _sets(tmp_path / "ic", noto_licence=licence, noto_info=info)
    with pytest.raises(DatasetError) as exc:
        _build(tmp_path, sets)
    msg = str(exc.value)
    assert msg.startswith(f"refused {NOTO.package}: ") and why in msg and "\n" not in msg
    assert not (tmp_path / "out").exists()


def test_cc_by_without_a_recorded_attribution_is_refused(tmp_path):
    # fluent-flat records no attribution (its real licence is MIT); as CC-BY it must not pass
    d = make_icon_set(tmp_path / "ic", "@iconify-json/fluent-emoji-flat", {"thumbs-up": "#123456"},
                      license="CC-BY-4.0", chars={THUMBS.lower(): "thumbs-up"})
    with pytest.raises(DatasetError, match=r"^refused @iconify-json/fluent-emoji-flat: CC-BY-4.0 requires an "
                                           r"attribution and none is recorded for it$"):
        _build(tmp_path, {"fluent-flat": d})
    # The same with MIT is taken
    d2 = make_icon_set(tmp_path / "ic2", "@iconify-json/fluent-emoji-flat", {"thumbs-up": "#123456"},
                       license="MIT", chars={THUMBS.lower(): "thumbs-up"})
    assert _build(tmp_path, {"fluent-flat": d2}, out="out2")["counts_per_style"]["fluent-flat"] == 1


def test_an_unlicensed_base_package_is_refused_too(tmp_path):
    google, twitter, eb = _make_packages(tmp_path / "pk")
    (eb / "package.json").write_text(json.dumps({"name": "emojibase-data", "version": "17.0.0"}))
    with pytest.raises(DatasetError, match=r"^refused emojibase-data: no licence declared"):
        data.build_from_extracted(google, twitter, eb, tmp_path / "out", progress=False)


def test_licence_rule_allowlist():
    assert npm_packages.ALLOWED_LICENCES == {"Apache-2.0": False, "MIT": False, "CC-BY-4.0": True}
    # every pinned set's recorded licence text names an allowed licence; CC-BY ones carry an attribution
    for s in iconify.ALL_ICON_SETS:
        assert ("CC-BY" in s.license) == bool(s.attribution), s.style
        assert "SA" not in s.license


# --------------------------------------------------------------------------- #
# Pins: unpinned and mismatched tarballs are refused by build()
# --------------------------------------------------------------------------- #


def _fake_npm(tmp_path: Path, payload: Path) -> Path:
    """A stand-in `npm`: `npm pack NAME@VER --json` copies ``payload`` into the cwd."""
    script = tmp_path / "bin" / "npm"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(f"#!/bin/sh\ncp '{payload}' ./{payload.name}\necho '[{{\"filename\": \"{payload.name}\"}}]'\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


@pytest.fixture()
def tarballs(tmp_path, monkeypatch):
    """Downloads folder with the fake base packages pinned (as data.PACKAGES) and a fake noto-v1
    tarball; returns (downloads folder, noto IconSet pinned to that tarball's sha256)."""
    pk = tmp_path / "downloads"
    specs = []
    for d, real in zip(_make_packages(tmp_path / "src"), npm_packages.PACKAGES):
        tgz = pack(d, pk / real.tarball_name)
        specs.append(npm_packages.PackageSpec(real.name, real.version, sha256_file(tgz)))
    monkeypatch.setattr(data, "PACKAGES", tuple(specs))
    noto_dir = _sets(tmp_path / "ic")["noto-blob"]
    tgz = pack(noto_dir, pk / npm_packages.PackageSpec(NOTO.package, NOTO.version, "").tarball_name)
    return pk, dataclasses.replace(NOTO, sha256=sha256_file(tgz))


def _only_extra(monkeypatch, s: iconify.IconSet) -> None:
    monkeypatch.setattr(iconify, "ICON_SETS", ())
    monkeypatch.setattr(iconify, "EXTRA_ICON_SETS", (s,))
    monkeypatch.setattr(iconify, "ALL_ICON_SETS", (s,))


def test_pinned_allowed_set_is_built_from_its_tarball(tarballs, monkeypatch, tmp_path):
    pk, noto = tarballs
    _only_extra(monkeypatch, noto)
    monkeypatch.setattr(shutil, "which", lambda name: None)  # every tarball is there: npm not needed
    out = tmp_path / "v5"
    args = argparse.Namespace(out=out, packages_dir=pk, force=False, sets="all")
    assert data.run(args) == 0
    _, meta, manifest = load_dataset(out, verify=True)
    assert Counter(m["style"] for m in meta)["noto-blob"] == 2
    assert {"name": noto.package, "version": noto.version, "sha256": noto.sha256,
            "tarball": f"iconify-json-noto-v1-{noto.version}.tgz", "license": "Apache-2.0"} in manifest["packages"]
    # The default selection leaves the opt-in set out, even with its tarball at hand.
    out2 = tmp_path / "default"
    m2 = data.build(out2, pk, progress=False)
    assert "noto-blob" not in m2["styles"] and {p["name"] for p in m2["packages"]} == {
        "emoji-datasource-google", "emoji-datasource-twitter", "emojibase-data"}


def test_unpinned_set_is_refused_before_anything_is_fetched(tarballs, monkeypatch, tmp_path, capsys):
    pk, noto = tarballs
    _only_extra(monkeypatch, dataclasses.replace(noto, sha256=""))
    called = []
    monkeypatch.setattr(shutil, "which", lambda name: called.append(name))
    before = sorted(p.name for p in pk.iterdir())
    args = argparse.Namespace(out=tmp_path / "v5", packages_dir=pk, force=False, sets="all")
    assert data.run(args) == 1
    err = capsys.readouterr().err.strip()
    assert err == f"error: refused {noto.package}@{noto.version}: not pinned (no tarball sha256)"
    assert called == [] and sorted(p.name for p in pk.iterdir()) == before
    assert not (tmp_path / "v5").exists()


def test_mismatched_tarball_is_refused_and_not_kept(tarballs, monkeypatch, tmp_path, capsys):
    pk, noto = tarballs
    wrong = "1" * 64
    _only_extra(monkeypatch, dataclasses.replace(noto, sha256=wrong))
    tgz = pk / f"iconify-json-noto-v1-{noto.version}.tgz"
    served = tmp_path / "served" / tgz.name  # what the registry hands out: not the pinned bytes
    served.parent.mkdir()
    shutil.move(tgz, served)
    npm = _fake_npm(tmp_path, served)
    monkeypatch.setattr(shutil, "which", lambda name: str(npm))
    args = argparse.Namespace(out=tmp_path / "v5", packages_dir=pk, force=False, sets="all")
    assert data.run(args) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]  # after the progress lines
    assert err.startswith(f"error: refused {noto.package}@{noto.version}: tarball sha256 mismatch: pinned {wrong}, "
                          f"got {noto.sha256}") and "\n" not in err
    assert not tgz.exists() and not (tmp_path / "v5" / MANIFEST_FILE).exists()


def test_real_pins_of_the_opt_in_sets():
    assert [s.style for s in iconify.EXTRA_ICON_SETS] == ["noto-blob", "fxemoji", "streamline"]
    assert [s.spec for s in iconify.EXTRA_ICON_SETS] == [
        "@iconify-json/noto-v1@1.2.5", "@iconify-json/fxemoji@1.2.2", "@iconify-json/streamline-emojis@1.2.4"]
    for s in iconify.EXTRA_ICON_SETS:
        npm_packages.check_pinned(npm_packages.PackageSpec(s.package, s.version, s.sha256))
        assert npm_packages.PACKAGE_SHA256[s.package] == s.sha256
    # today's pins are untouched by the opt-in sets
    assert [p.name for p in npm_packages.PACKAGES] == [
        "emoji-datasource-google", "emoji-datasource-twitter", "emojibase-data",
        "@iconify-json/fluent-emoji-flat", "@iconify-json/fluent-emoji", "@iconify-json/emojione"]


# --------------------------------------------------------------------------- #
# Opt-in: today's dataset unchanged, new styles appended, a folder of their own
# --------------------------------------------------------------------------- #


def test_selection_order_and_default_folders(monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "data_dir", lambda: tmp_path / "data")
    today = [s.style for s in iconify.ICON_SETS]
    assert art_sets.select_sets("default") == art_sets.select_sets(None) == iconify.ICON_SETS
    assert [s.style for s in art_sets.select_sets("all")] == [*today, "noto-blob", "fxemoji", "streamline"]
    # any order asked for comes out in canonical order, today's sets always first
    assert [s.style for s in art_sets.select_sets("streamline,noto-blob")] == [*today, "noto-blob", "streamline"]
    with pytest.raises(DatasetError, match=r"^unknown art set openmoji \(known: default, all, google"):
        art_sets.select_sets("openmoji")
    assert art_sets.out_dir_for(art_sets.select_sets("default")) == tmp_path / "data" / "emoji64"
    assert art_sets.out_dir_for(art_sets.select_sets("all")) == tmp_path / "data" / "emoji64-v5"
    assert art_sets.out_dir_for(art_sets.select_sets("fxemoji")) == tmp_path / "data" / "emoji64-v5-fxemoji"
    parser = argparse.ArgumentParser()
    data.add_arguments(parser)
    assert parser.parse_args([]).sets == "default" and parser.parse_args(["--sets", "all"]).sets == "all"


def test_adding_sets_keeps_todays_rows_byte_for_byte(tmp_path):
    google, twitter, eb = _make_packages(tmp_path / "pk")
    flat = make_icon_set(tmp_path / "ic", "@iconify-json/fluent-emoji-flat", {"thumbs-up": "#c81e1e"},
                         chars={THUMBS.lower(): "thumbs-up"})
    today = data.build_from_extracted(google, twitter, eb, tmp_path / "today", progress=False,
                                      icon_dirs={"fluent-flat": (flat, None)})
    extra = {s: (d, None) for s, d in _sets(tmp_path / "ic2").items()}
    more = data.build_from_extracted(google, twitter, eb, tmp_path / "more", progress=False,
                                     icon_dirs={"fluent-flat": (flat, None), **extra})
    n = today["counts"]["total"]
    assert more["counts"]["total"] > n and more["styles"][: len(today["styles"])] == today["styles"]
    a, b = np.load(tmp_path / "today" / IMAGES_FILE), np.load(tmp_path / "more" / IMAGES_FILE)
    assert np.array_equal(a, b[:n])
    lines_a = (tmp_path / "today" / META_FILE).read_bytes().splitlines(keepends=True)
    lines_b = (tmp_path / "more" / META_FILE).read_bytes().splitlines(keepends=True)
    assert lines_b[:n] == lines_a
    assert hashlib.sha256(b"".join(lines_a)).hexdigest() == today["files"][META_FILE]["sha256"]


def test_a_set_adds_pictures_to_todays_identities_never_identities_of_its_own(tmp_path):
    google, twitter, eb = _make_packages(tmp_path / "pk")
    entries = json.loads((eb / "en" / "data.json").read_text())
    entries.append({"label": "regional indicator B", "hexcode": "1F1E7", "emoji": "x", "text": "", "type": 1,
                    "order": 9, "version": 2})  # emojibase knows it; neither PNG set draws it
    (eb / "en" / "data.json").write_text(json.dumps(entries))
    fx = make_icon_set(tmp_path / "ic", FX.package, {"regionalindicatorb": "#00ff00", "plainthing": "#00ff00"},
                       license="Apache-2.0")
    manifest = data.build_from_extracted(google, twitter, eb, tmp_path / "out", progress=False,
                                         icon_dirs={"fxemoji": (fx, None)})
    _, meta, _ = load_dataset(tmp_path / "out")
    assert [m["identity"] for m in meta if m["style"] == "fxemoji"] == [f"{PLAIN}-FE0F"]
    assert "1F1E7" not in {m["identity"] for m in meta}
    assert manifest["icons_outside_png_identities"] == {"fxemoji": 1}
    assert manifest["identities"]["total"] == 4  # the PNG styles' four


# --------------------------------------------------------------------------- #
# Loose alignment
# --------------------------------------------------------------------------- #


def test_loose_alignment_only_where_asked():
    base = {"1F600": {"label": "grinning face", "hexcode": "1F600"},
            "23F0": {"label": "alarm clock", "hexcode": "23F0"},
            "1F426": {"label": "bird", "hexcode": "1F426"},
            "1F44D": {"label": "thumbs up", "hexcode": "1F44D"}}
    names = {"thumbsupsign": "1F44D", "grinning": "1F600"}
    icons = {n: {"body": ""} for n in ("alarmclock", "bird-2", "bird-1", "thumbsupsign", "grinning-face", "grinning",
                                       "foxweary")}
    d = iconify.IconData(icons, {}, {}, 16, 16)
    assert iconify.align(d, base, {}) == [("grinning-face", "1F600")]  # slug pass only: today's sets
    assert iconify.align(d, base, {}, names) == [  # sorted by code
        ("bird-1", "1F426"), ("thumbsupsign", "1F44D"), ("grinning-face", "1F600"), ("alarmclock", "23F0")]


def test_fixed_codes_win_and_keep_their_icons_out_of_name_matching():
    base = {"1F408": {"label": "cat", "hexcode": "1F408"}, "1F431": {"label": "cat face", "hexcode": "1F431"},
            "1F52B": {"label": "water pistol", "hexcode": "1F52B"}}
    icons = {n: {"body": ""} for n in ("cat", "catside", "pistol")}
    d = iconify.IconData(icons, {}, {}, 16, 16)
    names = {"pistol": "1F52B"}
    assert iconify.align(d, base, {}, names) == [("cat", "1F408"), ("pistol", "1F52B")]  # by name: wrong
    fixed = (("cat", "1F431"), ("catside", "1F408"), ("pistol", ""))
    assert iconify.align(d, base, {}, names, fixed) == [("catside", "1F408"), ("cat", "1F431")]
    fx = iconify.sets_by_style()["fxemoji"]
    assert ("cat", "1F431") in fx.codes and ("catside", "1F408") in fx.codes


def test_about_box_names_every_art_set_its_licence_and_attribution(tmp_path):
    text = about.about_text(card=tmp_path / "no-card.md")  # the built-in list
    words = {"MIT": "MIT License", "Apache-2.0": "Apache License 2.0", "CC-BY-4.0": "CC-BY 4.0"}
    for s in iconify.ALL_ICON_SETS:
        line = next((ln for ln in text.splitlines() if f"`{s.package}`" in ln), None)
        assert line is not None, s.package
        spdx = next(k for k in words if words[k] in s.license)  # the licence recorded with the set
        assert words[spdx] in line, s.package
        if s.attribution:  # the credit CC-BY asks for, in the words the set records it
            who = s.attribution.split(" by ")[-1].split(" (")[0].split(",")[0]
            assert who in line, (s.package, who)
    assert "Twitter, Inc and other contributors" in text
