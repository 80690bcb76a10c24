"""The sender: claim due outbox rows with one guarded UPDATE, deliver one message per channel, record.

At-least-once, never lost: a row is claimed (pending -> sending, under a token, with a lease) before
anything is sent and recorded (sent, or pending again with a back-off, or failed when its attempts are
spent) after. A sender killed in between leaves its rows "sending" with a lease that runs out; the next
sender claims them again and re-sends them under the same idempotency key, which the rows keep from their
first claim, so a receiver that got the first copy can drop the second.

Never two attempts at once: every message of a run goes out in its own child process, all at once, each
killed ALERTS_SEND_TIMEOUT after it started (alerts.delivery.deliver_all), and a child that outlives a
killed sender ends itself at the same deadline. The lease is longer than that deadline (``lease_seconds``),
so rows are claimed again only once nothing that carried them can still be sending. A receiver that
trickles its answer holds its own channel's message until the deadline, and no other channel's.

Grouping: a row waits ALERTS_GROUP_WINDOW after its event; when one row of a channel is due, every pending
row of that channel goes along in the same message, so twelve servers failing within a minute are one
message. ``notifications_flush`` ignores the window (check_servers sends what its round caused).
"""

from __future__ import annotations

import itertools
import logging
import secrets
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import F, Q
from django.urls import reverse
from django.utils import timezone

from crawlcore.models import Server
from monitoring.models import Incident
from monitoring.selectors import monitor_names
from monitoring.selectors_evidence import evidence_alert_lines

from ..delivery import Outcome, deliver_all
from ..destinations import Destination, DestinationError
from ..logic import EventView, idempotency_key, message_compose, retry_delay
from ..models import Channel, Event, Notification

log = logging.getLogger(__name__)

MAX_PER_RUN = 5000  # rows claimed by one run; the rest go with the next
RETRY_CAP_S = 3600.0
# Between a delivery's deadline and the end of its rows' lease: the child's own stop (half a second after
# the deadline), the sender's work between claiming and starting the children, and clocks of senders on
# different machines that disagree by a little.
LEASE_MARGIN_S = 5.0


def lease_seconds() -> float:
    """How long a claim holds its rows: ALERTS_LEASE_SECONDS, and never less than a delivery can last."""
    return max(settings.ALERTS_LEASE_SECONDS, settings.ALERTS_SEND_TIMEOUT + LEASE_MARGIN_S)


@dataclass(frozen=True)
class Sent:
    """One message handed to a channel, as send_notifications prints it."""

    channel: str
    key: str
    events: int
    ok: bool
    error: str
    final: bool  # failed and no attempt left


def _claimable(now: datetime, flush: bool) -> Q:
    due = Q(next_attempt_at__lte=now) | Q(attempts=0) if flush else Q(next_attempt_at__lte=now)
    # A "sending" row whose lease ran out belongs to a sender that died before recording it.
    return (Q(status=Notification.PENDING) & due) | Q(status=Notification.SENDING, claimed_until__lt=now)


def _candidates(now: datetime, flush: bool) -> list[int]:
    """Ids to claim: every claimable row, and with each channel that has one, that channel's fresh
    pending rows still inside their grouping window (they join the message rather than wait for another)."""
    base = Notification.objects.filter(channel__enabled=True)
    due = list(base.filter(_claimable(now, flush)).order_by("id").values_list("id", "channel_id")[:MAX_PER_RUN])
    if not due:
        return []
    channels = {cid for _, cid in due}
    joining = base.filter(channel_id__in=channels, status=Notification.PENDING, attempts=0, next_attempt_at__gt=now)
    ids = {i for i, _ in due} | set(joining.values_list("id", flat=True)[:MAX_PER_RUN])
    return sorted(ids)


def notifications_claim(*, now: datetime, flush: bool = False) -> tuple[str, list[Notification]]:
    token = secrets.token_hex(8)
    ids = _candidates(now, flush)
    lease = now + timedelta(seconds=lease_seconds())
    claimed = 0
    for i in range(0, len(ids), 500):
        chunk = ids[i : i + 500]
        fresh = Q(status=Notification.PENDING, attempts=0)
        # The guard repeats the claimable condition: of two senders racing, one UPDATE changes a row and
        # the other changes nothing, so only the winner's token is on it.
        claimed += (
            Notification.objects.filter(id__in=chunk)
            .filter(_claimable(now, flush) | fresh)
            .update(status=Notification.SENDING, claim_token=token, claimed_until=lease)
        )
    if not claimed:
        return token, []
    rows = Notification.objects.filter(claim_token=token, status=Notification.SENDING).select_related("event")
    return token, list(rows.order_by("id"))


def _batches(rows: Sequence[Notification], token: str) -> list[tuple[int, str, list[Notification]]]:
    """(channel, key, rows) per message. Rows that already carry a key (a retry, or the batch of a killed
    sender) go out again as that same message; the rest of a channel's rows form one new message, whose
    key is written before anything is sent."""
    by_message: dict[tuple[int, str], list[Notification]] = defaultdict(list)
    for r in rows:
        by_message[(r.channel_id, r.message_key)].append(r)
    # At most ALERTS_SEND_PARALLEL messages at once (one child process each), taken round-robin over the
    # channels (each channel's oldest message first, then each one's second ...): a channel with a backlog
    # of retries cannot fill every place while other channels wait. The rest are handed back untouched.
    per_channel: dict[int, list] = defaultdict(list)
    for item in sorted(by_message.items(), key=lambda item: min(r.id for r in item[1])):
        per_channel[item[0][0]].append(item)
    ordered = [item for rank in itertools.zip_longest(*per_channel.values()) for item in rank if item is not None]
    kept, rest = ordered[: settings.ALERTS_SEND_PARALLEL], ordered[settings.ALERTS_SEND_PARALLEL :]
    _release([r.id for _, group in rest for r in group], token)
    out = []
    for (channel_id, key), group in sorted(kept):
        if not key:
            key = idempotency_key(channel_id, [r.id for r in group])
            Notification.objects.filter(id__in=[r.id for r in group], claim_token=token).update(message_key=key)
        out.append((channel_id, key, group))
    return out


