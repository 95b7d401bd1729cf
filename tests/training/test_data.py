"""Dataset build (training/data.py) from fabricated package folders, and fetching the pinned
packages (training/npm_packages.py) with a stand-in npm; no real npm, no network."""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import shutil
import stat
import tarfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from lantern_studio.engine.files import sha256_file
from lantern_studio.models.dataset import (IMAGES_FILE, MANIFEST_FILE, META_FILE, SPLITS, DatasetError, load_dataset,
                                          split_indices)
from lantern_studio.training import captions, data, identities, npm_packages
from lantern_studio.training.iconify import compose_on_white

from support.emoji_packages import COLOURS, HELD, PLAIN, THUMBS, _make_packages


@pytest.fixture()
def packages(tmp_path):
    return _make_packages(tmp_path / "pk")


@pytest.fixture()
def built(packages, tmp_path):
    out = tmp_path / "out"
    manifest = data.build_from_extracted(*packages, out, progress=False)
    return out, manifest


# --------------------------------------------------------------------------- #
# Composing, captions, split, manifest
# --------------------------------------------------------------------------- #


def test_images_shape_dtype_and_white_compositing(built):
    out, manifest = built
    images, meta, loaded = load_dataset(out, verify=True)
    assert loaded == manifest
    # thumbs: 3 renderings × 2 vendors, plain: 2, noname: google only, held: 2
    assert images.shape == (6 + 2 + 1 + 2, 64, 64, 3)
    assert images.dtype == np.uint8
    assert len(meta) == images.shape[0]
    for img, m in zip(images, meta):
        colour = np.array(COLOURS[m["vendor"]][:3])
        # Opaque centre keeps its colour; the transparent *black* border → white.
        assert img[32, 32].tolist() == colour.tolist()
        assert (img[20, 4] == 255).all() and (img[63, 63] == 255).all()
        assert img[0, 0].tolist() == [255, 127, 127]  # half-alpha red over white
    # No Apple artwork (pure green) anywhere.
    assert not ((images[..., 1] > 240) & (images[..., 0] < 20)).any()


def test_compose_on_white_exact():
    arr = np.zeros((64, 64, 4), dtype=np.uint8)
    arr[0, 0] = (0, 0, 0, 0)
    arr[0, 1] = (255, 0, 0, 128)
    arr[0, 2] = (10, 20, 30, 255)
    out = compose_on_white(Image.fromarray(arr, "RGBA"))
    assert out.shape == (64, 64, 3) and out.dtype == np.uint8
    assert out[0, 0].tolist() == [255, 255, 255]
    assert out[0, 1].tolist() == [255, 127, 127]
    assert out[0, 2].tolist() == [10, 20, 30]
    # Other modes (grey + alpha, palette) go through RGBA too.
    # Other sizes are resized to 64×64.
    small = Image.new("RGBA", (16, 16), (10, 20, 30, 255))
    assert compose_on_white(small).shape == (64, 64, 3)
    assert (compose_on_white(small) == np.array([10, 20, 30])).all()
    la = Image.fromarray(np.dstack([np.full((64, 64), 0, np.uint8), np.zeros((64, 64), np.uint8)]), "LA")
    assert (compose_on_white(la) == 255).all()


def test_captions_and_metadata(built):
    out, _ = built
    _, meta, _ = load_dataset(out)
    caps = [m["caption"] for m in meta]
    assert caps == [
        "thumbs up, google style",
        "thumbs up, twitter style",
        "thumbs up: light skin tone, google style",
        "thumbs up: light skin tone, twitter style",
        "thumbs up: medium skin tone, google style",
        "thumbs up: medium skin tone, twitter style",
        "plain thing, google style",
        "plain thing, twitter style",
        "mystery box, google style",
        "held animal, google style",
        "held animal, twitter style",
    ]
    keys = {"caption", "identity", "name", "vendor", "skin_tone", "group", "subgroup", "tags", "split"}
    for m in meta:
        assert keys <= set(m)
    t = meta[4]
    assert t["identity"] == THUMBS and t["name"] == "thumbs up" and t["vendor"] == "google"
    assert t["skin_tone"] == "medium skin tone"
    assert t["group"] == "people-body" and t["subgroup"] == "hand-fingers-closed"
    assert t["tags"] == ["+1", "hand", "up"]
    assert meta[0]["skin_tone"] is None
    # FE0F on one side only, lowercase hexcode on the other: still matched.
    p = meta[6]
    assert p["identity"] == f"{PLAIN}-FE0F" and p["group"] == "objects" and p["tags"] == ["plain", "thing"]
    # Fallbacks without an emojibase entry: short_name, slugged category.
    n = meta[8]
    assert n["name"] == "mystery box" and n["group"] == "travel-places"
    assert n["subgroup"] == "transport-ground" and n["tags"] == []


