"""The house's layers (docs/ARCHITECTURE.md, "Layers"): a chain, and an import goes down it, never up or
sideways. Read from the code itself: every `import` and `from … import` at any depth of a module (an
import hidden inside a function counts too), and every `importlib.import_module(...)` / `__import__(...)`
call, whose module is judged like an import when it is a literal and refused when it is computed.

    crawler, scheduling (pure) → crawlcore → monitoring, ranking, analyzer, archive → alerts → reports
      → dashboard → crawladmin → tasks

Beside the chain: testweb/ (the test webs and the cluster harness), bench/, tests/. Product code reaches
testweb only through the demo's two commands (SEAM). Modules inside the apps that hold pure logic
(PURE_MODULES) import neither Django nor Celery nor any project module but the pure ones."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# The chain, bottom first: a package may import its own modules and those of any lower level.
CHAIN = (
    ("crawler", "scheduling"),
    ("crawlcore",),
    ("monitoring", "ranking", "analyzer", "archive"),
    ("alerts", "search"),
    ("reports",),
    ("dashboard",),
    ("crawladmin",),
    ("tasks",),
)
LEVEL = {package: level for level, packages in enumerate(CHAIN) for package in packages}
BESIDE = {"testweb", "bench", "tests"}
PURE_PACKAGES = set(CHAIN[0])
# What the pure code may not import: the web and task frameworks and the libraries built on them.
FRAMEWORKS = {"django", "celery", "kombu", "rest_framework", "drf_spectacular", "django_celery_beat", "axes",
              "mozilla_django_oidc", "whitenoise"}  # fmt: skip
# Django app labels that are not their package's name.
APP_LABELS = {"crawladmin": "crawlcore"}

# Beside the chain, what each may not import.
BESIDE_FORBIDDEN = {"testweb": {"tests", "bench"}, "bench": {"tests"}}

# The only product files that may import testweb: the demo starts the bundled test web.
SEAM = {"crawladmin/management/commands/demo.py", "crawladmin/management/commands/testweb.py"}

# Pure logic that lives inside an app, beside the Django code that uses it.
PURE_MODULES = {
    "monitoring/accepted_codes.py", "monitoring/confirm.py", "monitoring/content.py", "monitoring/load_profile.py",
    "monitoring/quorum.py", "monitoring/check_stats.py", "monitoring/evidence.py",
    "ranking/blockrank.py", "ranking/convert.py", "ranking/edges.py", "ranking/pagerank.py", "ranking/synthetic.py",
    "analyzer/charts.py", "analyzer/classify.py", "analyzer/config.py", "analyzer/domains.py",
    "analyzer/language.py", "analyzer/resolve.py", "analyzer/synthetic.py",
    "archive/cdxj.py", "archive/records.py", "archive/writer.py",
    "alerts/logic.py", "alerts/recurrence.py",
    "crawladmin/settings_env.py",
    "crawlcore/models/choices.py",
    "monitoring/kinds/__init__.py", "monitoring/kinds/dns.py", "monitoring/kinds/heartbeat.py",
    "monitoring/kinds/tcp.py",
}  # fmt: skip

DYNAMIC = {"import_module", "__import__"}
COMPUTED = "<computed>"


def _imports(path: Path, rel: str = "") -> list[tuple[int, str]]:
    """(line, module) of every import in the file; a dynamic import of a computed name is COMPUTED.

    Relative imports are resolved against the file's own package; `importlib.import_module` is followed
    under any name it is bound to (`from importlib import import_module as load`); a model looked up by app
    label (`apps.get_model("alerts", "Channel")`) counts as an import of that app's models."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    dynamic = set(DYNAMIC)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "importlib":
            dynamic |= {alias.asname or alias.name for alias in node.names if alias.name == "import_module"}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(rel, node.level, node.module) if node.level else node.module
            if module:
                found.append((node.lineno, module))
        elif isinstance(node, ast.Call) and _called_name(node.func) in dynamic:
            arg = node.args[0] if node.args else None
            literal = isinstance(arg, ast.Constant) and isinstance(arg.value, str)
            found.append((node.lineno, arg.value if literal else COMPUTED))
        elif isinstance(node, ast.Call) and _called_name(node.func) == "get_model":
            arg = node.args[0] if node.args else None
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                label = arg.value.split(".", 1)[0]
                found.append((node.lineno, f"{APP_LABELS.get(label, label)}.models"))
            else:
                found.append((node.lineno, COMPUTED))
    return found


def _absolute(rel: str, level: int, module: str | None) -> str | None:
    """`from ..x import y` in file `rel`, as the absolute module it names."""
    parts = rel[: -len(".py")].split("/") if rel else []
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
        level -= 1
    base = parts[: len(parts) - level] if level <= len(parts) else []
    return ".".join([*base, *([module] if module else [])]) or None


def _called_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None


def _package_dirs(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if (p / "__init__.py").is_file())


