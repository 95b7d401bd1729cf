"""Build the bundled model's training dataset: 64×64 emoji on white, with captions.

Command: ``lantern-studio train data [--sets default|all|STYLE,…] [--out DIR] [--packages-dir DIR] [--force]``.

``--sets default`` (the default) builds today's dataset from today's five styles
(google, twitter and :data:`.iconify.ICON_SETS`) into ``emoji64``, byte for byte as
before; ``--sets all`` adds the opt-in art sets (:data:`.iconify.EXTRA_ICON_SETS`:
noto-blob, fxemoji, streamline) after them, into ``emoji64-v5`` by default.

The licence rule: every package is used only when pinned (name, version,
tarball sha256) and its declared licence is on
:data:`.npm_packages.ALLOWED_LICENCES` (with the attribution CC-BY requires);
anything else is refused with one line naming the package and why.

Steps:

1. Fetch the pinned npm packages (:data:`.npm_packages.PACKAGES`) with the npm
   client (``npm pack NAME@VERSION``) into a download folder and check each
   tarball's sha256 against the pin. Tarballs already there with the right hash
   are reused.
2. Extract only what is needed (``emoji.json``, ``img/<vendor>/64/*.png``,
   ``en/data.json``, ``meta/groups.json``) into a temporary folder.

   Steps 1 and 2 are :mod:`.npm_packages`; this module runs them (:func:`build`).
3. :func:`build_from_extracted` composes every rendering (base emoji and all
   skin-tone variants, Google and Twitter artwork only — Apple/Facebook
   artwork is not licensed for this) on white, captions it from the emojibase
   label plus skin tone and art style, splits by emoji identity and writes:

   ``images.npy``   (N, 64, 64, 3) uint8
   ``meta.jsonl``   one JSON object per image row, same order
   ``manifest.json`` packages, hashes, counts, subgroups; written last, so its
                    presence marks a complete dataset.

   The rows come from :mod:`.renderings`, captioned by :mod:`.captions` and split
   by :mod:`.identities`; :mod:`.art_sets` says which styles a ``--sets`` selection
   takes and where it goes.

Everything but step 1 works offline; tests build from fabricated package folders.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable

import numpy as np
from PIL import Image
from tqdm import tqdm

from .. import paths
from ..engine.files import atomic_write, sha256_file
from ..models.dataset import (DATASET_NAME, IMAGE_SIZE, IMAGES_FILE, MANIFEST_FILE, META_FILE, SPLITS, DatasetError,
                              default_out_dir)
from . import iconify
from .art_sets import ALL_SETS, DEFAULT_SETS, V5_DATASET_NAME, out_dir_for, select_sets
from .captions import short_caption
from .common import say
from .iconify import compose_on_white
from .identities import HELDOUT_FRACTION, SPLIT_SALT, identity_weights, normalize_code
from .npm_packages import (ALLOWED_LICENCES, EMOJIBASE_PACKAGE, GOOGLE_PACKAGE, PACKAGES, TWITTER_PACKAGE,
                           PackageSpec, check_licence, check_pinned, default_packages_dir, extract_package,
                           fetch_packages, refused, verify_tarball, wanted_members)
from .renderings import Emojibase, collect_icons, collect_pngs, loose_names

__all__ = [
    "FORMAT_VERSION",
    "ARTWORK_LICENSES",
    "VENDOR_ARTWORK_SPDX",
    "ATTRIBUTIONS",
    "check_licences",
    "build_from_extracted",
    "complete_manifest",
    "package_specs",
    "build",
    "add_arguments",
    "run",
    "main",
    # re-exported for training/ar.py, which imports them from here
    "identity_weights",
    "short_caption",
]

# --------------------------------------------------------------------------- #
# Constants
# --------------------------------------------------------------------------- #

FORMAT_VERSION = 3  # 3: each row carries its emoji's first Emoji version (emojibase)

# Licences of the artwork itself (the packages' code and metadata are MIT);
# recorded in the manifest so the model card can carry the attribution.
ARTWORK_LICENSES = {
    "google": "Noto Emoji artwork (Google), Apache License 2.0",
    "twitter": "Twemoji artwork (Twitter / jdecked), CC-BY 4.0 (attribution required)",
    **{s.style: s.license for s in iconify.ALL_ICON_SETS},
}
# The PNG styles' artwork licences (their packages' package.json covers the code:
# MIT), held to the same allowlist, and the credit each CC-BY style requires.
VENDOR_ARTWORK_SPDX = {"google": "Apache-2.0", "twitter": "CC-BY-4.0"}
ATTRIBUTIONS: dict[str, str] = {
    "twitter": "Twemoji graphics copyright Twitter, Inc and other contributors, CC-BY 4.0",
    **{s.style: s.attribution for s in iconify.ALL_ICON_SETS if s.attribution},
}


# --------------------------------------------------------------------------- #
# The licence rule, composing and writing
# --------------------------------------------------------------------------- #


def _package_info(pkg_dir: Path) -> dict[str, Any]:
    info: dict[str, Any] = {}
    pj = pkg_dir / "package.json"
    if pj.is_file():
        try:
            data = json.loads(pj.read_text(encoding="utf-8"))
            info = {k: data.get(k) for k in ("name", "version", "license") if data.get(k)}
        except (OSError, json.JSONDecodeError):
            pass
    return info


def check_licences(vendor_dirs: dict[str, Path], emojibase_dir: Path,
                   icon_dirs: dict[str, tuple[Path, Path | None]]) -> dict[str, str]:
    """The licence rule over every package folder a build reads: {package name: SPDX id}.

    Raises the one-line refusal (:func:`.npm_packages.check_licence`) of the first
    package whose declared licence is missing, self-contradictory or not allowed, or
    whose CC-BY licence has no recorded attribution. The PNG styles' artwork licences
    (:data:`VENDOR_ARTWORK_SPDX`) are held to the same allowlist.
    """
    known = iconify.sets_by_style()
    out: dict[str, str] = {}
    named = [(f"emoji-datasource-{v}", d, "") for v, d in vendor_dirs.items()]
    named.append((EMOJIBASE_PACKAGE.name, emojibase_dir, ""))
    for style, (pkg_dir, _chars) in icon_dirs.items():
        s = known.get(style)
        named.append((s.package if s else style, Path(pkg_dir), s.attribution if s else ""))
    for name, pkg_dir, attribution in named:
        out[name] = check_licence(name, pkg_dir, attribution)
    for vendor in vendor_dirs:
        spdx = VENDOR_ARTWORK_SPDX[vendor]
        if spdx not in ALLOWED_LICENCES or (ALLOWED_LICENCES[spdx] and not ATTRIBUTIONS.get(vendor)):
            raise refused(f"the {vendor} artwork", f"licence {spdx} is not allowed or lacks an attribution")
    return out


def build_from_extracted(
    google_dir: str | os.PathLike,
    twitter_dir: str | os.PathLike,
    emojibase_dir: str | os.PathLike,
    out_dir: str | os.PathLike,
    *,
    packages: list[dict[str, Any]] | None = None,
    icon_dirs: dict[str, tuple[Path, Path | None]] | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Compose, caption and split from extracted package folders; write the dataset.

    ``google_dir`` / ``twitter_dir`` hold ``emoji.json`` and ``img/<vendor>/64/*.png``;
    ``emojibase_dir`` holds ``en/data.json`` and ``meta/groups.json`` (the npm
    tarballs' ``package/`` folders). ``icon_dirs`` maps an Iconify style key
    (:data:`iconify.ALL_ICON_SETS`) to (its package folder, the folder whose
    ``chars.json`` maps its names, or None for its own). ``packages`` (name,
    version, sha256, …) is recorded in the manifest; by default it is read from
    each folder's ``package.json``. Every folder must pass the licence rule
    (:func:`check_licences`). Returns the manifest.
    """
    t0 = time.perf_counter()
    out_dir = Path(out_dir)
    vendor_dirs = {"google": Path(google_dir), "twitter": Path(twitter_dir)}
    licences = check_licences(vendor_dirs, Path(emojibase_dir), icon_dirs or {})
    eb = Emojibase(Path(emojibase_dir))
    renderings, skipped, unmatched = collect_pngs(vendor_dirs, eb)
    identities = {normalize_code(r.meta["identity"]): r.meta["identity"] for r in renderings}
    icons_unmatched: dict[str, int] = {}
    icons_outside: dict[str, int] = {}
    known = iconify.sets_by_style()
    loose: dict[str, str] | None = None
    for style, (pkg_dir, chars_dir) in (icon_dirs or {}).items():
        try:
            icon_data = iconify.read_icon_set(pkg_dir, chars_dir)
        except iconify.IconSetError as exc:
            raise DatasetError(f"{style}: {exc}") from exc
        names, codes = None, known[style].codes if style in known else ()
        if style in known and known[style].match == "loose":
            loose = loose_names(vendor_dirs, eb) if loose is None else loose
            names = loose
        rows, icons_unmatched[style], icons_outside[style] = collect_icons(style, icon_data, eb, identities,
                                                                            names, codes)
        renderings.extend(rows)
    if not renderings:
        raise DatasetError("no emoji images found in the package folders")

    images = np.empty((len(renderings), IMAGE_SIZE, IMAGE_SIZE, 3), dtype=np.uint8)
    bar = tqdm(
        renderings, desc="[data] composing", unit="img", file=sys.stderr,
        disable=not progress, mininterval=1.0,
    )
    for i, r in enumerate(bar):
        if r.svg is not None:
            try:
                images[i] = iconify.rasterize(r.svg, IMAGE_SIZE)
            except (iconify.IconSetError, OSError, ValueError) as exc:
                raise DatasetError(f"cannot render {r.meta['style']} icon {r.meta['code']}: {exc}") from exc
            continue
        try:
            with Image.open(r.path) as im:
                images[i] = compose_on_white(im)
        except (OSError, ValueError) as exc:
            raise DatasetError(f"cannot read {r.path}: {exc}") from exc
    meta = [r.meta for r in renderings]

    # Remove the old manifest first: a crash below must not leave a "complete"
    # dataset whose files do not match its manifest.
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        (out_dir / MANIFEST_FILE).unlink()
    except FileNotFoundError:
        pass
    atomic_write(out_dir / IMAGES_FILE, lambda p: np.save(p, images, allow_pickle=False), durable=True)
    meta_bytes = "".join(json.dumps(m, ensure_ascii=False) + "\n" for m in meta).encode("utf-8")
    atomic_write(out_dir / META_FILE, lambda p: Path(p).write_bytes(meta_bytes), durable=True)

    if packages is None:
        packages = []
        icon_pkgs = [Path(d) for d, _ in (icon_dirs or {}).values()]
        for d in (vendor_dirs["google"], vendor_dirs["twitter"], Path(emojibase_dir), *icon_pkgs):
            info = _package_info(d)
            if info:
                # Built from folders, not tarballs: no tarball hash to record.
                packages.append({**info, "sha256": None})

    counts = {s: sum(1 for m in meta if m["split"] == s) for s in SPLITS}
    counts["total"] = len(meta)
    styles = [*vendor_dirs, *(icon_dirs or {})]
    ids = {s: sorted({m["identity"] for m in meta if m["split"] == s}) for s in SPLITS}
    manifest: dict[str, Any] = {
        "dataset": DATASET_NAME,
        "format_version": FORMAT_VERSION,
        "image_shape": [IMAGE_SIZE, IMAGE_SIZE, 3],
        "background": "white",
        "packages": packages,
        "vendors": list(vendor_dirs),
        "styles": [*vendor_dirs, *(icon_dirs or {})],
        "artwork_licenses": {v: ARTWORK_LICENSES[v] for v in [*vendor_dirs, *(icon_dirs or {})]},
        "licences": licences,
        "attributions": {v: ATTRIBUTIONS[v] for v in styles if v in ATTRIBUTIONS},
        "split": {
            "by": "identity",
            "method": "sha256(salt:identity without FE0F) < fraction",
            "salt": SPLIT_SALT,
            "heldout_fraction": HELDOUT_FRACTION,
        },
        "counts": counts,
        "counts_per_style": {v: sum(1 for m in meta if m["style"] == v)
                             for v in [*vendor_dirs, *(icon_dirs or {})]},
        "identities_per_style": {v: len({m["identity"] for m in meta if m["style"] == v})
                                 for v in [*vendor_dirs, *(icon_dirs or {})]},
        "identities": {"total": len(ids["train"]) + len(ids["heldout"]),
                       **{s: len(ids[s]) for s in SPLITS}},
        "heldout_identities": ids["heldout"],
        "groups": sorted({m["group"] for m in meta if m["group"]}),
        "subgroups": sorted({m["subgroup"] for m in meta if m["subgroup"]}),
        "skipped_missing_images": skipped,
        "identities_without_emojibase_entry": unmatched,
        "icons_not_matched_to_emojibase": icons_unmatched,
        "icons_outside_png_identities": icons_outside,
        "files": {
            IMAGES_FILE: {"sha256": sha256_file(out_dir / IMAGES_FILE)},
            META_FILE: {"sha256": hashlib.sha256(meta_bytes).hexdigest()},
        },
    }
    manifest_bytes = (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    atomic_write(out_dir / MANIFEST_FILE, lambda p: Path(p).write_bytes(manifest_bytes), durable=True)
    if progress:
        say(
            f"[data] wrote {counts['total']} images ({counts['train']} train, "
            f"{counts['heldout']} heldout) of {manifest['identities']['total']} identities "
            f"to {out_dir} in {time.perf_counter() - t0:.1f} s"
        )
    return manifest


# --------------------------------------------------------------------------- #
# Whole build, reuse
# --------------------------------------------------------------------------- #


def package_specs(sets: tuple[iconify.IconSet, ...]) -> tuple[PackageSpec, ...]:
    """The pinned packages a selection is built from: today's (:data:`PACKAGES`) plus its opt-in sets'."""
    extra = tuple(PackageSpec(s.package, s.version, s.sha256) for s in sets if s not in iconify.ICON_SETS)
    return (*PACKAGES, *extra)


def complete_manifest(
    out_dir: str | os.PathLike, *, check_pins: bool = True,
    specs: Iterable[PackageSpec] | None = None,
) -> dict[str, Any] | None:
    """The manifest of a complete, intact dataset in ``out_dir``, else None.

    Complete means: the manifest exists with the current format version, the
    data files exist with the recorded sha256, and (with ``check_pins``) it was
    built from exactly the pinned packages ``specs`` (default :data:`.npm_packages.PACKAGES`).
    """
    out_dir = Path(out_dir)
    try:
        manifest = json.loads((out_dir / MANIFEST_FILE).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    if not isinstance(manifest, dict) or manifest.get("format_version") != FORMAT_VERSION:
        return None
    if check_pins:
        want = {(s.name, s.version, s.sha256) for s in (PACKAGES if specs is None else specs)}
        have = {(p.get("name"), p.get("version"), p.get("sha256")) for p in manifest.get("packages", [])}
        if want != have:
            return None
    files = manifest.get("files") or {}
    for name in (IMAGES_FILE, META_FILE):
        path = out_dir / name
        if not path.is_file() or sha256_file(path) != (files.get(name) or {}).get("sha256"):
            return None
    return manifest


def build(
    out_dir: str | os.PathLike | None = None,
    packages_dir: str | os.PathLike | None = None,
    *,
    sets: str | Iterable[str] | None = DEFAULT_SETS,
    force: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """Fetch the pinned packages (if needed) and build the dataset; returns the manifest.

    ``sets`` picks the art sets (:func:`select_sets`); the default folder follows it
    (:func:`out_dir_for`). Without ``force`` an existing complete dataset built from
    the same pins is reused and nothing is fetched.
    """
    chosen = select_sets(sets)
    specs = package_specs(chosen)
    for spec in specs:  # refuse an unpinned package before fetching anything
        check_pinned(spec)
    out_dir = Path(out_dir) if out_dir is not None else out_dir_for(chosen)
    packages_dir = Path(packages_dir) if packages_dir is not None else default_packages_dir()
    if not force:
        manifest = complete_manifest(out_dir, specs=specs)
        if manifest is not None:
            if progress:
                say(f"[data] {out_dir} is complete; reusing it (--force rebuilds)")
            return manifest

    tarballs = fetch_packages(packages_dir, specs)
    packages = []
    for spec in specs:
        verify_tarball(spec, tarballs[spec.name])
        packages.append({"name": spec.name, "version": spec.version, "sha256": spec.sha256,
                         "tarball": tarballs[spec.name].name})
    with tempfile.TemporaryDirectory(prefix=".extract-", dir=packages_dir) as tmp:
        roots: dict[str, Path] = {}
        for spec in specs:
            if progress:
                say(f"[data] extracting {spec.spec}")
            roots[spec.name] = extract_package(
                tarballs[spec.name], Path(tmp) / spec.name, wanted_members(spec.name)
            )
        for pkg in packages:
            info = _package_info(roots[pkg["name"]])
            if info.get("license"):
                pkg["license"] = info["license"]
        icon_dirs = {
            s.style: (roots[s.package], roots[s.chars_from] if s.chars_from else None)
            for s in chosen
            if s.package in roots and (s.chars_from is None or s.chars_from in roots)
        }
        return build_from_extracted(
            roots[GOOGLE_PACKAGE.name],
            roots[TWITTER_PACKAGE.name],
            roots[EMOJIBASE_PACKAGE.name],
            out_dir,
            packages=packages,
            icon_dirs=icon_dirs,
            progress=progress,
        )


# --------------------------------------------------------------------------- #
# CLI
# --------------------------------------------------------------------------- #


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sets", default=DEFAULT_SETS, metavar="SETS",
        help=(f"art sets: '{DEFAULT_SETS}' (today's five styles), '{ALL_SETS}' (adding "
              f"{', '.join(s.style for s in iconify.EXTRA_ICON_SETS)}), or style names separated by commas"),
    )
    parser.add_argument(
        "--out", type=Path, default=None,
        help=f"dataset folder (default: {default_out_dir()}; {paths.data_dir() / V5_DATASET_NAME} with --sets all)",
    )
    parser.add_argument(
        "--packages-dir", type=Path, default=None,
        help=f"where the npm tarballs are downloaded (default: {default_packages_dir()})",
    )
    parser.add_argument(
        "--force", action="store_true",
        help="rebuild even if a complete dataset already exists",
    )


def run(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    sets = getattr(args, "sets", DEFAULT_SETS)
    try:
        manifest = build(args.out, args.packages_dir, sets=sets, force=bool(args.force))
    except DatasetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    out = Path(args.out) if args.out is not None else out_dir_for(select_sets(sets))
    c, ids = manifest["counts"], manifest["identities"]
    print(
        f"{out}: {c['total']} images ({c['train']} train, {c['heldout']} heldout), "
        f"{ids['total']} identities ({ids['heldout']} held out), "
        f"{time.perf_counter() - t0:.1f} s"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="lantern-studio train data", description="Build the emoji training dataset."
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
