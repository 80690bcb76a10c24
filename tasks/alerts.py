"""Alerts (queue `housekeeping`): the outbox sender, on beat every 10 s and, embedded, after each change;
recurring maintenance windows written ahead; freshness objectives' hours and burn alerts."""

from __future__ import annotations

from celery import shared_task

from alerts.services.freshness_events import freshness_alerts
from alerts.services.maintenance_windows import maintenance_windows_write
from alerts.services.reminders import reminders_write
from alerts.services.send import notifications_send
from crawlcore.services.freshness import freshness_record

from .retry import skip_without_database


def _send_round() -> dict:
    reminders_write()
    sent = notifications_send()
    return {"messages": len(sent), "delivered": sum(s.events for s in sent if s.ok)}


@shared_task(name="tasks.alerts.send")
def send() -> dict | None:
    # Without a database nothing is claimed, so nothing is lost: the rows wait for the next round.
    return skip_without_database("alerts send", _send_round)


@shared_task(name="tasks.alerts.maintenance")
def maintenance() -> int | None:
    return skip_without_database("alerts maintenance windows", maintenance_windows_write)


def _freshness_round() -> dict:
    recorded = freshness_record()
    return {"objectives": recorded, "alerts": len(freshness_alerts())}


@shared_task(name="tasks.alerts.freshness")
def freshness() -> dict | None:
    # This hour of each freshness objective (rewritten until the hour ends), then its burn alerts.
    return skip_without_database("freshness objectives", _freshness_round)
