"""The Layout section of docs/architecture.md is true: every package it names exists, every package under
app/lantern_studio is named in it, and every module file a row names is in that row's package."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "app" / "lantern_studio"
ROW = re.compile(r"^  (?P<name>\S+)")  # a row of app/lantern_studio/: two spaces, then its folder or file


def layout_block(doc: str) -> str:
    """The code block under ``## Layout``."""
    section = doc.split("\n## Layout\n", 1)[1]
    return section.split("```\n", 2)[1]


def package_rows(block: str) -> dict[str, str]:
    """The rows under ``app/lantern_studio/`` (indented two spaces; continuation lines join their row):
    the folder or file each names → its text."""
    rows: dict[str, str] = {}
    current = None
    for line in block.splitlines():
        m = ROW.match(line)
        if m:
            current = m["name"]
            rows[current] = line[m.end():]
        elif current is not None and line.startswith("   "):
            rows[current] += " " + line.strip()
        else:
            current = None  # a top-level row (resources/, tests/, …)
    return rows


def packages_on_disk() -> set[str]:
    """Every package under app/lantern_studio, as the Layout writes it (``studio/``)."""
    return {str(p.parent.relative_to(PACKAGE)) + "/" for p in PACKAGE.rglob("__init__.py") if p.parent != PACKAGE}


def named_packages(rows: dict[str, str]) -> set[str]:
    return {name for name in rows if name.endswith("/")}


def misnamed_modules(rows: dict[str, str]) -> list[str]:
    """Module files (``runner.py``) a row names that are not in that row's package."""
    bad = []
    for name, text in rows.items():
        folder = PACKAGE / name if name.endswith("/") else PACKAGE
        for module in re.findall(r"\b(\w+\.py)\b", name + " " + text):
            if not (folder / module).is_file():
                bad.append(f"{name}: {module}")
    return bad


def test_the_layout_names_every_package_and_only_real_ones():
    rows = package_rows(layout_block((ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")))
    named, real = named_packages(rows), packages_on_disk()
    assert sorted(named - real) == [], "named in the Layout but not a package"
    assert sorted(real - named) == [], "a package the Layout does not name"
    assert misnamed_modules(rows) == []


def test_the_layout_check_can_fail():
    """A layout that names a package that does not exist, omits one, or names a module in the wrong
    package is caught."""
    block = ("app/lantern_studio/\n"
             "  engine/      model.py, runner.py and\n"
             "               compiled.py\n"
             "  studio2/     not a package\n"
             "  gui/         the window, with loop.py\n"
             "  cli.py       the entry point\n"
             "resources/     bundled model\n")
    rows = package_rows(block)
    assert set(rows) == {"engine/", "studio2/", "gui/", "cli.py"}
    assert "studio2/" in named_packages(rows) - packages_on_disk()
    assert "training/" in packages_on_disk() - named_packages(rows)
    assert misnamed_modules(rows) == ["gui/: loop.py"]