def test_skin_tone_words():
    assert captions.skin_tone_words("1F3FD") == "medium skin tone"
    assert captions.skin_tone_words("1F3FB-1F3FF") == "light skin tone, dark skin tone"
    assert captions.skin_tone_words("1F3FC-1F3FC") == "medium-light skin tone"


def test_split_is_by_identity_and_deterministic(built, packages, tmp_path):
    out, manifest = built
    images, meta, _ = load_dataset(out)
    by_split = {s: {m["identity"] for m in meta if m["split"] == s} for s in SPLITS}
    assert by_split["heldout"] == {HELD}
    assert not (by_split["train"] & by_split["heldout"])
    held = split_indices(meta, "heldout")
    train = split_indices(meta, "train")
    assert held.dtype == np.int64 and held.tolist() == [9, 10]
    assert sorted(held.tolist() + train.tolist()) == list(range(len(meta)))
    with pytest.raises(ValueError, match="split"):
        split_indices(meta, "test")
    assert manifest["counts"] == {"train": 9, "heldout": 2, "total": 11}
    assert manifest["identities"] == {"total": 4, "train": 3, "heldout": 1}

    # Rebuilding elsewhere gives byte-identical files.
    out2 = tmp_path / "out2"
    m2 = data.build_from_extracted(*packages, out2, progress=False)
    assert m2["files"] == manifest["files"]


def test_split_hash_is_stable_and_about_four_percent():
    # Pinned values: sha256-based, independent of PYTHONHASHSEED and of the dataset.
    assert identities.heldout_score("1F600") == pytest.approx(
        int.from_bytes(hashlib.sha256(f"{identities.SPLIT_SALT}:1F600".encode()).digest()[:8], "big") / 2**64
    )
    # FE0F and case do not change an identity's split.
    assert identities.heldout_score("2764-fe0f") == identities.heldout_score("2764")
    codes = [f"{cp:X}" for cp in range(0x1F000, 0x1F000 + 5000)]
    frac = sum(map(identities.is_heldout, codes)) / len(codes)
    assert 0.03 < frac < 0.05


def test_manifest_hashes_match_files(built):
    out, manifest = built
    for name in (IMAGES_FILE, META_FILE):
        digest = hashlib.sha256((out / name).read_bytes()).hexdigest()
        assert manifest["files"][name]["sha256"] == digest
    on_disk = json.loads((out / MANIFEST_FILE).read_text())
    assert on_disk == manifest
    assert manifest["subgroups"] == ["animal-mammal", "hand-fingers-closed", "tool", "transport-ground"]
    assert {p["name"] for p in manifest["packages"]} == {
        "emoji-datasource-google", "emoji-datasource-twitter", "emojibase-data"}
    assert data.complete_manifest(out, check_pins=False) == manifest
    # A damaged file makes the dataset incomplete.
    with open(out / META_FILE, "a") as fh:
        fh.write("\n")
    assert data.complete_manifest(out, check_pins=False) is None
    with pytest.raises(DatasetError, match="does not match"):
        load_dataset(out, verify=True)
    # No temporary files left behind.
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [IMAGES_FILE, META_FILE, MANIFEST_FILE])


def test_load_dataset_missing(tmp_path):
    with pytest.raises(DatasetError, match="lantern-studio train data"):
        load_dataset(tmp_path / "nothing")


# --------------------------------------------------------------------------- #
# Fetching: npm missing, hash mismatch, reuse — all without npm
# --------------------------------------------------------------------------- #


