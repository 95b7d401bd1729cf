"""The bench reports kept in docs/ live in one folder (docs/bench/reports/), none loose at the top of
docs/, and every report the README, docs/, the bundled model card and the code cite exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPORTS = ROOT / "docs" / "bench" / "reports"
CITED = re.compile(r"docs/[\w./-]+\.json")


def citing_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
            ROOT / "resources" / "models" / "emoji-64" / "MODEL_CARD.md",
            *sorted((ROOT / "app" / "lantern_studio").rglob("*.py"))]


def missing_reports(files: list[Path], root: Path = ROOT) -> list[str]:
    """``file: docs/….json`` for each report a file cites that is not under ``root`` (the repository)."""
    return [f"{f.relative_to(root)}: {cited}" for f in files
            for cited in sorted(set(CITED.findall(f.read_text(encoding="utf-8")))) if not (root / cited).is_file()]


def test_bench_reports_are_in_one_folder():
    assert sorted(p.name for p in (ROOT / "docs").glob("*.json")) == []
    assert len(list(REPORTS.glob("bench-*.json"))) >= 15


def test_every_cited_report_exists():
    files = citing_files()
    assert sum(bool(CITED.search(f.read_text(encoding="utf-8"))) for f in files) >= 4  # README/docs/card/code cite
    assert missing_reports(files) == []


def test_a_stale_citation_is_found(tmp_path):
    """The check can fail: a file citing a report at its old place is named, one at its new place is not."""
    (tmp_path / "docs" / "bench" / "reports").mkdir(parents=True)
    (tmp_path / "docs" / "bench" / "reports" / "bench-emoji64.json").write_text("{}")
    notes = tmp_path / "notes.md"
    notes.write_text("see docs/bench-emoji64.json and docs/bench/reports/bench-emoji64.json")
    assert missing_reports([notes], tmp_path) == ["notes.md: docs/bench-emoji64.json"]
