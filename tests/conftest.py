from __future__ import annotations

import os

import pytest

from testweb.cluster import ServiceMissing

REQUIRE_INTEGRATION = os.environ.get("CRAWLADMIN_REQUIRE_INTEGRATION") == "1"
_integration_passed = 0


def pytest_runtest_logreport(report) -> None:
    global _integration_passed
    if report.when == "call" and report.passed and "integration" in report.keywords:
        _integration_passed += 1


def pytest_sessionfinish(session, exitstatus) -> None:
    if hasattr(session.config, "workerinput"):
        return  # a pytest-xdist worker: the controller sees every worker's reports and decides
    # CI sets CRAWLADMIN_REQUIRE_INTEGRATION=1: a run in which no integration test passed is a failure,
    # whatever else passed (a deselected or silently skipped cluster test must not look green).
    if REQUIRE_INTEGRATION and exitstatus == 0 and _integration_passed == 0:
        session.exitstatus = 1
        print("\nCRAWLADMIN_REQUIRE_INTEGRATION=1 but no integration test passed")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """The cluster harness (testweb.cluster) raises ServiceMissing when this machine lacks PostgreSQL or
    redis-server: a skip here, a failure in CI (left as the error it is, with the reason)."""
    outcome = yield
    report = outcome.get_result()
    if call.excinfo is not None and call.excinfo.errisinstance(ServiceMissing) and not REQUIRE_INTEGRATION:
        path, line = item.reportinfo()[:2]
        report.outcome = "skipped"
        report.longrepr = (str(path), (line or 0) + 1, f"Skipped: {call.excinfo.value}")


@pytest.fixture(autouse=True, scope="session")
def _alerts_may_reach_loopback():
    """The alert receivers of the tests listen on loopback, which the private-address guard refuses by
    default: allowed here as the crawl tests allow it (CRAWL_ALLOW_PRIVATE), for this process and the
    manage.py processes it starts. A test of the guard sets ALERTS_ALLOW_PRIVATE itself."""
    from django.conf import settings

    os.environ.setdefault("ALERTS_ALLOW_PRIVATE", "127.0.0.0/8")
    settings.ALERTS_ALLOW_PRIVATE = ("127.0.0.0/8",)
    yield


def skip_or_fail(reason: str):
    """Skip when a real service is missing, except in CI, where that is a failure."""
    if REQUIRE_INTEGRATION:
        pytest.fail(f"integration prerequisite missing: {reason}")
    pytest.skip(reason)
