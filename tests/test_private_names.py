"""No module reaches into another's private names: a name that starts with ``_`` is its own module's.

An AST scan of app/lantern_studio for ``from X import _name`` (X another module of the package, by
absolute or relative import) and for ``module._name`` where ``module`` was imported from the package.
A name two modules share is public (no leading underscore)."""

from __future__ import annotations

import ast
from pathlib import Path

import lantern_studio

ROOT = Path(lantern_studio.__file__).parent
PACKAGE = "lantern_studio"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_from(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The absolute module an ``ImportFrom`` in ``module`` names."""
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def crossings(source: str, module: str, is_package: bool) -> list[str]:
    """Every private name ``source`` (the text of ``module``) takes from another module of the package."""
    found, modules = [], set()
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = imported_from(node, module, is_package)
            if target.split(".")[0] != PACKAGE:
                continue
            for alias in node.names:
                if private(alias.name) and target != module:
                    found.append(f"{module}:{node.lineno}: from {target} import {alias.name}")
                elif not private(alias.name):
                    modules.add(alias.asname or alias.name)  # maybe a module: its attributes are checked below
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE and alias.asname:
                    modules.add(alias.asname)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and private(node.attr) and isinstance(node.value, ast.Name)
                and node.value.id in modules):
            found.append(f"{module}:{node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_no_module_imports_another_modules_private_name():
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        found += crossings(path.read_text(encoding="utf-8"), module_name(path), path.name == "__init__.py")
    assert found == []


def test_the_scan_finds_a_private_import():
    """The scan can fail: each form of reaching into another module is found, a module's own names are not."""
    source = ("from .summary import _ratio, speed_fields\n"
              "from lantern_studio.eval.bench.quality import _load\n"
              "from . import summary\n"
              "from .own import public\n"
              "x = summary._hidden(1)\n"
              "from lantern_studio.eval.bench.cli import _mine\n")
    found = crossings(source, "lantern_studio.eval.bench.cli", False)
    assert found == ["lantern_studio.eval.bench.cli:1: from lantern_studio.eval.bench.summary import _ratio",
                     "lantern_studio.eval.bench.cli:2: from lantern_studio.eval.bench.quality import _load",
                     "lantern_studio.eval.bench.cli:5: summary._hidden"]
