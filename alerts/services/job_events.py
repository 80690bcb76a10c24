"""A crawl job's run told through the alert channels: job.started, job.finished, job.stalled and
job.budget_reached (the crawl core's job services decide each with one guarded write and call the hook alerts
registers with crawlcore.services.job_events, in that write's transaction). Each is one Event a run (its
`once_key` unique), with one outbox row per channel whose rules take the kind for the job, its group, or all;
the sender delivers them like any other (grouping window, retries, idempotency key)."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from crawlcore.models import Job, JobRun

from ..logic import routes_match
from ..models import Event, Notification
from .outbox import routes_load, send_soon_on_commit


def job_event_reason(kind: str, job: Job, facts: dict) -> str:
    """The event's line in words: what a reader of the message needs about the run."""
    if kind == "job.started":
        return f"run started ({facts.get('trigger', 'manual')}); seeds: {', '.join(job.seeds[:3])}"
    if kind == "job.finished":
        return (f"{facts.get('pages', 0)} pages, {facts.get('failures', 0)} failures in {facts.get('seconds', 0)} s; "
                f"stop reason: {facts.get('stop_reason', '')}")  # fmt: skip
    if kind == "job.stalled":
        reasons = facts.get("reasons") or []
        why = "; ".join(f"{r['server']}: {r['reason']}" for r in reasons[:5]) or "no reason known"
        return f"no page done since {facts.get('since', '?')}; waiting: {why}"
    if kind == "job.budget_reached":
        return f"its page budget ({facts.get('max_pages')}) is used up: no new URL is taken in"
    return kind


def job_event(*, kind: str, job: Job, run: JobRun, facts: dict) -> Event | None:
    """Write the run's event and its outbox rows; None when the run told it already (the once_key)."""
    now = timezone.now()
    try:
        with transaction.atomic():
            event = Event.objects.create(
                kind=kind, server=None, subject=f"job {job.name}", at=now, once_key=f"{kind}:{run.id}",
                reason=job_event_reason(kind, job, facts)[:300],
            )  # fmt: skip
    except IntegrityError:
        return None  # told already for this run
    channels = routes_match(routes_load(), kind=kind, server_id=None, group=job.group, job=job.name)
    due = now + timedelta(seconds=settings.ALERTS_GROUP_WINDOW)
    Notification.objects.bulk_create(
        [Notification(event=event, channel_id=cid, created_at=now, next_attempt_at=due) for cid in channels]
    )
    if channels:
        send_soon_on_commit(settings.ALERTS_GROUP_WINDOW + 1)
    return event
