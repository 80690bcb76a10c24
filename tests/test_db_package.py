"""crawlcore.db is the only code that asks which database it runs on; its SQLite paths (the embedded mode)
behave as the callers expect. The PostgreSQL paths run in the *_pg / *_cluster integration tests."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest

from crawlcore.db import estimates, locks
from crawlcore.models import Server

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "crawlcore" / "db"
# Migrations are history: 0007's fillfactor step asks the schema editor's connection itself, so that
# replaying it never depends on today's code.
MIGRATIONS = re.compile(r"/migrations/")
# A vendor check, the package's private one, or an ORM expression compiled per vendor.
VENDOR = re.compile(r"\.vendor\b|\bis_postgres\b|crawlcore\.db\._vendor|from \._vendor|\bdef as_(sqlite|postgresql)\b")


def _sources() -> list[Path]:
    """The project's own Python files: not those of any virtualenv (.venv, the replay's .venv-pywb), of git or
    of an installed package."""
    skip = {"node_modules", "__pycache__", "site-packages"}
    return [
        p
        for p in ROOT.rglob("*.py")
        if not any(part.startswith(".") or part in skip for part in p.relative_to(ROOT).parts[:-1])
        and PACKAGE not in p.parents
        and p != Path(__file__).resolve()
    ]


def test_only_crawlcore_db_branches_on_the_database_vendor():
    found = [
        f"{p.relative_to(ROOT)}:{n}: {line.strip()}"
        for p in _sources()
        if not MIGRATIONS.search(p.as_posix())
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if VENDOR.search(line)
    ]
    assert not found, "ask crawlcore.db for the operation instead:\n" + "\n".join(found)


@pytest.mark.django_db
def test_table_rows_counts_exactly_on_sqlite():
    Server.objects.create(scheme="http", host="a.test", port=80)
    assert estimates.table_rows(Server) == 1


@pytest.mark.django_db(transaction=True)
def test_a_granted_namespace_is_always_taken_on_sqlite():
    with locks.advisory_lock("robots", 7) as first, locks.advisory_lock("robots", 7) as second:
        assert first and second


@pytest.mark.django_db(transaction=True)
def test_a_process_namespace_lets_one_thread_in_at_a_time_on_sqlite():
    with locks.advisory_lock("dashboard", "x", wait=locks.FOREVER) as held:
        assert held
        other: list[bool] = []

        def contend() -> None:
            with locks.advisory_lock("dashboard", "x", wait=0.05) as taken:
                other.append(taken)

        thread = threading.Thread(target=contend)
        thread.start()
        thread.join()
        assert other == [False]
        with locks.advisory_lock("dashboard", "y") as different_key:
            assert different_key
    with locks.advisory_lock("dashboard", "x") as again:
        assert again
