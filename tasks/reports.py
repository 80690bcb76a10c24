"""The link reports' beat job (queue `housekeeping`): the owners' digests. (The record of broken links is
refreshed with the dashboard's dead-link report, tasks.dashboard.refresh_dead_links.)"""

from __future__ import annotations

from dataclasses import asdict

from celery import shared_task

from reports.digests import digests_send
from reports.sla import sla_reports_send

from .retry import skip_without_database


def _digests() -> dict:
    return asdict(digests_send())


@shared_task(name="tasks.reports.send_digests")
def send_digests() -> dict | None:
    return skip_without_database("owners' digests", _digests)


def _sla_reports() -> dict:
    return asdict(sla_reports_send())


@shared_task(name="tasks.reports.send_sla_reports")
def send_sla_reports() -> dict | None:
    """Last month's uptime / SLA reports to the owners; run daily, each owner's goes out once a month."""
    return skip_without_database("SLA reports", _sla_reports)
