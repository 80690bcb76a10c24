"""Owners' monthly uptime / SLA reports: each owner (a server's owner e-mail) gets, once per month, the
uptime report of the month before for their monitored servers (monitoring.report: down time, incidents,
SLA target met or not; maintenance excluded).

Delivery as the owners' digests: by e-mail through the alerts app's e-mail channel when EMAIL_HOST is set,
else (or when the relay refuses) to a file under DATA_DIR/sla-reports/. A SlaReportSent row per owner and
month, written before the delivery, makes a second run (or a second worker) send nothing again.
"""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from alerts.delivery import deliver
from alerts.destinations import Destination
from alerts.logic import Message
from crawlcore.selectors_freshness import objectives_month_lines
from monitoring.models import ServerMonitor
from monitoring.report import MAINTENANCE_NOTE, month_bounds, uptime_report

from .models import SlaReportSent

log = logging.getLogger(__name__)


@dataclass
class SlaOutcome:
    month: str
    sent: int = 0
    already: int = 0  # owners whose report of this month went out before


def previous_month(now: datetime | None = None) -> str:
    _, start, _ = month_bounds(None, now)
    return month_bounds(None, start - timedelta(seconds=1))[0]


def sla_reports_send(*, month: str | None = None, now: datetime | None = None) -> SlaOutcome:
    """Send each owner the report of `month` (default: the month before this one) unless it went out."""
    now = now or timezone.now()
    month = month or previous_month(now)
    owners: dict[str, list[int]] = defaultdict(list)
    rows = ServerMonitor.objects.filter(enabled=True).exclude(server__owner_email="")
    for sid, email in rows.values_list("server_id", "server__owner_email").order_by("server_id"):
        owners[email.lower()].append(sid)
    outcome = SlaOutcome(month_bounds(month, now)[0])
    for email, ids in sorted(owners.items()):
        report = uptime_report(month=outcome.month, server_ids=ids, now=now)
        body = f"Uptime report {report.month} for {email}\n\n{report.text()}\n{MAINTENANCE_NOTE}.\n"
        body += _freshness_lines(ids, outcome.month, now)
        try:
            with transaction.atomic():
                sent = SlaReportSent.objects.create(
                    owner_email=email, month=report.month, sent_at=now, channel="", body=body
                )
        except IntegrityError:  # sent before (or by another worker just now)
            outcome.already += 1
            continue
        sent.channel, sent.destination = _deliver(email, report.month, body, now)
        sent.save(update_fields=["channel", "destination"])
        outcome.sent += 1
    return outcome


def _freshness_lines(server_ids: list[int], month: str, now: datetime) -> str:
    """The owner's freshness objectives, one line each (crawlcore.selectors_freshness), after the uptime."""
    _, start, end = month_bounds(month, now)
    lines = objectives_month_lines(server_ids=server_ids, start=start, end=end)
    return "\nFreshness objectives:\n" + "\n".join(lines) + "\n" if lines else ""


def _deliver(email: str, month: str, body: str, now: datetime) -> tuple[str, str]:
    if settings.EMAIL_HOST:
        key = f"sla-{month}-{re.sub(r'[^A-Za-z0-9]+', '-', email)}"  # a resent copy folds into the first
        outcome = deliver(
            Destination("email", f"email:{email}", (email,)), Message(f"Uptime report {month}", body, (), key)
        )
        if outcome.ok:
            return "email", email
        log.warning("SLA report to %s not sent (%s): written to a file instead", email, outcome.error)
    folder = Path(settings.DATA_DIR) / "sla-reports"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{month}-{re.sub(r'[^A-Za-z0-9@._-]+', '_', email)[:100]}.txt"
    path.write_text(body, encoding="utf-8")
    return "file", str(path)
