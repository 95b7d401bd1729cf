"""Packaging: the sdist and wheel carry the resources, an installed wheel runs with no
checkout around, the desktop entry and AppStream metadata validate, the icons are
what ``packaging/make_icons.py`` draws, the per-user desktop install, and (slow,
opt-in with ``-m slow``) the PyInstaller build starts and generates an image.

The wheel test installs into a fresh ``python -m venv`` without dependencies;
a ``.pth`` file makes the running environment's site-packages (torch, Qt, …)
importable there, appended *after* the fresh site-packages, so lantern_studio
itself comes from the wheel. Nothing is downloaded.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import time
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGING = ROOT / "packaging"
ICONS = ROOT / "resources" / "icons"
APP_ID = "io.github.lanternstudio.LanternStudio"
DESKTOP = ROOT / "resources" / "desktop" / f"{APP_ID}.desktop"
METAINFO = ROOT / "resources" / "desktop" / f"{APP_ID}.metainfo.xml"
BUNDLED_MANIFEST = ROOT / "resources" / "models" / "emoji-64" / "model.json"
IN_CI = (os.environ.get("CI") or "").lower() in ("1", "true", "yes")

COPY_IGNORE = shutil.ignore_patterns(".venv", ".git", ".cache", ".whl", "build", "dist", "*.egg-info", "__pycache__", "*.pyc",
                                     ".pytest_cache", "*.tmp")


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(PYTHONNOUSERSITE="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", QT_QPA_PLATFORM="offscreen")
    env.update(extra)
    return env


def _run(cmd, cwd, env, timeout=600) -> subprocess.CompletedProcess:
    r = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                       stdin=subprocess.DEVNULL)
    return r


def _explain(r: subprocess.CompletedProcess) -> str:
    return f"exit {r.returncode}\n--- stdout\n{r.stdout[-4000:]}\n--- stderr\n{r.stderr[-6000:]}"


# --------------------------------------------------------------------------- sdist + wheel + fresh venv


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """Build sdist → wheel (from the sdist, as a user's ``pip install`` of the sdist would), install the
    wheel into a fresh venv. → dict of paths and timings."""
    t0 = time.perf_counter()
    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"
    # a copy, so the build leaves nothing behind in the checkout (build/, egg-info) and stale
    # build/lib files cannot leak into the wheel
    shutil.copytree(ROOT, src, ignore=COPY_IGNORE)
    out = base / "dist"
    env = _clean_env()
    # no isolation: builds with the setuptools already installed (no download); -x: the backend's
    # build requirements are not re-checked (setuptools comes with torch's requirements)
    r = _run([sys.executable, "-m", "build", "--no-isolation", "--skip-dependency-check", "--outdir", out, src],
             cwd=base, env=env)
    assert r.returncode == 0, "building the sdist and wheel failed:\n" + _explain(r)
    sdist = next(out.glob("lantern_studio-*.tar.gz"))
    wheel = next(out.glob("lantern_studio-*.whl"))
    t_build = time.perf_counter() - t0

    venv = base / "fresh venv"  # a space in the path on purpose
    r = _run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=base, env=env)
    assert r.returncode == 0, _explain(r)
    py = venv / "bin" / "python"
    # pip of the running environment, acting on the fresh one (--python): no ensurepip, no download
    r = _run([sys.executable, "-m", "pip", "--python", py, "install", "--no-deps", "--no-index",
              "--disable-pip-version-check", "--no-warn-script-location", wheel], cwd=base, env=env)
    assert r.returncode == 0, "installing the wheel failed:\n" + _explain(r)
    r = _run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=base, env=env)
    fresh_site = Path(r.stdout.strip())
    # the dependencies: the running environment's site-packages, after the fresh one on sys.path
    # (plain path lines: .pth files there, e.g. an editable install's finder, are not processed)
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (fresh_site / "zz_lantern_test_deps.pth").write_text("\n".join(sorted(ours)) + "\n")
    work = base / "elsewhere"
    work.mkdir()
    return {"sdist": sdist, "wheel": wheel, "venv": venv, "python": py, "site": fresh_site,
            "cli": venv / "bin" / "lantern-studio", "work": work, "build_seconds": t_build,
            "env": _clean_env(LANTERN_STUDIO_CACHE=str(base / "cache"), LANTERN_STUDIO_DATA=str(base / "data"),
                              HOME=str(base / "home"))}


def _package_data_files() -> set:
    """Every non-Python file that must ship in the wheel, as its path inside the wheel."""
    want = set()
    for f in (ROOT / "app" / "lantern_studio").rglob("*"):
        if f.is_file() and f.suffix not in (".py", ".pyc") and "__pycache__" not in f.parts:
            want.add("lantern_studio/" + f.relative_to(ROOT / "app" / "lantern_studio").as_posix())
    for f in (ROOT / "resources").rglob("*"):
        if f.is_file() and "__pycache__" not in f.parts and f.suffix not in (".pyc", ".tmp"):
            want.add("lantern_studio/resources/" + f.relative_to(ROOT / "resources").as_posix())
    return want


def test_wheel_carries_modules_resources_and_package_data(installed):
    names = set(zipfile.ZipFile(installed["wheel"]).namelist())
    missing = sorted(_package_data_files() - names)
    assert not missing, f"files missing from the wheel: {missing}"
    for must in ("lantern_studio/cli.py", "lantern_studio/doctor.py", "lantern_studio/about.py",
                 "lantern_studio/resources/__init__.py", "lantern_studio/resources/icons/lantern-studio.svg",
                 "lantern_studio/resources/styles/studio.qss"):
        assert must in names, must
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    # the source layout must not leak into the wheel
    assert not [n for n in names if n.startswith(("app/", "resources/", "tests/"))]
    if BUNDLED_MANIFEST.is_file():
        man = json.loads(BUNDLED_MANIFEST.read_text())
        for f in man.get("files", {}):
            assert f"lantern_studio/resources/models/emoji-64/{f}" in names


def test_sdist_carries_resources_tests_and_packaging(installed):
    with tarfile.open(installed["sdist"]) as tf:
        names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
    for must in ("pyproject.toml", "README.md", "MANIFEST.in", "resources/styles/studio.qss",
                 "resources/icons/lantern-studio.svg", "resources/icons/lantern-studio-256.png",
                 "app/lantern_studio/models/imagenet_classes.json", "tests/conftest.py", "tests/test_packaging.py",
                 f"resources/desktop/{APP_ID}.desktop", f"resources/desktop/{APP_ID}.metainfo.xml", "packaging/make_icons.py",
                 "app/lantern_studio/desktop.py", "packaging/lantern-studio.spec"):
        assert must in names, f"{must} missing from the sdist"
    tests_here = {p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").rglob("*.py") if "__pycache__" not in p.parts}
    assert tests_here <= names, sorted(tests_here - names)
    if BUNDLED_MANIFEST.is_file():
        assert "resources/models/emoji-64/model.json" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


def test_installed_wheel_runs_outside_the_checkout(installed):
    env, work = installed["env"], installed["work"]
    r = _run([installed["cli"], "--version"], cwd=work, env=env, timeout=120)
    assert r.returncode == 0, _explain(r)
    from lantern_studio import __version__

    assert r.stdout.strip() == f"lantern-studio {__version__}"
    code = ("import json, lantern_studio; from lantern_studio.paths import resources_dir; "
            "from lantern_studio.models import bundled_dir; "
            "print(json.dumps({'pkg': lantern_studio.__file__, 'res': str(resources_dir()), "
            "'bundled': str(bundled_dir()), 'qss': (resources_dir() / 'styles' / 'studio.qss').is_file(), "
            "'icon': (resources_dir() / 'icons' / 'lantern-studio.svg').is_file()}))")
    r = _run([installed["python"], "-c", code], cwd=work, env=env, timeout=120)
    assert r.returncode == 0, _explain(r)
    info = json.loads(r.stdout.strip().splitlines()[-1])
    site = installed["site"].resolve()
    for key in ("pkg", "res", "bundled"):
        p = Path(info[key]).resolve()
        assert p.is_relative_to(site), f"{key} resolved to {p}, not inside the fresh venv's {site}"
        assert not p.is_relative_to(ROOT), f"{key} resolved into the checkout: {p}"
    assert info["qss"] and info["icon"], info


def test_installed_wheel_generates_with_the_bundled_model(installed):
    assert BUNDLED_MANIFEST.is_file(), (
        f"the bundled model is missing: {BUNDLED_MANIFEST.relative_to(ROOT)} does not exist in the checkout, "
        "so the wheel cannot carry it (train and ship it: lantern-studio train ship)")
    env, work = installed["env"], installed["work"]
    t0 = time.perf_counter()
    r = _run([installed["cli"], "generate", "a red heart", "--out", "x.png", "--seed", "1",
              "--stats-json", "x.json"], cwd=work, env=env, timeout=600)
    elapsed = time.perf_counter() - t0
    assert r.returncode == 0, _explain(r)
    png = work / "x.png"
    assert png.is_file() and png.stat().st_size > 0
    from PIL import Image

    with Image.open(png) as im:
        assert im.size[0] >= 64 and im.size[1] >= 64
    record = json.loads((work / "x.json").read_text())
    assert record["prompt"] == "a red heart"
    print(f"\nwheel build {installed['build_seconds']:.1f} s, generate {elapsed:.1f} s")


# --------------------------------------------------------------------------- desktop entry, metainfo, icons


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        msg = (f"{name} is not installed (Debian: apt-get install -y desktop-file-utils appstream)")
        if IN_CI:
            pytest.fail(msg + " — CI must install it")
        pytest.skip(msg)
    return path


def _desktop_validate(path: Path) -> None:
    r = subprocess.run([_tool("desktop-file-validate"), str(path)], capture_output=True, text=True, timeout=60)
    out = (r.stdout + r.stderr).strip()
    bad = [ln for ln in out.splitlines() if "error:" in ln or "warning:" in ln]
    assert r.returncode == 0 and not bad, f"desktop-file-validate {path.name}:\n{out}"


def test_desktop_entry_validates():
    _desktop_validate(DESKTOP)
    text = DESKTOP.read_text()
    assert f"Icon={APP_ID}\n" in text
    assert "\nExec=lantern-studio" in text


def test_metainfo_validates():
    tool = _tool("appstreamcli")
    r = subprocess.run([tool, "validate", "--no-net", str(METAINFO)], capture_output=True, text=True, timeout=120)
    out = (r.stdout + r.stderr).strip()
    assert r.returncode == 0, f"appstreamcli validate --no-net {METAINFO.name}:\n{out}"
    text = METAINFO.read_text()
    assert f"<id>{APP_ID}</id>" in text
    assert f'<launchable type="desktop-id">{APP_ID}.desktop</launchable>' in text
    from lantern_studio import __version__

    assert f'<release version="{__version__}"' in text, "metainfo.xml needs a <release> for the current version"


def test_icons_are_what_the_script_draws(tmp_path):
    mod = _load("make_icons", PACKAGING / "make_icons.py")
    written = mod.write_icons(tmp_path)
    assert {p.name for p in written} == {"lantern-studio.svg"} | {f"lantern-studio-{s}.png" for s in mod.SIZES}
    assert (tmp_path / "lantern-studio.svg").read_text() == (ICONS / "lantern-studio.svg").read_text(), \
        "resources/icons/lantern-studio.svg is stale: run python packaging/make_icons.py"
    import numpy as np
    from PIL import Image

    for s in mod.SIZES:
        with Image.open(ICONS / f"lantern-studio-{s}.png") as shipped, Image.open(tmp_path / f"lantern-studio-{s}.png") as new:
            assert shipped.size == (s, s) and shipped.mode == "RGBA"
            diff = np.abs(np.asarray(shipped, np.int16) - np.asarray(new, np.int16)).max()
            # a Pillow upgrade may move a pixel by a step or two; a changed drawing moves many by far more
            assert diff <= 3, f"resources/icons/lantern-studio-{s}.png is stale (max diff {diff}): run make_icons.py"
    # the SVG is well-formed and Qt can draw it
    import xml.etree.ElementTree as ET

    ET.parse(ICONS / "lantern-studio.svg")


def test_svg_icon_renders_in_qt(qapp):
    from PySide6.QtGui import QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    r = QSvgRenderer(str(ICONS / "lantern-studio.svg"))
    assert r.isValid()
    img = QImage(64, 64, QImage.Format.Format_ARGB32)
    img.fill(0)
    p = QPainter(img)
    r.render(p)
    p.end()
    # the flame in the middle is bright, the corners are transparent
    assert img.pixelColor(32, 40).lightness() > 180
    assert img.pixelColor(0, 0).alpha() == 0


def test_install_desktop_for_the_user(tmp_path, monkeypatch):
    mod = importlib.import_module("lantern_studio.desktop")
    home = tmp_path / "xdg data"
    monkeypatch.setenv("XDG_DATA_HOME", str(home))
    assert mod.main(["--exec", "'/opt/Lantern Studio/lantern-studio'"]) == 0
    desktop = home / "applications" / f"{APP_ID}.desktop"
    assert desktop.is_file()
    assert (home / "metainfo" / f"{APP_ID}.metainfo.xml").read_text() == METAINFO.read_text()
    for s in (16, 32, 48, 64, 128, 256):
        icon = home / "icons" / "hicolor" / f"{s}x{s}" / "apps" / f"{APP_ID}.png"
        assert icon.read_bytes() == (ICONS / f"lantern-studio-{s}.png").read_bytes()
    assert (home / "icons" / "hicolor" / "scalable" / "apps" / f"{APP_ID}.svg").is_file()
    text = desktop.read_text()
    assert 'Exec="/opt/Lantern Studio/lantern-studio" gui\n' in text
    assert "TryExec=/opt/Lantern Studio/lantern-studio\n" in text
    if shutil.which("desktop-file-validate") or IN_CI:
        _desktop_validate(desktop)
    # default command: this environment's launcher, unresolved (a venv's python is a symlink)
    cmd = mod.launcher_command()
    assert Path(cmd[0]).is_absolute()
    # uninstall removes exactly what was written
    assert mod.main(["--uninstall"]) == 0
    assert not desktop.exists()
    assert not list(home.rglob(f"{APP_ID}*"))


def test_install_desktop_default_location_and_dry_run(tmp_path, monkeypatch, capsys):
    mod = importlib.import_module("lantern_studio.desktop")
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert mod.data_home() == tmp_path / ".local" / "share"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/ignored")  # the spec says: relative values are ignored
    assert mod.data_home() == tmp_path / ".local" / "share"
    assert mod.main(["--dry-run"]) == 0
    assert "would write" in capsys.readouterr().out
    assert not (tmp_path / ".local").exists()


# --------------------------------------------------------------------------- frozen app (slow, opt-in)


@pytest.mark.slow
def test_frozen_app_builds_starts_and_generates(tmp_path):
    """Freezes the running environment's lantern_studio (editable or installed) with the checkout's spec.
    (Not the test wheel's venv: PyInstaller copies libraries reached through its .pth twice.)"""
    pytest.importorskip("PyInstaller", reason="pip install pyinstaller to build the frozen app")
    from lantern_studio.models import bundled_dir

    assert (bundled_dir() / "model.json").is_file(), f"the bundled model is missing: {bundled_dir()}"
    env = _clean_env(LANTERN_STUDIO_CACHE=str(tmp_path / "cache"), LANTERN_STUDIO_DATA=str(tmp_path / "data"))
    t0 = time.perf_counter()
    r = _run([sys.executable, "-m", "PyInstaller", "--noconfirm", "--distpath", tmp_path / "dist",
              "--workpath", tmp_path / "work", PACKAGING / "lantern-studio.spec"], cwd=tmp_path, env=env,
             timeout=3600)
    build_s = time.perf_counter() - t0
    assert r.returncode == 0, "pyinstaller failed:\n" + _explain(r)
    app = tmp_path / "dist" / "lantern-studio"
    exe = app / "lantern-studio"
    size = sum(f.stat().st_size for f in app.rglob("*") if f.is_file() and not f.is_symlink())
    print(f"\nfrozen build: {build_s:.0f} s, {size / 2**20:.0f} MiB")
    assert not [f for f in app.rglob("libcudnn*")] and not [f for f in app.rglob("libnccl*")]
    assert not [f for f in app.rglob("libtorch_cuda*")]
    assert size < 1.6 * 2**30, f"the frozen app grew to {size / 2**30:.2f} GiB (CPU build is ~1.1 GiB)"
    work = tmp_path / "run"
    work.mkdir()
    r = _run([exe, "--version"], cwd=work, env=env, timeout=300)
    assert r.returncode == 0, _explain(r)
    r = _run([exe, "generate", "a red heart", "--out", "x.png", "--seed", "1"], cwd=work, env=env, timeout=900)
    assert r.returncode == 0, _explain(r)
    assert (work / "x.png").stat().st_size > 0
    r = _run([exe, "doctor", "--json", "--no-qt-probe"], cwd=work, env=env, timeout=300)
    assert r.returncode == 0, _explain(r)
    report = json.loads(r.stdout)
    assert report["model"]["ok"] and Path(report["model"]["folder"]).resolve().is_relative_to(app.resolve())
    # the window: offscreen, for a few seconds, must still be running (no crash at start-up)
    p = subprocess.Popen([str(exe)], cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(15)
        alive = p.poll() is None
    finally:
        p.terminate()
        try:
            out, _ = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
    assert alive, f"the frozen studio exited at start-up ({p.returncode}):\n{out[-4000:]}"


# --------------------------------------------------------------------------- About box (licences of what ships)


def test_about_text_built_in_licences(tmp_path):
    from lantern_studio import __version__
    from lantern_studio.about import about_text

    text = about_text(card=tmp_path / "no-card.md")
    assert f"Lantern Studio {__version__}" in text and "speculative decoding" in text
    for must in ("Noto Emoji", "Apache License 2.0", "Twemoji", "CC-BY 4.0", "Twitter, Inc and other contributors",
                 "emojibase-data", "MIT", "all-MiniLM-L6-v2", "Lantern Studio** (the application"):
        assert must in text, must


def test_about_text_takes_the_model_cards_licences(tmp_path):
    from lantern_studio.about import about_text, licences_from_card

    card = tmp_path / "MODEL_CARD.md"
    card.write_text("# emoji-64\n\nRecipe.\n\n## Licences\n\n- Artwork X: licence Y (attribution Z)\n\n"
                    "### Details\n\nmore\n\n## Metrics\n\nFID 1\n")
    assert licences_from_card(card.read_text()) == "- Artwork X: licence Y (attribution Z)\n\n### Details\n\nmore"
    text = about_text(card=card)
    assert "Artwork X: licence Y" in text and "more" in text and "FID" not in text
    assert "Lantern Studio** (the application" in text  # the app's own licence is always there
    assert "Twemoji" not in text  # the card's list replaces the built-in one
    assert licences_from_card("# card\n\nno licence section\n") is None
    assert licences_from_card("## Licenses\n\n- last section\n") == "- last section"


def test_about_dialog_shows_text_and_icon(qtbot):
    from lantern_studio.gui.about_dialog import AboutDialog, app_icon

    assert not app_icon().isNull()
    dlg = AboutDialog()
    qtbot.addWidget(dlg)
    dlg.show()
    assert "Licences" in dlg.text.toPlainText() and "all-MiniLM-L6-v2" in dlg.text.toPlainText()
    assert dlg.icon_label.pixmap() is not None and not dlg.icon_label.pixmap().isNull()
    assert dlg.windowTitle() == "About Lantern Studio"