def test_missing_npm_is_a_clear_error(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    spec = npm_packages.GOOGLE_PACKAGE
    with pytest.raises(DatasetError) as exc:
        npm_packages.fetch_package(spec, tmp_path / "pk")
    assert "npm is required to fetch the emoji packages; install Node.js/npm" in str(exc.value)
    assert spec.spec in str(exc.value)

    args = argparse.Namespace(out=tmp_path / "out", packages_dir=tmp_path / "pk", force=False)
    assert data.run(args) == 1
    assert "npm is required" in capsys.readouterr().err
    assert not (tmp_path / "out" / MANIFEST_FILE).exists()


def _fake_npm(tmp_path: Path, payload: bytes, filename: str) -> Path:
    """A stand-in `npm` executable: `npm pack X --json` writes payload to cwd/filename."""
    (tmp_path / "payload.bin").write_bytes(payload)
    script = tmp_path / "bin" / "npm"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(
        "#!/bin/sh\n"
        f"cp '{tmp_path / 'payload.bin'}' ./{filename}\n"
        f"echo '[{{\"filename\": \"{filename}\"}}]'\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def test_hash_mismatch_is_a_clear_error(monkeypatch, tmp_path):
    spec = npm_packages.PackageSpec("emoji-datasource-google", "16.0.0", "0" * 64)
    npm = _fake_npm(tmp_path, b"not the pinned tarball", spec.tarball_name)
    monkeypatch.setattr(shutil, "which", lambda name: str(npm))
    pk = tmp_path / "pk"
    with pytest.raises(DatasetError) as exc:
        npm_packages.fetch_package(spec, pk)
    msg = str(exc.value)
    assert "sha256 mismatch" in msg and spec.spec in msg and "0" * 64 in msg
    assert list(pk.iterdir()) == []  # the bad tarball was not kept

    # Pinned to the right hash, the same fake npm "download" is accepted and kept.
    good = npm_packages.PackageSpec(spec.name, spec.version,
                                    hashlib.sha256(b"not the pinned tarball").hexdigest())
    path = npm_packages.fetch_package(good, pk)
    assert path == pk / good.tarball_name and path.read_bytes() == b"not the pinned tarball"


def test_matching_tarball_is_reused_without_npm(monkeypatch, tmp_path):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    pk = tmp_path / "pk"
    pk.mkdir()
    payload = b"already here"
    spec = npm_packages.PackageSpec("emojibase-data", "17.0.0", hashlib.sha256(payload).hexdigest())
    (pk / spec.tarball_name).write_bytes(payload)
    assert npm_packages.fetch_package(spec, pk) == pk / spec.tarball_name


def _tarball(src: Path, dest: Path) -> None:
    with tarfile.open(dest, "w:gz") as tf:
        tf.add(src, arcname="package")
        evil = tarfile.TarInfo("package/../../evil.json")
        blob = b"{}"
        evil.size = len(blob)
        tf.addfile(evil, io.BytesIO(blob))


def test_build_end_to_end_from_tarballs(monkeypatch, tmp_path, packages):
    """build(): reuse pinned tarballs, extract only what is needed, build, then reuse."""
    pk = tmp_path / "downloads"
    pk.mkdir()
    specs = []
    for pkg_dir, real in zip(packages, npm_packages.PACKAGES):
        tgz = pk / real.tarball_name
        _tarball(pkg_dir, tgz)
        specs.append(npm_packages.PackageSpec(real.name, real.version, sha256_file(tgz)))
    # build() reads the pins where data.py looks them up, and hands them to fetch_packages
    monkeypatch.setattr(data, "PACKAGES", tuple(specs))
    monkeypatch.setattr(shutil, "which", lambda name: None)  # npm must not be needed

    out = tmp_path / "emoji64"
    args = argparse.Namespace(out=out, packages_dir=pk, force=False)
    assert data.run(args) == 0
    images, meta, manifest = load_dataset(out, verify=True)
    assert images.shape[0] == 11
    assert [(p["name"], p["sha256"]) for p in manifest["packages"]] == [
        (s.name, s.sha256) for s in specs]
    assert not (tmp_path / "evil.json").exists() and not (pk.parent / "evil.json").exists()
    assert sorted(p.name for p in pk.iterdir()) == sorted(s.tarball_name for s in specs)

    # A complete dataset is reused (even with the tarballs gone) unless --force.
    before = (out / IMAGES_FILE).stat().st_mtime_ns
    for s in specs:
        (pk / s.tarball_name).unlink()
    assert data.build(out, pk, progress=False) == manifest
    assert (out / IMAGES_FILE).stat().st_mtime_ns == before
    with pytest.raises(DatasetError, match="npm is required"):
        data.build(out, pk, force=True, progress=False)


def test_cli_arguments():
    parser = argparse.ArgumentParser()
    data.add_arguments(parser)
    args = parser.parse_args(["--out", "o", "--packages-dir", "p", "--force"])
    assert args.out == Path("o") and args.packages_dir == Path("p") and args.force is True
    args = parser.parse_args([])
    assert args.out is None and args.packages_dir is None and args.force is False
