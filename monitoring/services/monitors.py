"""Adding monitors of every kind (manage.py add_monitor) and the heartbeats' pings.

A monitor hangs on a Server row, the unit every monitoring table is keyed by: an HTTP monitor on its web
server (scheme http/https), a TCP one on ``tcp://host:port``, a DNS one on ``dns://name`` and a heartbeat on
``heartbeat://<slug>`` (port 0). The crawler never visits these: it dispatches only servers with URLs.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from crawlcore.models import Server
from crawlcore.validate import MAX_GROUP_LENGTH, has_control
from crawler.sanitize import clean_text
from crawler.status import BAD
from crawler.urlnorm import UrlError, canonicalize, server_key

from ..kinds import SCHEMES, Kind
from ..kinds.dns import DnsSpecError, dns_name_check, expected_parse, nameserver_parse, record_type_check
from ..kinds.heartbeat import PING_KINDS, START, SUCCESS, check_interval, token_new
from ..kinds.tcp import TcpTargetError, tcp_target_parse
from ..models import ServerMonitor
from ..server_list import MAX_INTERVAL_S, MIN_INTERVAL_S
from .trust import nameserver_refusal

MIN_PERIOD_S = 1.0
MAX_NAME_LENGTH = 200


class MonitorError(ValueError):
    """A monitor that cannot be added as asked; the message says why in one line."""


@dataclass(frozen=True)
class Added:
    monitor: ServerMonitor
    created: bool
    ping_url: str = ""  # heartbeats: where the job pings


def ping_url(token: str) -> str:
    return f"{settings.MONITOR_PING_BASE_URL}/ping/{token}"


def _seconds(value: float | None, what: str, low: float, high: float) -> float | None:
    if value is None:
        return None
    if not (low <= value <= high):
        raise MonitorError(f"{what} must be within {low:g}-{high:g} seconds")
    return float(value)


def _text(value: str, what: str, limit: int) -> str:
    value = (value or "").strip()
    if has_control(value):
        raise MonitorError(f"{what} contains a control character")
    if len(value) > limit:
        raise MonitorError(f"{what} is longer than {limit} characters")
    return value


def _slug(text: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40] or "heartbeat"
    return f"{slug}-{secrets.token_hex(3)}"


def monitor_add(
    *,
    kind: str,
    target: str,
    name: str = "",
    every_s: float | None = None,
    grace_s: float | None = None,
    group: str = "",
    tls: bool = False,
    banner: str = "",
    record_type: str = "",
    expected: str = "",
    nameserver: str = "",
    sla_target: float | None = None,
) -> Added:
    """Put one target under monitoring, or update the monitor it already has (a heartbeat is always new).

    `every_s`: the check interval (a heartbeat: the job's period); `grace_s` a heartbeat's allowed
    lateness (default: its period). The server is not marked trusted: its addresses go through the
    private-address guard (CRAWL_ALLOW_PRIVATE), as a server the crawler found would."""
    try:
        k = Kind(kind)
    except ValueError:
        raise MonitorError(f"kind {kind!r}: one of {', '.join(x.value for x in Kind)}") from None
    name = _text(name, "name", MAX_NAME_LENGTH)
    group = _text(group, "group", MAX_GROUP_LENGTH)
    if sla_target is not None and not 0 <= sla_target <= 100:
        raise MonitorError("sla target must be a percentage 0-100")
    fields: dict = {"name": name, "sla_target": sla_target}
    if k is Kind.HEARTBEAT:
        period = _seconds(every_s, "period (--every)", MIN_PERIOD_S, MAX_INTERVAL_S) or 86400.0
        grace = _seconds(grace_s, "grace", MIN_PERIOD_S, MAX_INTERVAL_S) or period
        description = _text(target, "description", MAX_NAME_LENGTH)
        key = ("heartbeat", _slug(name or description), 0)
        token = token_new()
        fields.update(
            name=name or description, period_s=period, grace_s=grace, ping_token=token,
            interval_s=max(MIN_INTERVAL_S, check_interval(period, grace)),
        )  # fmt: skip
    else:
        if grace_s is not None:
            raise MonitorError("--grace is for heartbeat monitors")
        fields["interval_s"] = _seconds(every_s, "interval (--every)", MIN_INTERVAL_S, MAX_INTERVAL_S)
        key = _key(k, target)
        if k is Kind.TCP:
            fields.update(tcp_tls=tls, tcp_banner=_text(banner, "banner", 200))
        elif k is Kind.DNS:
            if refused := nameserver_refusal(text=nameserver):
                raise MonitorError(f"nameserver: {refused}")
            try:
                nameserver_parse(nameserver)
                fields.update(
                    dns_record_type=record_type_check(record_type),
                    dns_expected=", ".join(sorted(expected_parse(expected))),
                    dns_server=nameserver.strip(),
                )
            except DnsSpecError as exc:
                raise MonitorError(str(exc)) from None
    with transaction.atomic():
        server, _ = Server.objects.get_or_create(scheme=key[0], host=key[1], port=key[2])
        if server.group != group:
            server.group = group
            server.save(update_fields=["group"])
        monitor, created = ServerMonitor.objects.get_or_create(server=server, defaults={"kind": k.value, **fields})
        if not created:
            if monitor.kind != k.value:
                raise MonitorError(f"{server.origin} is already a {monitor.kind} monitor")
            for attr, value in fields.items():
                setattr(monitor, attr, value)
            monitor.save()
    return Added(monitor, created, ping_url(monitor.ping_token) if k is Kind.HEARTBEAT else "")


def _key(kind: Kind, target: str) -> tuple[str, str, int]:
    target = (target or "").strip()
    if kind is Kind.HTTP:
        url = target if "://" in target else f"http://{target}/"
        try:
            k = server_key(canonicalize(url))
        except (UrlError, KeyError) as exc:
            raise MonitorError(f"{target!r} is not a usable http(s) URL ({getattr(exc, 'reason', exc)})") from None
        return k.scheme, k.host, k.port
    if kind is Kind.TCP:
        try:
            host, port = tcp_target_parse(target)
        except TcpTargetError as exc:
            raise MonitorError(str(exc)) from None
        return SCHEMES[kind], host, port
    try:
        return SCHEMES[kind], dns_name_check(target), 53
    except DnsSpecError as exc:
        raise MonitorError(str(exc)) from None


# --------------------------------------------------------------------------------------------------
# Pings

OK, UNKNOWN, LIMITED = "ok", "unknown", "limited"
RATE_WINDOW_S = 60.0
_TOKEN = re.compile(r"[A-Za-z0-9_-]{16,64}")


def heartbeat_ping(*, token: str, signal: str = SUCCESS, body: str = "", now: datetime | None = None) -> str:
    """Record one ping of a heartbeat: ``ok``, ``unknown`` (no heartbeat has this token) or ``limited``
    (more than MONITOR_PING_RATE pings of this token in the last minute; nothing recorded).

    Rate limit: one guarded UPDATE opens a new minute's window or counts the ping in the open one, so two
    web processes can't both let the same ping through past the limit. A success after a failure makes the
    monitor due at once, so its recovery is seen at the next dispatch rather than a check interval later;
    a /fail does the same for the failure."""
    if signal not in PING_KINDS:
        raise ValueError(f"ping signal {signal!r}")
    if not _TOKEN.fullmatch(token or ""):
        return UNKNOWN
    now = now or timezone.now()
    mine = ServerMonitor.objects.filter(ping_token=token, kind=Kind.HEARTBEAT.value)
    with transaction.atomic():
        window_open = now - timedelta(seconds=RATE_WINDOW_S)
        counted = mine.filter(Q(ping_window_at__isnull=True) | Q(ping_window_at__lte=window_open)).update(
            ping_window_at=now, ping_window_count=1
        ) or mine.filter(ping_window_count__lt=settings.MONITOR_PING_RATE).update(
            ping_window_count=F("ping_window_count") + 1
        )
        if not counted:
            return LIMITED if mine.exists() else UNKNOWN
        if signal == START:
            mine.update(ping_started_at=now)
            return OK
        kept = clean_text(body, settings.MONITOR_PING_BODY_BYTES) if body else ""
        mine.update(last_ping_at=now, last_ping_kind=signal, last_ping_body=kept)
        bad = Q(status__in=[s.value for s in BAD])
        mine.filter(bad if signal == SUCCESS else ~bad).update(next_check_at=now, dispatched_at=None)
    return OK


__all__ = ["LIMITED", "OK", "UNKNOWN", "Added", "MonitorError", "heartbeat_ping", "monitor_add", "ping_url"]
