"""Alerts (queue `housekeeping`): the outbox sender, on beat every 10 s and, embedded, after each change."""

from __future__ import annotations

from celery import shared_task

from alerts.services.maintenance import maintenance_windows_write
from alerts.services.reminders import reminders_write
from alerts.services.send import notifications_send


@shared_task(name="tasks.alerts.send")
def send() -> dict:
    reminders_write()
    sent = notifications_send()
    return {"messages": len(sent), "delivered": sum(s.events for s in sent if s.ok)}


@shared_task(name="tasks.alerts.maintenance")
def maintenance() -> int:
    return maintenance_windows_write()
