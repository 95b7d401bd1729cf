"""The README is the front door: small, its two set-up commands exactly what a person types (the test command
the very line CI runs), and every relative link and picture in it and in the studio guide pointing at a file
that exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
CI = ROOT / ".ci" / "run"
MAX_BYTES = 8192
START = "python3 -m venv .venv && .venv/bin/pip install torch==2.13.0 -e . && .venv/bin/lantern-studio"
LINKED = [README, ROOT / "docs" / "studio.md"]  # every relative link and image in these must resolve

FENCE = re.compile(r"^```[^\n]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)  # http:, https:, mailto:, …


def fenced_lines(markdown: str) -> list[str]:
    """The lines inside the fenced code blocks, stripped."""
    return [line.strip() for block in FENCE.findall(markdown) for line in block.splitlines() if line.strip()]


def readme_test_command(markdown: str) -> str:
    """The one command line in a fenced block that runs pytest."""
    (line,) = [line for line in fenced_lines(markdown) if "pytest" in line]
    return line


def ci_command(script: str) -> str:
    """The last command line of a shell script (blank lines and comments skipped)."""
    lines = [line.strip() for line in script.splitlines() if line.strip() and not line.strip().startswith("#")]
    return lines[-1]


def broken_links(md: Path) -> list[str]:
    """``target`` for each relative link or image in ``md`` (outside code blocks; the #anchor stripped; web and
    other scheme links skipped) that names no existing file or folder, relative to ``md``'s folder."""
    text = FENCE.sub("", md.read_text(encoding="utf-8"))
    text = re.sub(r"`[^`\n]*`", "", text)  # inline code is not a link
    bad = []
    for target in LINK.findall(text):
        if EXTERNAL.match(target) or target.startswith("#"):
            continue
        path = target.split("#", 1)[0].split("?", 1)[0]
        if not (md.parent / path).exists():
            bad.append(target)
    return bad


def test_readme_is_small():
    size = len(README.read_bytes())
    assert size <= MAX_BYTES, f"README.md is {size} bytes, over {MAX_BYTES}: move detail to docs/studio.md"


def test_the_readme_test_command_is_what_ci_runs():
    readme, ci = README.read_text(encoding="utf-8"), CI.read_text(encoding="utf-8")
    assert readme_test_command(readme) in ci
    assert ci_command(ci) in fenced_lines(readme)


def test_the_readme_start_command_is_verbatim():
    assert START in fenced_lines(README.read_text(encoding="utf-8"))


def test_every_relative_link_resolves():
    for md in LINKED:
        assert broken_links(md) == [], md.relative_to(ROOT)
    assert sum(len(LINK.findall(md.read_text(encoding="utf-8"))) for md in LINKED) >= 10  # the links were seen


def test_the_checks_can_fail(tmp_path):
    """A moved picture, a dropped file, an edited CI line and a reworded start command are each caught; web links,
    anchors and code are not taken for files."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "here.png").write_bytes(b"")
    md = tmp_path / "README.md"
    md.write_text("![a](docs/here.png) ![b](docs/gone.png) [c](docs/here.png#top) [d](https://example.org/x)\n"
                  "[e](#set-up) [f](missing.md#part) `[g](not-a-link.md)`\n"
                  "```sh\n[h](inside-code.md)\npython -m pytest -q\n```\n", encoding="utf-8")
    assert broken_links(md) == ["docs/gone.png", "missing.md#part"]
    assert readme_test_command(md.read_text(encoding="utf-8")) == "python -m pytest -q"
    ci = "#!/usr/bin/env bash\nset -e\napt-get update\npython -m pytest -q -x\n# done\n\n"
    assert ci_command(ci) == "python -m pytest -q -x"
    assert ci_command(ci) not in fenced_lines(md.read_text(encoding="utf-8"))  # the edited CI line is caught
    assert START not in fenced_lines(md.read_text(encoding="utf-8").replace("pytest -q", START + " --x"))
    assert START in fenced_lines(f"```sh\n{START}\n```\n")
