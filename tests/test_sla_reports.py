"""Owners' monthly uptime / SLA reports: each owner gets last month's report of their servers once, by
e-mail (a real local SMTP server) or, without e-mail, as a file; a second run sends nothing again."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings

from crawlcore.models import Server
from monitoring.models import ServerMonitor, StatusChange
from reports.models import SlaReportSent
from reports.sla import previous_month, sla_reports_send
from testweb.alerts import smtp_server

NOW = datetime(2026, 4, 3, 9, 0, tzinfo=UTC)
MARCH = datetime(2026, 3, 1, tzinfo=UTC)


def owned(host: str, owner: str, **monitor) -> Server:
    server = Server.objects.create(scheme="http", host=host, port=80, owner_email=owner)
    ServerMonitor.objects.create(server=server, **monitor)
    StatusChange.objects.create(server=server, from_status="unknown", to_status="normal", at=MARCH - timedelta(days=1))
    return server


@pytest.fixture
def owners(db):
    a = owned("a.example", "ops@uni.example", name="Main site", sla_target=99.9)
    owned("b.example", "OPS@uni.example")
    owned("c.example", "lab@uni.example")
    StatusChange.objects.create(server=a, from_status="normal", to_status="error", at=MARCH + timedelta(days=3))
    StatusChange.objects.create(
        server=a, from_status="error", to_status="normal", at=MARCH + timedelta(days=3, hours=2)
    )


@override_settings(TIME_ZONE="UTC")
def test_each_owner_gets_last_months_report_once_by_email(owners):
    assert previous_month(NOW) == "2026-03"
    smtp = "django.core.mail.backends.smtp.EmailBackend"  # pytest-django puts the in-memory one in its place
    with smtp_server() as box, override_settings(EMAIL_BACKEND=smtp, EMAIL_HOST=box.host, EMAIL_PORT=box.port):
        first = sla_reports_send(now=NOW)
        again = sla_reports_send(now=NOW)
    assert (first.month, first.sent, first.already) == ("2026-03", 2, 0)
    assert (again.sent, again.already) == (0, 2)
    mails = {m["To"]: m for m in box.messages}
    assert set(mails) == {"ops@uni.example", "lab@uni.example"}
    body = mails["ops@uni.example"].get_payload(decode=True).decode()
    assert "Uptime report 2026-03" in mails["ops@uni.example"]["Subject"]
    assert "Main site" in body and "7200" in body and "NO" in body and "http://b.example" in body
    assert "maintenance windows are excluded" in body
    assert "c.example" not in body


@override_settings(TIME_ZONE="UTC", EMAIL_HOST="")
def test_without_email_the_report_is_a_file_and_a_bad_month_is_one_line(owners, settings, tmp_path):
    settings.DATA_DIR = tmp_path
    call_command("send_sla_reports", "--month", "2026-03")
    sent = SlaReportSent.objects.get(owner_email="lab@uni.example")
    assert sent.channel == "file" and Path(sent.destination).read_text().startswith("Uptime report 2026-03")
    with pytest.raises(CommandError, match="expected YYYY-MM"):
        call_command("send_sla_reports", "--month", "2026/03")
