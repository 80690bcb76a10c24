"""Operator input: monitor and server settings validated in the admin's forms, and a bad row
that reached the database anyway failing its own check with the reason, never its round."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.test import override_settings

from crawlcore.models import Server, StatusCheck
from monitoring.models import ServerMonitor
from monitoring.services.check_targets import BAD_SETTINGS
from tasks.monitor import check_servers
from testweb.monitor import scripted

from .test_monitoring_checks import FAST, add_server

BAD_ROWS = [
    {"accepted_codes": "abc"},
    {"interval_s": -5.0},
    {"health_url": "javascript:alert(1)"},
    {"health_url": "http://[::1"},
    {"delay_threshold_s": -1.0},
    {"fail_after": 30000},
]


@override_settings(**FAST)
def test_bad_monitor_rows_fail_their_own_check_and_the_round_checks_every_other_server(db):
    with scripted("127.0.0.223", [200]) as good:
        host, port = good.server_address[:2]
        ids = [add_server(host, port)]
        bad_ids = []
        for i, values in enumerate(BAD_ROWS):
            sid = add_server("127.0.0.224", 10_000 + i)
            ServerMonitor.objects.filter(server_id=sid).update(**values)  # past the admin, as a shell would
            bad_ids.append(sid)
        # The good one in the middle of the batch: nothing before or after it may stop it.
        assert check_servers([*bad_ids[:3], *ids, *bad_ids[3:]]) == {"checked": 1 + len(BAD_ROWS)}
        assert good.served == 1

    ok = StatusCheck.objects.get(server_id=ids[0])
    assert (ok.category, ok.status_code) == ("normal", 200)
    for sid, values in zip(bad_ids, BAD_ROWS, strict=True):
        check = StatusCheck.objects.get(server_id=sid)
        field = next(iter(values))
        assert (check.category, check.failure_kind) == ("error", BAD_SETTINGS)
        assert field in check.detail and "unusable monitor settings" in check.detail
        monitor = ServerMonitor.objects.get(server_id=sid)
        # Moved forward: not due again at once, whatever its stored interval says.
        assert monitor.next_check_at > check.checked_at and monitor.claim_token == ""


def test_a_stored_status_no_code_writes_starts_over_instead_of_failing_the_batch(db):
    with override_settings(**FAST), scripted("127.0.0.223", [200]) as good:
        host, port = good.server_address[:2]
        sid = add_server(host, port)
        ServerMonitor.objects.filter(server_id=sid).update(status="bogus", candidate="worse")
        assert check_servers([sid]) == {"checked": 1}
    assert ServerMonitor.objects.get(server_id=sid).status == "normal"


@pytest.mark.parametrize(
    ("values", "field", "message"),
    [
        ({"accepted_codes": "abc"}, "accepted_codes", "not a status code"),
        ({"accepted_codes": "200-700"}, "accepted_codes", "100-599"),
        ({"interval_s": -5.0}, "interval_s", "within 10-604800"),
        ({"interval_s": 1e300}, "interval_s", "within"),
        ({"delay_threshold_s": -1.0}, "delay_threshold_s", "within 0-600"),
        ({"health_url": "javascript:alert(1)"}, "health_url", "http:// or https://"),
        ({"health_url": "ftp://example.org/"}, "health_url", "http:// or https://"),
        ({"health_url": "http://example.org/\r\nX-Injected: 1"}, "health_url", "control characters"),
        ({"health_url": "http:///nohost"}, "health_url", "not a usable"),
        ({"fail_after": 1000}, "fail_after", "1-100"),
    ],
)
def test_monitor_form_validation_names_the_field(db, values, field, message):
    sid = add_server("127.0.0.225", 80)
    monitor = ServerMonitor.objects.get(server_id=sid)
    for name, value in values.items():
        setattr(monitor, name, value)
    with pytest.raises(ValidationError) as info:
        monitor.full_clean()
    assert list(info.value.message_dict) == [field]
    assert message in info.value.message_dict[field][0]


def test_a_good_monitor_passes_validation(db):
    monitor = ServerMonitor.objects.get(server_id=add_server("127.0.0.225", 80))
    monitor.health_url, monitor.interval_s, monitor.accepted_codes = "https://example.org/health", 60.0, "200,401"
    monitor.full_clean()


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"scheme": "javascript"}, "scheme"),
        ({"port": 70000}, "port"),
        ({"host": "exa mple.org"}, "host"),
        ({"host": "Example.ORG"}, "host"),
        ({"host": "[::1]"}, "host"),
        ({"group": "a\x00b"}, "group"),
        ({"crawler_num": 10_001}, "crawler_num"),
    ],
)
def test_server_form_validation_names_the_field(db, values, field):
    server = Server(scheme="http", host="example.org", port=80)
    for name, value in values.items():
        setattr(server, name, value)
    with pytest.raises(ValidationError) as info:
        server.full_clean(validate_unique=False)
    assert field in info.value.message_dict


def test_admin_form_refuses_a_javascript_health_url_with_a_clear_message(admin_client, db):
    sid = add_server("127.0.0.225", 80)
    response = admin_client.post(
        f"/admin/monitoring/servermonitor/{sid}/change/",
        {"server": sid, "enabled": "on", "health_url": "javascript:alert(1)", "accepted_codes": "abc"},
    )
    assert response.status_code == 200  # the form again, with its errors
    errors = response.context["adminform"].form.errors
    assert "http:// or https://" in errors["health_url"][0]
    assert "not a status code" in errors["accepted_codes"][0]
    assert ServerMonitor.objects.get(server_id=sid).health_url == ""


def test_ipv6_origin_keeps_its_brackets():
    assert Server(scheme="http", host="::1", port=8000).origin == "http://[::1]:8000"
    assert Server(scheme="https", host="2001:db8::1", port=443).origin == "https://[2001:db8::1]"
    assert Server(scheme="http", host="example.org", port=80).origin == "http://example.org"
