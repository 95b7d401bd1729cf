"""snapshots/ keeps at most two weight files in the tree, and its README names each one's sha256 as the file has it
(a resume on a new machine checks what it restored against that line)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOTS = ROOT / "snapshots"
MAX_FILES = 2


def listed_hashes(readme: str) -> dict[str, str]:
    """{file name: sha256} from the README's table rows (`| `NAME` | `SHA` | …`)."""
    return dict(re.findall(r"^\|\s*`([^`]+\.safetensors)`\s*\|\s*`([0-9a-f]{64})`", readme, re.MULTILINE))


def test_at_most_two_snapshots_each_with_its_hash_in_the_readme():
    files = sorted(SNAPSHOTS.glob("*.safetensors"))
    assert 0 < len(files) <= MAX_FILES, [f.name for f in files]
    hashes = listed_hashes((SNAPSHOTS / "README.md").read_text(encoding="utf-8"))
    for f in files:
        assert hashes.get(f.name) == hashlib.sha256(f.read_bytes()).hexdigest(), f.name


def test_the_hash_reader_sees_a_changed_hash():
    """The check can fail: a row whose hash is not the file's is read as that other hash."""
    row = "| `a.safetensors` | `" + "0" * 64 + "` | abc | yes |\n"
    assert listed_hashes(row) == {"a.safetensors": "0" * 64}
    assert listed_hashes(row.replace("`a.safetensors`", "a.safetensors")) == {}
