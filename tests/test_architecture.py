"""The layers of docs/architecture.md, enforced: the import-linter contracts in
pyproject.toml hold for the package, and they can fail (a fixture copy of the
package with one forbidden import added breaks the contract that forbids it)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")
pytestmark = pytest.mark.skipif(not LINT.exists(), reason="import-linter is not installed (pip install -e '.[test]')")


def lint(cwd: Path, src: Path) -> subprocess.CompletedProcess:
    """lint-imports with the pyproject.toml in ``cwd``, on the lantern_studio package under ``src``."""
    env = {**os.environ, "PYTHONPATH": str(src), "OMP_NUM_THREADS": "1"}
    return subprocess.run([str(LINT), "--no-cache"], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_the_package_keeps_its_import_contracts():
    out = lint(ROOT, ROOT / "app")
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:]
    assert "broken" not in out.stdout.lower().replace("0 broken", "")


# module to edit: (line to add, the contract that must break, how its report names the new import)
MUTATIONS = {
    "engine imports gui": ("engine/files.py", "from ..gui import canvas  # noqa", "The engine knows no Qt",
                           "lantern_studio.engine.files -> lantern_studio.gui.canvas"),
    "engine imports Qt": ("engine/decisions.py", "import PySide6  # noqa", "The engine knows no Qt",
                          "lantern_studio.engine.decisions -> PySide6"),
    "models imports training": ("models/dataset.py", "from ..training import data  # noqa", "Layers",
                                "lantern_studio.models.dataset -> lantern_studio.training.data"),
    "eval imports training (peers)": ("eval/metrics.py", "from ..training import common  # noqa", "Layers",
                                      "lantern_studio.eval.metrics -> lantern_studio.training.common"),
    "gui imports torch": ("gui/jobs.py", "import torch  # noqa", "The gui does not import torch",
                          "lantern_studio.gui.jobs -> torch"),
    "a cycle inside a function": ("models/quality.py", "def _late():\n    from . import local  # noqa",
                                  "No import cycles", "No cycles are allowed in lantern_studio.models."),
}


@pytest.fixture
def package_copy(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(ROOT / "app" / "lantern_studio", src / "lantern_studio",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.json"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path, src


@pytest.mark.parametrize("case", sorted(MUTATIONS))
def test_a_forbidden_import_breaks_a_contract(package_copy, case):
    where, line, contract, evidence = MUTATIONS[case]
    cwd, src = package_copy
    target = src / "lantern_studio" / where
    target.write_text(target.read_text() + "\n\n" + line + "\n")
    out = lint(cwd, src)
    assert out.returncode != 0, out.stdout[-3000:]
    broken = out.stdout.split("Broken contracts", 1)[-1]
    section = broken[broken.find(contract):]
    assert contract in broken and evidence in section, out.stdout[-3000:]