def _judge(root: Path, rel: str, package: str, module: str) -> str | None:
    """Why importing `module` from file `rel` of `package` breaks the layers, or None."""
    top = module.split(".", 1)[0]
    if module == COMPUTED:
        return "imports a computed module name" if package not in BESIDE else None
    if package in BESIDE:
        return "imports a package it may not" if top in BESIDE_FORBIDDEN.get(package, set()) else None
    if top == "testweb" and rel not in SEAM:
        return "is product code and imports testweb outside the demo's seam"
    if top in BESIDE - {"testweb"}:
        return "is product code and imports tests or benchmarks"
    if top in LEVEL and top != package and LEVEL[top] >= LEVEL[package]:
        return "imports a package at or above its own level of the chain"
    if rel in PURE_MODULES or package in PURE_PACKAGES:
        framework = top in FRAMEWORKS or top.startswith("django")
        if framework or (top in LEVEL and top not in PURE_PACKAGES and not _pure_module(module)):
            return "is pure and imports a framework or a project module that is not pure"
    return None


def _pure_module(module: str) -> bool:
    path = module.replace(".", "/")
    return f"{path}.py" in PURE_MODULES or f"{path}/__init__.py" in PURE_MODULES


def violations(root: Path = ROOT) -> list[str]:
    out = []
    for package in _package_dirs(root):
        if package not in LEVEL and package not in BESIDE:
            out.append(f"{package}/ is in no layer: place it in CHAIN (and docs/ARCHITECTURE.md) or BESIDE")
            continue
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            for line, module in _imports(path, rel):
                why = _judge(root, rel, package, module)
                if why:
                    out.append(f"{rel}:{line} {why}: {module}")
    return out


def test_every_import_goes_down_the_chain():
    assert violations() == []


def test_every_pure_module_named_exists():
    assert sorted(m for m in PURE_MODULES if not (ROOT / m).is_file()) == []


def _scratch(tmp_path: Path, files: dict[str, str]) -> Path:
    for package in ("crawler", "crawlcore", "monitoring", "monitoring/kinds", "ranking", "alerts", "testweb"):
        (tmp_path / package).mkdir(exist_ok=True)
        (tmp_path / package / "__init__.py").write_text("")
    for rel, text in files.items():
        (tmp_path / rel).write_text(text)
    return tmp_path


@pytest.mark.parametrize(
    ("rel", "text"),
    [
        ("crawlcore/probe.py", 'import importlib\nimportlib.import_module("monitoring.selectors")\n'),
        ("crawlcore/probe.py", "def demo():\n    import testweb\n"),
        ("monitoring/probe.py", "from alerts import logic\n"),
        ("ranking/pagerank.py", "from django.db import connection\n"),
        ("crawlcore/probe.py", "__import__(name)\n"),
        ("monitoring/probe.py", "from ranking import pagerank\n"),  # sideways, within one level
        ("crawler/probe.py", "from monitoring.confirm import x\n"),  # the pure core imports an app's pure module
        ("ranking/pagerank.py", "from .models import Rank\n"),  # a relative import in a pure module
        ("monitoring/kinds/tcp.py", "from django.conf import settings\n"),  # Django in a pure package module
        ("crawlcore/probe.py", 'from importlib import import_module as load\nload("alerts.models")\n'),
        ("crawler/probe.py", "from rest_framework import serializers\n"),  # a web framework in the pure core
        ("monitoring/probe.py", 'from django.apps import apps\napps.get_model("alerts", "Channel")\n'),
    ],
)
def test_each_probe_fails_the_check(tmp_path, rel, text):
    root = _scratch(tmp_path, {rel: text})
    found = violations(root)
    assert len(found) == 1 and found[0].startswith(f"{rel}:"), found


def test_a_new_package_must_be_placed(tmp_path):
    root = _scratch(tmp_path, {})
    (root / "indexer").mkdir()
    (root / "indexer" / "__init__.py").write_text("")
    assert violations(root) == ["indexer/ is in no layer: place it in CHAIN (and docs/ARCHITECTURE.md) or BESIDE"]


def test_the_allowed_shapes_pass(tmp_path):
    root = _scratch(
        tmp_path,
        {
            "alerts/probe.py": "from monitoring import hooks\nfrom crawlcore.models import Url\n",
            "ranking/pagerank.py": "import numpy\nfrom ranking.blockrank import x\nfrom crawler import urlnorm\n",
            "testweb/probe.py": "from crawlcore.models import Url\n",
        },
    )
    assert violations(root) == []


def _drawn_chain() -> list[set[str]]:
    """The chain as docs/ARCHITECTURE.md draws it: the code block under "Layers", one level a numbered line
    (siblings on it or on the indented lines below it), top level first as drawn, returned bottom first."""
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    block = text.split("## Layers", 1)[1].split("```", 2)[1]
    levels: list[set[str]] = []
    for line in block.splitlines():
        if re.match(r"^\s*\d+\s", line):
            levels.append(set())
        if levels:
            levels[-1] |= {name for name in re.findall(r"(?<![\w/])(\w+)/", line) if name in LEVEL}
    return list(reversed(levels))


def test_the_architecture_page_draws_the_chain_this_test_holds():
    assert _drawn_chain() == [set(level) for level in CHAIN]
