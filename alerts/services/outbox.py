"""Writing the outbox: events from monitoring's confirmed changes, and one Notification row per matching
channel, in the caller's transaction (monitoring.hooks calls ``events_from_changes`` inside the one that
writes the StatusChange rows), so a change and its notifications commit together or not at all.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from celery import current_app
from django.conf import settings
from django.db import transaction

from crawlcore.models import Server, StatusCheck

from ..logic import BAD, Kind, Route, cert_threshold_crossed, event_kind, kinds_parse, routes_match
from ..models import Channel, Event, Notification, Rule, owner_destination
from .mutes import muted_servers

log = logging.getLogger(__name__)

SEND_TASK = "tasks.alerts.send"
OWNER_KINDS = frozenset(kinds_parse(""))  # a server's owner hears every kind of its own server's events


def routes_load() -> list[Route]:
    rules = Rule.objects.filter(channel__enabled=True).values_list("channel_id", "kinds", "group", "server_id", "job")
    return [Route(cid, frozenset(kinds_parse(kinds)), group, sid, job) for cid, kinds, group, sid, job in rules]


def _owner_channels(emails: set[str]) -> dict[str, int]:
    """The channel of each owner address, made on first use. Without EMAIL_HOST there is no way to mail
    an owner: their events then go only where the rules send them."""
    if not emails or not settings.EMAIL_HOST:
        return {}
    # Only a channel to the owner's own address is theirs: one marked theirs but pointing elsewhere (written
    # past Channel.clean) would take their alerts.
    found = {}
    for email, cid, url in Channel.objects.filter(owner_of__in=emails).values_list("owner_of", "id", "url"):
        if url == owner_destination(email):
            found[email] = cid
    for email in sorted(emails - set(found)):
        channel = Channel(name=_free_name(f"owner {email}"[:90]), url=owner_destination(email), owner_of=email)
        channel.save()
        found[email] = channel.id
    return found


def _free_name(name: str) -> str:
    """`name`, or `name (2)`, (3) ... when taken: a channel of that name must not stop the owner's."""
    taken = set(Channel.objects.filter(name__startswith=name).values_list("name", flat=True))
    n = 1
    candidate = name
    while candidate in taken:
        n += 1
        candidate = f"{name} ({n})"
    return candidate


def send_soon_on_commit(delay_s: float) -> None:
    """The embedded mode has no beat: its in-process worker sends once the grouping window has passed.
    In a cluster beat's every-10-s job does it."""
    if settings.CELERY_EMBEDDED:
        transaction.on_commit(lambda: current_app.send_task(SEND_TASK, countdown=delay_s))


def _last_bad_kinds(server_ids: set[int]) -> dict[int, str]:
    """Each server's latest down / cert / content event kind: what a recovery recovers from."""
    latest: dict[int, tuple] = {}
    rows = Event.objects.filter(server_id__in=server_ids, kind__in=["down", "cert", "content"]).exclude(to_status="")
    for sid, kind, at, pk in rows.values_list("server_id", "kind", "at", "id"):
        if sid not in latest or (at, pk) > latest[sid][:2]:
            latest[sid] = (at, pk, kind)
    return {sid: v[2] for sid, v in latest.items()}


def events_from_changes(*, changes: Sequence[Any]) -> list[Event]:
    """Events (down, cert, content, delay, recovered) from StatusChange rows just created, and their
    outbox rows. The confirming check's failure kind tells a certificate or content failure from an outage."""
    check_ids = [c.status_check_id for c in changes if c.status_check_id and c.to_status in BAD]
    failures = dict(StatusCheck.objects.filter(id__in=check_ids).values_list("id", "failure_kind")) if check_ids else {}
    recovering = {c.server_id for c in changes if c.from_status in BAD and c.to_status not in BAD}
    last_bad = _last_bad_kinds(recovering) if recovering else {}
    kinds = [
        (c, event_kind(c.from_status, c.to_status, failures.get(c.status_check_id, ""), last_bad.get(c.server_id, "")))
        for c in changes
    ]
    kinds = [(c, k) for c, k in kinds if k is not None]
    if not kinds:
        return []
    servers = _servers({c.server_id for c, _ in kinds})
    events = Event.objects.bulk_create(
        [
            Event(
                kind=k,
                server_id=c.server_id,
                status_change_id=c.id,
                at=c.at,
                from_status=c.from_status,
                to_status=c.to_status,
                reason=c.reason[:300],
                locations=getattr(c, "locations", None) or {},
            )
            for c, k in kinds
        ]
    )
    outbox_write(events=events, servers=servers)
    return events


