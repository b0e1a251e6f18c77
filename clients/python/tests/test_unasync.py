"""One SDK source: ``_sync.py`` is generated from ``_async.py``; the imports form no circle."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from .conftest import PACKAGE_DIR

SOURCE_DIR = PACKAGE_DIR / "src" / "valuation_marks"


def test_the_sync_client_is_generated_from_the_async_one() -> None:
    done = subprocess.run(
        [sys.executable, str(PACKAGE_DIR / "scripts" / "unasync.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, f"{done.stderr}(change _async.py, then run python scripts/unasync.py)"
    assert (
        (SOURCE_DIR / "_sync.py")
        .read_text(encoding="utf-8")
        .startswith("# generated from _async.py by scripts/unasync.py; do not edit.")
    )


def imports(path: Path) -> set[str]:
    """The package's modules ``path`` imports anywhere: top level, in functions, TYPE_CHECKING."""
    modules = {p.stem for p in SOURCE_DIR.glob("*.py")}
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module is None:  # from . import x
                found.update(alias.name for alias in node.names if alias.name in modules)
            elif node.level == 1 and node.module is not None:
                found.add(node.module.split(".")[0])
            elif node.level == 0 and (node.module or "").startswith("valuation_marks."):
                found.add((node.module or "").split(".")[1])
            elif node.level == 0 and node.module == "valuation_marks":
                found.add("__init__")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("valuation_marks."):
                    found.add(alias.name.split(".")[1])
                elif alias.name == "valuation_marks":
                    found.add("__init__")
    return found - {path.stem}


def test_the_package_imports_form_no_circle() -> None:
    graph = {path.stem: imports(path) for path in SOURCE_DIR.glob("*.py")}
    assert graph["_async"] and graph["models"]  # the walk sees imports at all
    done: set[str] = set()

    def visit(module: str, trail: list[str]) -> None:
        if module in trail:
            cycle = [*trail[trail.index(module) :], module]
            raise AssertionError(f"import circle: {' -> '.join(cycle)}")
        if module in done:
            return
        for imported in sorted(graph.get(module, ())):
            visit(imported, [*trail, module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])
    assert "__init__" not in set().union(*(graph[m] for m in graph if m != "__init__"))
