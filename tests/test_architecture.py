"""The layers of docs/architecture.md, enforced: the import-linter contracts in
pyproject.toml hold for the package, and they can fail (a fixture copy of the
package with one forbidden import added breaks the contract that forbids it).
And the import rules, enforced by ruff with pyproject.toml's [tool.ruff]: imports
at the top (PLC0415), none unused or redefined (F401, F811); a function-local
import keeps a noqa that says why, and a copy of a module with one added without
a reason fails."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")
RUFF = Path(sys.executable).with_name("ruff")
needs_lint = pytest.mark.skipif(not LINT.exists(), reason="import-linter is not installed (pip install -e '.[test]')")
needs_ruff = pytest.mark.skipif(not RUFF.exists(), reason="ruff is not installed (pip install -e '.[test]')")


def lint(cwd: Path, src: Path) -> subprocess.CompletedProcess:
    """lint-imports with the pyproject.toml in ``cwd``, on the lantern_studio package under ``src``."""
    env = {**os.environ, "PYTHONPATH": str(src), "OMP_NUM_THREADS": "1"}
    return subprocess.run([str(LINT), "--no-cache"], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@needs_lint
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
    "gui imports torch": ("gui/canvas.py", "import torch  # noqa", "The gui does not import torch",
                          "lantern_studio.gui.canvas -> torch"),
    "models imports Qt": ("models/dataset.py", "import PySide6  # noqa", "Only the gui imports Qt",
                          "lantern_studio.models.dataset -> PySide6"),
    "paths imports Qt inside a function": ("paths.py", "def _late():\n    from PySide6.QtCore import QStandardPaths  # noqa",
                                           "Only the gui imports Qt", "lantern_studio.paths -> PySide6"),
    "doctor imports Qt itself": ("doctor.py", "from PySide6 import QtCore  # noqa", "Only the gui imports Qt",
                                 "lantern_studio.doctor -> PySide6"),
    "doctor reaches Qt through the gui": ("doctor.py", "def _late():\n    from .gui import qt_info  # noqa",
                                          "The doctor knows no Qt", "lantern_studio.doctor -> lantern_studio.gui.qt_info"),
    "the studio session imports Qt": ("studio/queue.py", "import PySide6  # noqa", "The studio session knows no Qt",
                                      "lantern_studio.studio.queue -> PySide6"),
    "the studio session reaches Qt through a widget": ("studio/compare.py", "from ..gui import canvas  # noqa",
                                                       "The studio session knows no Qt",
                                                       "lantern_studio.studio.compare -> lantern_studio.gui.canvas"),
    "the studio session imports torch": ("studio/race.py", "import torch  # noqa",
                                         "The studio session holds no tensor code", "lantern_studio.studio.race -> torch"),
    "a cycle inside a function": ("models/quality.py", "def _late():\n    from . import local  # noqa",
                                  "No import cycles", "No cycles are allowed in lantern_studio.models."),
}


def test_the_qt_contract_covers_every_module_but_the_gui():
    """The "Only the gui imports Qt" contract lists its sources one by one (the gui is a sibling of
    them, not a parent); a new top-level module must join the list, or Qt could enter it unchecked."""
    tomllib = pytest.importorskip("tomllib")
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]
    qt = next(c for c in contracts if c["name"] == "Only the gui imports Qt")
    package = ROOT / "app" / "lantern_studio"
    top = {p.stem if p.is_file() else p.name for p in package.iterdir()
           if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()}
    assert "gui" in top and "engine" in top
    assert set(qt["source_modules"]) == {f"lantern_studio.{m}" for m in top - {"gui"}}
    assert set(qt["forbidden_modules"]) == {"PySide6", "qasync", "pyqtgraph"}


@pytest.fixture
def package_copy(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(ROOT / "app" / "lantern_studio", src / "lantern_studio",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.json"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path, src


@needs_lint
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


# --------------------------------------------------------------------------- imports at the top (ruff)


def ruff(*args: str) -> subprocess.CompletedProcess:
    """``ruff check`` with the project's pyproject.toml, from the repository root (where its per-file ignores point)."""
    return subprocess.run([str(RUFF), "check", "--no-cache", "--config", str(ROOT / "pyproject.toml"), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)


# `# noqa: PLC0415 - <why>`: the codes, then a dash and the reason
NOQA = re.compile(r"#\s*noqa(?P<codes>:\s*[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*)?(?P<rest>[^#]*)")
REASON = re.compile(r"\s+[-–—]\s+\w.{2,}")


def says_why(line: str) -> bool:
    """Whether ``line`` has a noqa for PLC0415 followed by its reason; a blanket ``# noqa``,
    a bare ``# noqa: PLC0415`` or a plain comment does not say why."""
    return any(m["codes"] and "PLC0415" in m["codes"] and REASON.match(m["rest"]) for m in NOQA.finditer(line))


def unexplained_local_imports(path: Path) -> list:
    """The function-local imports under ``path`` (those ruff reports with every noqa ignored, a
    file-wide one too; the per-file ignores still hold) whose line does not say why."""
    out = ruff("--select", "PLC0415", "--ignore-noqa", "--output-format", "json", str(path))
    assert out.returncode in (0, 1), out.stderr[-2000:]
    bad = []
    for d in json.loads(out.stdout):
        row = d.get("noqa_row") or d["location"]["row"]
        line = Path(d["filename"]).read_text(encoding="utf-8").splitlines()[row - 1]
        if not says_why(line):
            bad.append(f"{d['filename']}:{row}: {line.strip()}")
    return bad


@needs_ruff
def test_the_package_keeps_its_imports_at_the_top():
    out = ruff("--output-format", "concise", "app")
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:]