def _servers(server_ids: set[int]) -> dict[int, dict]:
    return {s["id"]: s for s in Server.objects.filter(id__in=server_ids).values("id", "group", "owner_email")}


def events_from_certificates(*, seen: Sequence[Any]) -> list[Event]:
    """A cert event when a certificate's days left fall to a threshold (ALERTS_CERT_DAYS, 21/7/1 by default)
    since the previous check. An invalid certificate is told by the confirmed change (failure kind tls)."""
    thresholds = settings.ALERTS_CERT_DAYS
    events = []
    for s in seen:
        cert, at = s.certificate, s.at
        if s.tls_error or cert.not_after is None:
            continue
        days = cert.days_left(at)
        before = None if s.previous_not_after is None else (s.previous_not_after - at).total_seconds() / 86400.0
        crossed = cert_threshold_crossed(before, days, thresholds)
        if crossed is None:
            continue
        when = "has expired" if days < 0 else f"expires in {days:.0f} day{'' if round(days) == 1 else 's'}"
        reason = f"certificate {when} ({cert.not_after:%Y-%m-%d %H:%M} UTC; {cert.subject}; issuer {cert.issuer})"
        events.append(Event(kind=Kind.CERT.value, server_id=s.server_id, at=at, reason=reason[:300]))
    if not events:
        return []
    events = Event.objects.bulk_create(events)
    outbox_write(events=events, servers=_servers({e.server_id for e in events}))
    return events


def events_from_domains(*, seen: Sequence[Any]) -> list[Event]:
    """A domain event, for each server under the domain, when its registration's days left fall to a
    threshold (ALERTS_DOMAIN_DAYS, 30/7/1 by default) since the previous lookup, as certificates are told."""
    events = []
    for s in seen:
        days = (s.expires_at - s.at).total_seconds() / 86400.0
        before = None
        if s.previous_expires_at is not None and s.previous_checked_at is not None:
            before = (s.previous_expires_at - s.previous_checked_at).total_seconds() / 86400.0
        if cert_threshold_crossed(before, days, settings.ALERTS_DOMAIN_DAYS) is None:
            continue
        when = "has expired" if days < 0 else f"expires in {days:.0f} day{'' if round(days) == 1 else 's'}"
        registrar = f"; registrar {s.registrar}" if s.registrar else ""
        reason = f"domain {s.domain} {when} ({s.expires_at:%Y-%m-%d %H:%M} UTC{registrar})"
        events += [Event(kind=Kind.DOMAIN.value, server_id=sid, at=s.at, reason=reason[:300]) for sid in s.server_ids]
    if not events:
        return []
    events = Event.objects.bulk_create(events)
    outbox_write(events=events, servers=_servers({e.server_id for e in events}))
    return events


def outbox_write(*, events: Sequence[Event], servers: dict[int, dict], now: datetime | None = None) -> int:
    """One Notification per (event, matching channel): the rules' channels and the server owner's.
    Events of a muted server are kept (the log shows them) but notify no one."""
    routes = routes_load()
    owners = _owner_channels({s["owner_email"] for s in servers.values() if s["owner_email"]})
    muted = muted_servers(server_ids=list(servers), at=max(e.at for e in events)) if servers else set()
    rows = []
    for e in events:
        # An event of no server (a beat job's) goes where the rules for all servers send its kind.
        s = servers[e.server_id] if e.server_id is not None else {"group": "", "owner_email": ""}
        if e.server_id in muted:
            continue
        if e.kind.startswith("job."):
            continue  # a crawl job's event: routed by its job (alerts.services.job_events), never here
        channel_ids = set(routes_match(routes, kind=e.kind, server_id=e.server_id, group=s["group"]))
        if s["owner_email"] in owners and e.kind in OWNER_KINDS:
            channel_ids.add(owners[s["owner_email"]])
        # Held for the grouping window: what else changes meanwhile goes out in the same message.
        due = e.at + timedelta(seconds=settings.ALERTS_GROUP_WINDOW)
        rows += [
            Notification(event=e, channel_id=cid, server_id=e.server_id, created_at=e.at, next_attempt_at=due)
            for cid in sorted(channel_ids)
        ]
    Notification.objects.bulk_create(rows, batch_size=1000)
    if rows:
        send_soon_on_commit(settings.ALERTS_GROUP_WINDOW + 1)
    return len(rows)
