"""The house's layers (docs/ARCHITECTURE.md): an import goes down, never up. Read from the code's own import
statements (every `import` and `from … import`, at any depth of a module, so an import hidden inside a
function counts too)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

PURE = {"crawler", "scheduling"}
CORE = {"crawlcore"}
APPS = {"monitoring", "ranking", "analyzer", "alerts", "reports", "archive"}
TOP = {"dashboard", "crawladmin", "tasks"}
NOT_CODE = {"tests", "bench"}

# What each package may not import: everything above it, and the tests and benchmarks.
FORBIDDEN = {
    **{p: CORE | APPS | TOP | NOT_CODE | {"django", "celery"} for p in PURE},
    **{p: APPS | TOP | NOT_CODE for p in CORE},
    **{p: TOP | NOT_CODE for p in APPS},
    "bench": {"tests"},
    "testweb": {"tests", "bench"},
}


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def _violations(package: str) -> list[str]:
    banned = FORBIDDEN[package]
    out = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for line, module in _imports(path):
            top = module.split(".", 1)[0]
            if top in banned:
                out.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    return out


@pytest.mark.parametrize("package", sorted(p for p in FORBIDDEN if (ROOT / p).is_dir()))
def test_no_package_imports_a_layer_above_it(package):
    assert _violations(package) == []


def test_the_check_would_see_an_upward_import(tmp_path):
    sample = tmp_path / "m.py"
    sample.write_text("def f():\n    from monitoring.selectors import x  # hidden in a function\n")
    assert _imports(sample) == [(2, "monitoring.selectors")]