@needs_ruff
def test_every_function_local_import_says_why():
    noqa_lines = [f"{p.relative_to(ROOT)}:{i}: {line.strip()}"
                  for p in sorted((ROOT / "app").rglob("*.py"))
                  for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
                  if re.search(r"noqa[^#]*PLC0415", line)]
    assert noqa_lines, "no noqa for PLC0415 found: is the check looking at the package?"
    assert [x for x in noqa_lines if not says_why(x)] == []
    assert unexplained_local_imports(ROOT / "app") == []


@pytest.mark.parametrize("line, ok", [
    ("    import torch  # noqa: PLC0415 - start-up time", True),
    ("    from PySide6 import (  # noqa: PLC0415 — Qt is optional here", True),
    ("    import ray  # noqa: F401, PLC0415 - Ray is optional (the [cluster] extra)", True),
    ("    import json  # noqa: PLC0415", False),
    ("    import json  # noqa: PLC0415 -", False),
    ("    import json  # noqa: PLC0415 - ", False),
    ("    import json  # noqa", False),
    ("    import json  # noqa: F401, PLC0415", False),
    ("    import json  # noqa: F401 - re-exported", False),
    ("    import json  # here, not at the top: start-up time", False),
    ("    import json", False),
])
def test_the_reason_check_rejects_a_noqa_without_a_reason(line, ok):
    assert says_why(line) is ok


@pytest.fixture
def module_copy(tmp_path):
    """engine/budget.py copied into the package's layout in a temporary folder."""
    target = tmp_path / "app" / "lantern_studio" / "engine" / "budget.py"
    target.parent.mkdir(parents=True)
    shutil.copy(ROOT / "app" / "lantern_studio" / "engine" / "budget.py", target)
    return target


LATE_IMPORT = "\n\ndef _late():\n    import json{comment}\n\n    return json.dumps\n"


@needs_ruff
@pytest.mark.parametrize("comment, ruff_passes, says_why_too", [
    ("", False, False),  # the mutant: ruff reports PLC0415
    ("  # noqa", True, False),  # silenced, but with no code and no reason: the reason check fails it
    ("  # noqa: PLC0415", True, False),
    ("  # noqa: PLC0415 - start-up time", True, True),  # the accepted form
])
def test_a_function_local_import_without_a_reason_fails(module_copy, comment, ruff_passes, says_why_too):
    assert ruff("--output-format", "concise", str(module_copy)).returncode == 0  # the copy alone is clean
    assert unexplained_local_imports(module_copy) == []
    module_copy.write_text(module_copy.read_text(encoding="utf-8") + LATE_IMPORT.format(comment=comment),
                           encoding="utf-8")
    row = module_copy.read_text(encoding="utf-8").splitlines().index("    import json" + comment) + 1
    out = ruff("--output-format", "concise", str(module_copy))
    if ruff_passes:
        assert out.returncode == 0, out.stdout[-3000:]
    else:
        assert out.returncode == 1 and f"budget.py:{row}:5: PLC0415" in out.stdout, out.stdout[-3000:]
    assert (unexplained_local_imports(module_copy) == []) is says_why_too