def _release(ids: list[int], token: str) -> None:
    """Hand claimed rows back unsent: pending again, as they were (attempts and key untouched)."""
    for i in range(0, len(ids), 500):
        Notification.objects.filter(id__in=ids[i : i + 500], claim_token=token).update(
            status=Notification.PENDING, claim_token="", claimed_until=None
        )


def _views(rows: Sequence[Notification]) -> list[EventView]:
    ids = {r.event.server_id for r in rows if r.event.server_id}
    servers = Server.objects.filter(id__in=ids)
    names = monitor_names(server_ids=ids)  # a monitor is named by its name, else by its server's origin
    origins = {s.id: (names.get(s.id) or s.origin, s.group) for s in servers.only("scheme", "host", "port", "group")}
    answered, links = _evidence(rows)
    views = []
    for r in rows:
        e: Event = r.event
        origin, group = origins.get(e.server_id, (e.subject or "(no server)", ""))
        views.append(
            EventView(
                event_id=e.id,
                kind=e.kind,
                server=origin,
                group=group,
                at=e.at.isoformat(),
                from_status=e.from_status,
                to_status=e.to_status,
                reason=e.reason,
                locations=dict(e.locations or {}),
                answered=answered.get(e.status_change_id, ""),
                incident_url=links.get(e.status_change_id, ""),
            )
        )
    return views


def _evidence(rows: Sequence[Notification]) -> tuple[dict[int, str], dict[int, str]]:
    """By status change: what the server answered (its evidence, one line) and its incident page's address."""
    change_ids = {r.event.status_change_id for r in rows if r.event.status_change_id}
    if not change_ids:
        return {}, {}
    base = settings.ALERTS_BASE_URL or settings.MONITOR_PING_BASE_URL
    incidents = Incident.objects.filter(status_change_id__in=change_ids).values_list("status_change_id", "id")
    links = {cid: base + reverse("dashboard:incident", args=[pk]) for cid, pk in incidents}
    return evidence_alert_lines(status_change_ids=change_ids), links


def _record(rows: Sequence[Notification], token: str, outcome: Outcome, now: datetime) -> bool:
    """Write the outcome on the rows this sender still holds; True when no attempt is left after a failure."""
    mine = Notification.objects.filter(id__in=[r.id for r in rows], claim_token=token)
    if outcome.ok:
        mine.update(
            status=Notification.SENT,
            sent_at=now,
            attempts=F("attempts") + 1,
            error="",
            claim_token="",
            claimed_until=None,
        )
        return False
    attempts = max(r.attempts for r in rows) + 1
    final = attempts >= settings.ALERTS_MAX_ATTEMPTS
    wait = retry_delay(attempts, base_s=settings.ALERTS_RETRY_BASE, cap_s=RETRY_CAP_S)
    mine.update(
        status=Notification.FAILED if final else Notification.PENDING,
        attempts=attempts,
        error=outcome.error[:1000],
        next_attempt_at=now + timedelta(seconds=wait),
        claim_token="",
        claimed_until=None,
    )
    return final


def notifications_send(*, flush: bool = False, now: datetime | None = None) -> list[Sent]:
    """Process the outbox once: every due row, one message per channel (per kept key, for retries), the
    messages delivered side by side."""
    # A given `now` (tests, replays) is the clock of the whole run; otherwise outcomes get their own time.
    clock = (lambda: now) if now is not None else timezone.now
    now = clock()
    claimed_at = time.monotonic()
    token, rows = notifications_claim(now=now, flush=flush)
    if not rows:
        return []
    channels = Channel.objects.in_bulk({r.channel_id for r in rows})
    batches = []
    for channel_id, key, group in _batches(rows, token):
        channel = channels[channel_id]
        try:
            dest: Destination | Outcome = channel.destination
        except DestinationError as exc:  # saved valid, invalid now (an Apprise upgrade dropped a service)
            dest = Outcome(False, str(exc))
        batches.append((channel, key, group, dest, message_compose(_views(group), key=key)))
    # Every delivery must be over before the lease is: what is left of it bounds the deadline.
    left = lease_seconds() - LEASE_MARGIN_S - (time.monotonic() - claimed_at)
    if left < min(1.0, settings.ALERTS_SEND_TIMEOUT):
        _release([r.id for _, _, group, _, _ in batches for r in group], token)
        log.warning("alerts sender: the claim's lease ran out before delivery began; rows handed back")
        return []
    sendable = [(dest, message) for _, _, _, dest, message in batches if isinstance(dest, Destination)]
    delivered = iter(deliver_all(sendable, deadline_s=min(settings.ALERTS_SEND_TIMEOUT, left)))
    out = []
    for channel, key, group, dest, _ in batches:
        outcome = next(delivered) if isinstance(dest, Destination) else dest
        final = _record(group, token, outcome, clock())
        if not outcome.ok:
            # The masked error only: never the channel's URL.
            log.warning("alert to channel %s failed (%s)%s", channel.name, outcome.error, " for good" if final else "")
        out.append(Sent(channel.name, key, len(group), outcome.ok, outcome.error, final))
    return out


def notifications_flush() -> list[Sent]:
    """Send now whatever is pending, grouping window or not (a check_servers round's own changes)."""
    return notifications_send(flush=True)
