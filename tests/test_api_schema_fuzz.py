"""Every operation of /api/v1/schema fuzzed from the schema itself (schemathesis), as an operator and as a
viewer: no server error, every answer's status, type and body as the schema says, and no write a viewer can
make. Bounded: EXAMPLES cases per operation and role (the whole run stays within a few minutes)."""

from __future__ import annotations

import os
import time

import pytest
import schemathesis
from django.contrib.auth.models import Group, User
from django.core.wsgi import get_wsgi_application
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from crawladmin.configfile.apply import config_apply
from crawladmin.configfile.export import config_export_yaml
from dashboard.tokens import api_token_create
from monitoring.models import Incident, IncidentUpdate, ServerMonitor

pytestmark = pytest.mark.django_db

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", 12))
# The whole run; past it the test fails rather than holding `make test` (FUZZ_BUDGET_S: more, to explore).
BUDGET_S = float(os.environ.get("FUZZ_BUDGET_S", 240.0))
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
SAFE = {"GET", "HEAD", "OPTIONS"}

STATE = """\
servers:
  - url: http://a.example
    group: physics
monitors:
  - server: http://a.example
    interval_s: 120
  - server: tcp://db.example:5432
  - server: dns://example.org
    dns_record_type: MX
  - server: heartbeat://nightly
    period_s: 3600
channels:
  - name: ops
    url: json://127.0.0.1:9/hook
    rules: [{kinds: "down,up", group: physics}]
maintenance:
  - group: physics
    schedule: "sun 02:00"
    duration_minutes: 60
status_pages:
  - slug: physics
    group: physics
jobs:
  - name: docs
    seeds: [http://a.example/]
"""


def _token(name: str, *groups: str) -> str:
    user = User.objects.create_user(name, password="unused-pw-1")
    for g in groups:
        user.groups.add(Group.objects.get_or_create(name=g)[0])
    return api_token_create(user=user)[1]


def _state() -> None:
    config_apply(STATE)
    server = ServerMonitor.objects.get(kind="http").server
    incident = Incident.objects.create(server=server, title="a.example down")
    IncidentUpdate.objects.create(incident=incident, status="investigating", text="looking")


def test_every_operation_of_the_schema_holds_for_an_operator_and_a_viewer():
    _state()
    tokens = {"operator": _token("op", "operator"), "viewer": _token("view", "viewer")}
    app = get_wsgi_application()
    schema = schemathesis.openapi.from_wsgi("/api/v1/schema", app,
                                            headers={"Authorization": f"Bearer {tokens['viewer']}"})  # fmt: skip
    started = time.monotonic()
    failures: list[str] = []
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 40, [op.label for op in operations]
    for operation in operations:
        for role, token in tokens.items():
            before = _snapshot() if role == "viewer" else None
            failure = _fuzz(operation, role, {"Authorization": f"Bearer {token}"})
            if before is not None and _snapshot() != before:
                failure += " a viewer's request changed the configuration or the incidents"
            if failure:
                failures.append(f"{role} {operation.label}: {failure[:1500]}")
            if os.environ.get("FUZZ_LOG"):
                with open(os.environ["FUZZ_LOG"], "a") as log:
                    log.write(f"{time.monotonic() - started:.1f} {role} {operation.label} {failure[:600]}\n")
            assert time.monotonic() - started < BUDGET_S, f"past {BUDGET_S} s at {operation.label}"
    assert failures == [], "\n\n".join(failures)


def _snapshot() -> tuple:
    """What a write could change: the whole configuration and the incidents' updates."""
    return config_export_yaml(include_servers="all"), IncidentUpdate.objects.count(), Incident.objects.count()


def _fuzz(operation, role: str, headers: dict) -> str:
    """EXAMPLES cases of one operation as one role: what failed, or ""."""

    # No shrinking: the first failing case is reported as found (shrinking one costs minutes).
    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None, report_multiple_bugs=False,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(case=operation.as_strategy())
    def fuzz(case):
        response = case.call(headers=headers)
        case.validate_response(response, checks=CHECKS, headers=headers)
        if role == "viewer" and case.method.upper() not in SAFE:
            assert response.status_code >= 400, f"a viewer's {case.method} answered {response.status_code}"

    try:
        fuzz()
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - schemathesis raises a group; each is collected and reported
        return str(exc)
    return ""
