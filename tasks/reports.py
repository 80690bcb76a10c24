"""The link reports' beat jobs (queue `housekeeping`): keep the record of broken links current, and send
the owners' digests."""

from __future__ import annotations

from dataclasses import asdict

from celery import shared_task

from reports.digests import digests_send
from reports.services import link_breaks_refresh

from .retry import skip_without_database


def _refresh() -> dict:
    return asdict(link_breaks_refresh())


def _digests() -> dict:
    return asdict(digests_send())


@shared_task(name="tasks.reports.refresh_link_breaks")
def refresh_link_breaks() -> dict | None:
    return skip_without_database("link breaks", _refresh)


@shared_task(name="tasks.reports.send_digests")
def send_digests() -> dict | None:
    return skip_without_database("owners' digests", _digests)
