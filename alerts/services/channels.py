"""Channels and their rules: adding one (add_channel, admin), and the test message (notify_test, "send test")."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from crawlcore.models import Job, Server

from ..delivery import Outcome, deliver_all
from ..destinations import DestinationError
from ..logic import JOB_KINDS, EventView, Kind, idempotency_key, kinds_parse, message_compose
from ..models import Channel, Event, Notification, Rule


class ChannelError(ValueError):
    pass


def _errors(exc: ValidationError) -> str:
    if hasattr(exc, "message_dict"):
        return "; ".join(f"{'destination' if k == 'url' else k}: {' '.join(v)}" for k, v in exc.message_dict.items())
    return " ".join(exc.messages)


@dataclass(frozen=True)
class Added:
    channel: Channel
    rule: Rule
    created: bool  # False: the channel existed and got its destination replaced


def channel_add(
    *, name: str, url: str, group: str = "", server_host: str = "", events: str = "", job: str = ""
) -> Added:
    """Create (or update) a channel and route events to it: of all servers, one group, one server, or one
    crawl job (its job.* events). The destination is checked before anything is written; a bad one raises
    ChannelError saying why."""
    name = name.strip()
    if not name:
        raise ChannelError("the channel needs a name")
    if group and server_host:
        raise ChannelError("route a group or one server, not both")
    job = job.strip()
    if job and (group or server_host):
        raise ChannelError("route one crawl job, a group or one server")
    if job and not Job.objects.filter(name=job).exists():
        raise ChannelError(f"no crawl job named {job!r}")
    try:
        # A rule for one job with no kinds named takes every event of the job.
        kinds = ",".join(kinds_parse(events or ",".join(k.value for k in JOB_KINDS) if job.strip() else events))
    except ValueError as exc:
        raise ChannelError(str(exc)) from None
    server = None
    if group and not (Server.objects.filter(group=group.strip()).exists()
                      or Job.objects.filter(group=group.strip()).exists()):  # fmt: skip
        raise ChannelError(f"no server is in group {group.strip()!r}")
    if server_host:
        matches = list(Server.objects.filter(host=server_host.strip().lower()))
        if not matches:
            raise ChannelError(f"no server with host {server_host!r}")
        if len(matches) > 1:
            raise ChannelError(f"{len(matches)} servers have host {server_host!r} (several ports or schemes)")
        server = matches[0]
    with transaction.atomic():
        channel, created = Channel.objects.filter(name=name).first(), False
        if channel is None:
            channel, created = Channel(name=name), True
        channel.url = url
        try:
            channel.save()
        except ValidationError as exc:
            raise ChannelError(_errors(exc)) from None
        rule, _ = Rule.objects.update_or_create(
            channel=channel, group=group.strip(), server=server, job=job, defaults={"kinds": kinds}
        )
    return Added(channel, rule, created)


def channel_test(*, channel: Channel) -> Outcome:
    """Send one test message to this channel now, and log it like any notification."""
    now = timezone.now()
    event = Event.objects.create(kind=Kind.TEST.value, at=now, reason="test message")
    row = Notification.objects.create(
        event=event, channel=channel, created_at=now, next_attempt_at=now, status=Notification.SENDING
    )
    key = idempotency_key(channel.id, [row.id])
    view = EventView(event.id, Kind.TEST.value, "crawladmin", "", now.isoformat(), reason="test message")
    message = message_compose([view], key=key)
    message = type(message)(f"[crawladmin] test message to {channel.name}", message.body, message.events, key)
    try:
        # In a child process stopped at ALERTS_SEND_TIMEOUT, as the sender's deliveries are.
        outcome = deliver_all([(channel.destination, message)])[0]
    except DestinationError as exc:
        outcome = Outcome(False, str(exc))
    Notification.objects.filter(id=row.id).update(
        status=Notification.SENT if outcome.ok else Notification.FAILED,
        attempts=1,
        message_key=key,
        sent_at=timezone.now() if outcome.ok else None,
        error=outcome.error[:1000],
    )
    return outcome
