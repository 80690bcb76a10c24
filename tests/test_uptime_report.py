"""The monthly uptime / SLA report: down time measured on the status timeline, maintenance cut out, incidents
as runs of bad statuses, latency of the answered checks, the per-server SLA target; the command's formats
and mistakes; the dashboard page with its download, limited to the reader's groups."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import CommandError, call_command
from django.test import override_settings

from crawlcore.models import Server, StatusCheck
from monitoring.models import MaintenanceWindow, ServerMonitor, StatusChange
from monitoring.report import COLUMNS, uptime_report
from monitoring.sla import period_uptime

MONTH_START = datetime(2026, 3, 1, tzinfo=UTC)
MONTH_END = datetime(2026, 4, 1, tzinfo=UTC)
NOW = datetime(2026, 4, 15, tzinfo=UTC)


def h(hours: float) -> datetime:
    return MONTH_START + timedelta(hours=hours)


# --------------------------------------------------------------------------------------------------
# The pure part


def test_downtime_is_timeline_time_and_disconnect_then_error_is_one_incident():
    figures = period_uptime(
        start=MONTH_START, end=MONTH_END, status_before="normal",
        changes=[(h(10), "disconnect"), (h(11), "error"), (h(12), "normal"), (h(20), "error"), (h(20.5), "normal")],
    )  # fmt: skip
    assert figures.downtime_s == 2.5 * 3600 and figures.incidents == 2 and figures.longest_incident_s == 2 * 3600
    month_s = (MONTH_END - MONTH_START).total_seconds()
    assert figures.uptime_percent == pytest.approx(100 * (month_s - 2.5 * 3600) / month_s)


def test_maintenance_is_cut_out_of_downtime_and_counted_time():
    figures = period_uptime(
        start=MONTH_START, end=MONTH_END, status_before="normal",
        changes=[(h(10), "disconnect"), (h(14), "normal")], maintenance=[(h(9), h(12)), (h(11), h(13))],
    )  # fmt: skip
    assert figures.downtime_s == 3600 and figures.maintenance_s == 4 * 3600 and figures.incidents == 1
    month_s = (MONTH_END - MONTH_START).total_seconds()
    assert figures.counted_s == month_s - 4 * 3600
    inside = period_uptime(
        start=MONTH_START, end=MONTH_END, status_before="normal",
        changes=[(h(10), "disconnect"), (h(11), "normal")], maintenance=[(h(9), h(12))],
    )  # fmt: skip
    assert (inside.downtime_s, inside.incidents) == (0, 0)  # an outage inside maintenance is no incident


def test_an_outage_running_into_the_month_and_unknown_time_not_counted():
    carried = period_uptime(start=MONTH_START, end=MONTH_END, status_before="error", changes=[(h(5), "normal")])
    assert (carried.downtime_s, carried.incidents) == (5 * 3600, 1)
    new = period_uptime(start=MONTH_START, end=MONTH_END, status_before="unknown", changes=[(h(24), "normal")])
    assert new.counted_s == (MONTH_END - h(24)).total_seconds() and new.uptime_percent == 100.0
    assert period_uptime(start=MONTH_START, end=MONTH_END, status_before="unknown", changes=[]).uptime_percent is None


# --------------------------------------------------------------------------------------------------
# Against the database


def monitored(host: str, group: str = "", **monitor) -> Server:
    server = Server.objects.create(scheme="http", host=host, port=80, group=group)
    ServerMonitor.objects.create(server=server, **monitor)
    return server


def change(server: Server, at: datetime, to: str, frm: str = "normal") -> None:
    StatusChange.objects.create(server=server, from_status=frm, to_status=to, at=at)


def checks(server: Server, latencies: list[float], at: datetime) -> None:
    StatusCheck.objects.bulk_create(
        StatusCheck(server=server, requested_url="http://x/", checked_at=at + timedelta(minutes=i), status_code=200,
                    category="normal", latency_ms=ms, agent="monitor")
        for i, ms in enumerate(latencies)
    )  # fmt: skip


@pytest.fixture
def fleet(db):
    a = monitored("a.example", "campus", name="web A", sla_target=99.9)
    b = monitored("b.example", "lab", sla_target=99.0)
    change(a, MONTH_START - timedelta(days=3), "normal", "unknown")
    change(b, MONTH_START - timedelta(days=3), "normal", "unknown")
    change(a, h(10), "disconnect")
    change(a, h(11), "normal", "disconnect")
    change(b, h(30), "error")
    change(b, h(31), "normal", "error")
    MaintenanceWindow.objects.create(server=b, starts_at=h(29), ends_at=h(32), reason="upgrade")
    checks(a, [float(ms) for ms in range(1, 101)], h(50))
    return a, b


@override_settings(TIME_ZONE="UTC")
def test_report_rows_per_server_with_latency_and_sla(fleet):
    rows = {r["server"]: r for r in uptime_report(month="2026-03", now=NOW).rows}
    a, b = rows["web A"], rows["http://b.example"]
    assert (a["downtime_seconds"], a["incidents"], a["longest_incident_seconds"]) == (3600, 1, 3600)
    assert a["mean_latency_ms"] == 50.5 and a["p95_latency_ms"] == pytest.approx(95.0, abs=0.1)
    assert a["sla_target"] == 99.9 and a["sla_met"] is False and 99.8 < a["uptime_percent"] < 99.9
    assert (b["downtime_seconds"], b["incidents"], b["uptime_percent"], b["sla_met"]) == (0, 0, 100.0, True)
    assert [r["server"] for r in uptime_report(month="2026-03", group="lab", now=NOW).rows] == ["http://b.example"]


@override_settings(TIME_ZONE="UTC")
def test_command_writes_csv_or_json_to_a_file_and_refuses_a_bad_month(fleet, tmp_path, capsys):
    call_command("uptime_report", "--month", "2026-03", "--format", "csv")
    out, err = capsys.readouterr()
    rows = list(csv.DictReader(io.StringIO(out)))
    assert tuple(rows[0]) == COLUMNS and {r["month"] for r in rows} == {"2026-03"}
    assert "maintenance windows are excluded" in err
    target = tmp_path / "march.json"
    call_command("uptime_report", "--month", "2026-03", "--format", "json", "-o", str(target))
    data = json.loads(target.read_text())
    assert data["maintenance"].startswith("maintenance windows are excluded") and len(data["servers"]) == 2
    for bad in ("2026-13", "March", "26-03"):
        with pytest.raises(CommandError, match="expected YYYY-MM"):
            call_command("uptime_report", "--month", bad)
    with pytest.raises(CommandError, match="cannot write"):
        call_command("uptime_report", "-o", str(tmp_path / "no" / "such" / "dir.csv"))


@override_settings(TIME_ZONE="UTC")
def test_dashboard_page_and_download_show_only_the_readers_groups(fleet, client):
    user = User.objects.create_user("v", password="pw-not-secret")
    user.groups.add(Group.objects.get(name="viewer"), Group.objects.get_or_create(name="servers:campus")[0])
    client.force_login(user)
    page = client.get("/dashboard/uptime/?month=2026-03")
    assert page.status_code == 200
    html = page.content.decode()
    assert "web A" in html and "b.example" not in html and "/dashboard/uptime/report.csv?month=2026-03" in html
    download = client.get("/dashboard/uptime/report.csv?month=2026-03")
    assert download["Content-Disposition"] == 'attachment; filename="uptime-2026-03.csv"'
    rows = list(csv.DictReader(io.StringIO(download.content.decode())))
    assert [r["server"] for r in rows] == ["web A"]
    assert client.get("/dashboard/uptime/?group=lab").status_code == 404
    assert client.get("/dashboard/uptime/?month=2026-99").status_code == 400
