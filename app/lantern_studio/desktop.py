"""Install Lantern Studio's desktop entry, AppStream metadata and icons for the
current user (no root): under ``$XDG_DATA_HOME`` (default ``~/.local/share``)::

    applications/io.github.lanternstudio.LanternStudio.desktop
    metainfo/io.github.lanternstudio.LanternStudio.metainfo.xml
    icons/hicolor/{16x16,…,256x256}/apps/io.github.lanternstudio.LanternStudio.png
    icons/hicolor/scalable/apps/io.github.lanternstudio.LanternStudio.svg

The desktop entry's ``Exec``/``TryExec`` are rewritten to the absolute path of
the launcher that is running now (the ``lantern-studio`` script of this
environment, or the frozen app), so the menu entry works even when that
environment's ``bin/`` is not on the desktop session's PATH.

``lantern-studio install-desktop [--uninstall] [--data-home DIR] [--exec CMD] [--dry-run]``
(or ``python -m lantern_studio.desktop`` with the same options).

The files come from the package's resources (``resources/desktop/`` and
``resources/icons/``), so it works the same from a checkout, a wheel or the
frozen app.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

from .engine.files import atomic_write
from .paths import resources_dir

APP_ID = "io.github.lanternstudio.LanternStudio"
ICON_NAME = "lantern-studio"  # resources/icons/lantern-studio-<px>.png and lantern-studio.svg
ICON_SIZES = (16, 32, 48, 64, 128, 256)
DESKTOP_FILE = f"{APP_ID}.desktop"
METAINFO_FILE = f"{APP_ID}.metainfo.xml"


class InstallError(RuntimeError):
    pass


# ---------------------------------------------------------------- where things are
def find_sources() -> tuple:
    """→ (folder holding the .desktop and metainfo files, folder holding the icons)."""
    res = resources_dir()
    meta, icons = res / "desktop", res / "icons"
    if not ((meta / DESKTOP_FILE).is_file() and (meta / METAINFO_FILE).is_file()):
        raise InstallError(f"{DESKTOP_FILE} / {METAINFO_FILE} not found in {meta}")
    if not (icons / f"{ICON_NAME}.svg").is_file():
        raise InstallError(f"{ICON_NAME}.svg not found in {icons}")
    return meta, icons


def data_home(override=None) -> Path:
    if override:
        return Path(override).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME")
    return Path(xdg).expanduser() if xdg and os.path.isabs(xdg) else Path.home() / ".local" / "share"


def launcher_command() -> list:
    """The command that starts this installation's studio, as argv."""
    if getattr(sys, "frozen", False):  # PyInstaller build: the executable itself
        return [str(Path(sys.executable).resolve())]
    # not resolved: a venv's bin/python is a symlink to the base interpreter, and the
    # venv's own path is what selects its site-packages
    python = Path(os.path.abspath(sys.executable))
    script = python.parent / "lantern-studio"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    found = shutil.which("lantern-studio")
    if found:
        return [os.path.abspath(found)]
    return [str(python), "-m", "lantern_studio"]


def _desktop_quote(arg: str) -> str:
    """Quote one Exec argument per the Desktop Entry spec (double quotes; escape " ` $ \\)."""
    arg = arg.replace("%", "%%")
    if arg and not any(c in arg for c in ' \t\n"\'\\><~|&;$*?#()`'):
        return arg
    escaped = "".join("\\" + c if c in '"`$\\' else c for c in arg)
    # the .desktop string syntax escapes backslashes once more
    return '"' + escaped.replace("\\", "\\\\") + '"'


