"""Freshness budget and burn: the burn alert raised once when an objective's recorded hours burn its error
budget too fast, restored once when they no longer do, through the alert outbox; a line per objective in the
owners' monthly SLA report."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.test import override_settings

from alerts.models import Channel, Event, Notification, Rule
from alerts.services.freshness_events import freshness_alerts
from crawlcore.models import FreshnessHour, FreshnessObjective, Server
from crawlcore.services.freshness import freshness_save, hour_start
from monitoring.models import ServerMonitor
from reports.models import SlaReportSent
from reports.sla import sla_reports_send

pytestmark = pytest.mark.django_db


def _objective() -> FreshnessObjective:
    Server.objects.create(scheme="http", host="a.example", port=80, group="physics", owner_email="ops@uni.example")
    freshness_save(spec={"name": "a-day", "site": "http://a.example", "pages": "all", "target": 86400, "budget": 100})
    return FreshnessObjective.objects.get()


def _hours(obj: FreshnessObjective, flags: list[bool], *, now: datetime) -> None:
    """Recorded hours, newest first."""
    FreshnessHour.objects.filter(objective=obj).delete()
    FreshnessHour.objects.bulk_create(
        FreshnessHour(objective=obj, hour=hour_start(now) - timedelta(hours=k), met=met) for k, met in enumerate(flags)
    )


def test_burn_is_told_once_then_restored_once_through_the_channels_that_ask_for_it():
    obj = _objective()
    channel = Channel.objects.create(name="ops", url="json://127.0.0.1:9/hook")
    Rule.objects.create(channel=channel, kinds="freshness.burn,freshness.restored", group="physics")
    now = datetime.now(UTC)
    _hours(obj, [True] * 24, now=now)
    assert freshness_alerts(now=now) == []
    _hours(obj, [False, False, False] + [True] * 21, now=now)  # 3 of the last 6 hours missed
    burned = freshness_alerts(now=now)
    assert [e.kind for e in burned] == ["freshness.burn"] and "a-day" in burned[0].reason
    assert freshness_alerts(now=now) == []  # raised already: told once
    assert Notification.objects.filter(event=burned[0], channel=channel).count() == 1
    _hours(obj, [True] * 24, now=now)
    restored = freshness_alerts(now=now)
    assert [e.kind for e in restored] == ["freshness.restored"]
    assert Event.objects.filter(kind__startswith="freshness.").count() == 2


def test_a_rule_for_every_server_event_does_not_take_freshness_events_unasked():
    obj = _objective()
    channel = Channel.objects.create(name="all", url="json://127.0.0.1:9/all")
    Rule.objects.create(channel=channel, kinds="")
    now = datetime.now(UTC)
    _hours(obj, [False] * 6, now=now)
    assert len(freshness_alerts(now=now)) == 1
    assert not Notification.objects.filter(channel=channel).exists()


@override_settings(TIME_ZONE="UTC", EMAIL_HOST="")
def test_the_monthly_sla_report_has_a_line_per_objective(settings, tmp_path):
    settings.DATA_DIR = str(tmp_path)
    obj = _objective()
    ServerMonitor.objects.create(server=obj.site)
    march = datetime(2026, 3, 10, tzinfo=UTC)
    _hours(obj, [True, True, True, False], now=march)
    sla_reports_send(now=datetime(2026, 4, 3, 9, 0, tzinfo=UTC))
    body = SlaReportSent.objects.get(owner_email="ops@uni.example").body
    assert "freshness a-day (http://a.example, all): p95 staleness within 86400 s held 75.0 % of 4 hours" in body
