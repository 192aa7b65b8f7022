"""A module that declares ``__all__`` lists there every public name it defines."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

PACKAGE = Path(importlib.import_module("prism_memory").__file__).parent
DECLARING = sorted(path for path in PACKAGE.rglob("*.py") if "__all__" in path.read_text(encoding="utf-8")
                   and path.name != "__init__.py")


def defined_public_names(path: Path) -> set[str]:
    """The classes, functions and assigned names a module defines at its top level, not starting with ``_``."""
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(target.id for target in node.targets if isinstance(target, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {name for name in names if not name.startswith("_")}


@pytest.mark.parametrize("path", DECLARING, ids=lambda path: path.relative_to(PACKAGE).as_posix())
def test_all_lists_every_public_name_the_module_defines(path):
    module = importlib.import_module("prism_memory." + path.relative_to(PACKAGE).with_suffix("").as_posix().replace("/", "."))
    assert sorted(defined_public_names(path) - set(module.__all__)) == []
    assert sorted(set(module.__all__) - set(vars(module))) == []


def test_the_package_exports_what_it_lists():
    package = importlib.import_module("prism_memory")
    assert sorted(set(package.__all__) - set(vars(package))) == []