def desktop_entry(template: str, command: list) -> str:
    """The .desktop text with Exec/TryExec pointing at ``command`` (+ the ``gui`` subcommand)."""
    exec_line = " ".join(_desktop_quote(a) for a in list(command) + ["gui"])
    out = []
    for line in template.splitlines():
        if line.startswith("Exec="):
            line = f"Exec={exec_line}"
        elif line.startswith("TryExec="):
            line = f"TryExec={command[0]}"
        out.append(line)
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- install / uninstall
def planned_files(home: Path) -> list:
    """Every file this installer writes, as (destination, source-kind, detail)."""
    rows = [(home / "applications" / DESKTOP_FILE, "desktop", None),
            (home / "metainfo" / METAINFO_FILE, "metainfo", None),
            (home / "icons" / "hicolor" / "scalable" / "apps" / f"{APP_ID}.svg", "icon", f"{ICON_NAME}.svg")]
    for px in ICON_SIZES:
        rows.append((home / "icons" / "hicolor" / f"{px}x{px}" / "apps" / f"{APP_ID}.png", "icon", f"{ICON_NAME}-{px}.png"))
    return rows


def _refresh_caches(home: Path) -> None:
    """Best effort: desktops pick the files up without these too, just later."""
    for cmd in (["update-desktop-database", "-q", str(home / "applications")],
                # without -t: only where the theme folder has an index.theme (else it declines)
                ["gtk-update-icon-cache", "-q", str(home / "icons" / "hicolor")]):
        if shutil.which(cmd[0]):
            try:
                subprocess.run(cmd, check=False, timeout=30, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            except (OSError, subprocess.SubprocessError):
                pass


def install(home=None, command: Optional[list] = None, dry_run: bool = False, refresh: bool = True) -> list:
    """Copy the desktop entry, metainfo and icons under ``home`` (default: $XDG_DATA_HOME).
    → the written paths."""
    home = data_home(home)
    meta_dir, icon_dir = find_sources()
    command = list(command) if command else launcher_command()
    written = []
    for dest, kind, detail in planned_files(home):
        written.append(dest)
        if dry_run:
            continue
        if kind == "desktop":
            text = desktop_entry((meta_dir / DESKTOP_FILE).read_text(encoding="utf-8"), command)
            atomic_write(dest, lambda tmp, text=text: Path(tmp).write_text(text, encoding="utf-8"))
        else:
            source = meta_dir / METAINFO_FILE if kind == "metainfo" else icon_dir / detail
            atomic_write(dest, lambda tmp, source=source: shutil.copyfile(source, tmp))
    if refresh and not dry_run:
        _refresh_caches(home)
    return written


def uninstall(home=None, dry_run: bool = False) -> list:
    """Remove what :func:`install` wrote. → the removed paths."""
    home = data_home(home)
    removed = []
    for dest, _, _ in planned_files(home):
        if dest.is_file():
            removed.append(dest)
            if not dry_run:
                dest.unlink()
    if removed and not dry_run:
        _refresh_caches(home)
    return removed


# ---------------------------------------------------------------- command line
def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--uninstall", action="store_true", help="remove the files instead")
    parser.add_argument("--data-home", default=None, help="install under DIR instead of $XDG_DATA_HOME (~/.local/share)")
    parser.add_argument("--exec", dest="exec_cmd", default=None,
                        help="command the menu entry runs (default: this installation's lantern-studio)")
    parser.add_argument("--dry-run", action="store_true", help="only print what would be written or removed")


def run(args) -> int:
    try:
        if args.uninstall:
            paths = uninstall(args.data_home, dry_run=args.dry_run)
            verb = "would remove" if args.dry_run else "removed"
        else:
            command = shlex.split(args.exec_cmd) if args.exec_cmd else None
            paths = install(args.data_home, command=command, dry_run=args.dry_run)
            verb = "would write" if args.dry_run else "wrote"
    except (InstallError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    for p in paths:
        print(f"{verb} {p}")
    if not args.uninstall and not args.dry_run:
        print("Lantern Studio is in your applications menu now (log out and in if it does not show yet).")
    elif args.uninstall and not paths:
        print("nothing to remove")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="lantern-studio install-desktop", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
