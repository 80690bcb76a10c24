"""Response assertions of HTTP monitors: status set, header present / equal, JSON path equals / contains,
response time below; a failing one makes the check an error naming it (a JSON health endpoint answering 200
with "degraded" is no longer normal); bad assertions refused at save with their line."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError
from django.test import override_settings

from crawlcore.models import Server, StatusCheck
from monitoring.assertions import AssertionRuleError, assertion_failure, assertions_parse
from monitoring.models import ServerMonitor
from monitoring.services.checks import monitors_check
from testweb.monitor_kinds import json_health

BODY = json.dumps({"status": "ok", "checks": ["db", "cache"], "build": {"version": 2, "name": "api-7"}}).encode()
HEADERS = {"x-version": "2", "cache-control": "no-store"}


def fail(text: str, *, status: int = 200, body: bytes = BODY, total_ms: float = 100.0) -> str | None:
    return assertion_failure(assertions_parse(text), status=status, headers=HEADERS, body=body, total_ms=total_ms)


def test_passing_assertions_of_every_kind():
    text = """
        # all of these hold
        status in 200-204
        header cache-control
        header x-version == 2
        json $.status == "ok"
        json $.status == ok
        json $.build.version == 2
        json $.checks[1] == "cache"
        json $.checks contains "db"
        json $.build.name contains "api"
        json $.build contains "version"
        time < 500
    """
    assert fail(text) is None


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("status in 204", "status 200"),
        ("header x-missing", "no such header"),
        ("header x-version == 3", "it is '2'"),
        ('json $.status == "degraded"', 'found "ok"'),
        ("json $.checks contains queue", 'found ["db", "cache"]'),
        ("json $.nowhere[3] == 1", "found nothing"),
        ("time < 50ms", "took 100 ms"),
    ],
)
def test_a_failing_assertion_is_named_with_what_was_found(line, why):
    assert fail(line) == f"assertion {line!r} failed: {why}"


def test_a_body_that_is_not_json_fails_json_assertions_only():
    assert fail("json $.status == ok", body=b"<html>") == "assertion 'json $.status == ok' failed: the body is not JSON"
    assert fail("header x-version == 2", body=b"<html>") is None
    deep = b"[" * 100_000 + b"]" * 100_000
    assert "not JSON" in fail("json $[0] == 1", body=deep)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("status in 99x", "line 1"),
        ("json status == ok", "line 1"),
        ("json $.a..b == 1", "cannot read"),
        ("body must be fine", "is not an assertion"),
        ("time < soon", "is not an assertion"),
    ],
)
def test_bad_assertions_are_refused_with_their_line(text, message):
    with pytest.raises(AssertionRuleError, match=message):
        assertions_parse(text)


def monitored(url: str, trusted: bool = True, **monitor) -> ServerMonitor:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    server = Server.objects.create(scheme="http", host=parts.hostname, port=parts.port, trusted=trusted)
    return ServerMonitor.objects.create(server=server, health_url=url, **monitor)


@override_settings(MONITOR_RETRIES=0, CRAWL_ALLOW_PRIVATE=("127.0.0.0/8",))
def test_a_degraded_json_health_endpoint_is_an_error_naming_the_assertion(db):
    with json_health(BODY, HEADERS) as health:
        m = monitored(health.url, assertions='json $.status == "ok"\nheader x-version == 2', fail_after=1)
        assert monitors_check(server_ids=[m.server_id], claim=False)[0].category == "normal"
        health.body = json.dumps({"status": "degraded"}).encode()
        checked = monitors_check(server_ids=[m.server_id], claim=False)[0]
    assert (checked.category, checked.failure) == ("error", "assertion")
    row = StatusCheck.objects.filter(server_id=m.server_id).latest("checked_at")
    assert (row.category, row.failure_kind, row.status_code) == ("error", "assertion", 200)
    assert row.detail == """assertion 'json $.status == "ok"' failed: found "degraded\""""
    assert ServerMonitor.objects.get(pk=m.pk).status == "error"


@override_settings(MONITOR_RETRIES=0, CRAWL_ALLOW_PRIVATE=("127.0.0.0/8",))
def test_body_and_header_assertions_need_a_trusted_server_status_and_time_do_not(db):
    with json_health(BODY, HEADERS) as health:
        m = monitored(health.url, trusted=False, assertions='json $.status == "degraded"\nstatus in 204')
        checked = monitors_check(server_ids=[m.server_id], claim=False)[0]
    assert checked.detail == "assertion 'status in 204' failed: status 200"  # the json one was not run
    m.assertions = 'json $.status == "degraded"'
    with pytest.raises(ValidationError, match="run only on a trusted server"):
        m.full_clean()
    m.assertions = "time < never"
    with pytest.raises(ValidationError, match="is not an assertion"):
        m.full_clean()
