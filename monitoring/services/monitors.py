"""Adding monitors of every kind (manage.py add_monitor) and the heartbeats' pings.

A monitor hangs on a Server row, the unit every monitoring table is keyed by: an HTTP monitor on its web
server (scheme http/https), a TCP one on ``tcp://host:port``, a DNS one on ``dns://name`` and a heartbeat on
``heartbeat://<slug>`` (port 0). The crawler never visits these: it dispatches only servers with URLs.
"""

from __future__ import annotations

import ipaddress
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
from ..models import HeartbeatPing, ServerMonitor
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
    changes: tuple[tuple[str, object, object], ...] = ()  # (field, old, new) of an existing monitor

    def summary(self) -> str:
        """What add_monitor says: ``added …``, ``unchanged monitor NAME`` or
        ``changed monitor NAME: field old -> new, …``."""
        name = self.monitor.shown_name
        if self.created:
            return f"added {self.monitor.kind} monitor {name} (server {self.monitor.server_id})"
        if not self.changes:
            return f"unchanged monitor {name}"
        said = ", ".join(f"{f} {_said(old)} -> {_said(new)}" for f, old, new in self.changes)
        return f"changed monitor {name}: {said}"


def _said(value: object) -> str:
    if value is None or value == "":
        return "(none)"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


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
    group: str | None = None,
    tls: bool = False,
    banner: str = "",
    record_type: str = "",
    expected: str = "",
    nameserver: str = "",
    sla_target: float | None = None,
) -> Added:
    """Put one target under monitoring, or update the monitor it names: a heartbeat by its name (or, without
    one, its description), any other kind by its target (or by its name). Only what is given changes: an
    option left out keeps the monitor's value (never a reset to a default), and `Added.changes` says what
    changed. A new interval takes effect at once: the next check is rescheduled from the last one.

    `every_s`: the check interval (a heartbeat: the job's period); `grace_s` a heartbeat's allowed
    lateness (default: its period). The server is not marked trusted: its addresses go through the
    private-address guard (CRAWL_ALLOW_PRIVATE), as a server the crawler found would."""
    try:
        k = Kind(kind)
    except ValueError:
        raise MonitorError(f"kind {kind!r}: one of {', '.join(x.value for x in Kind)}") from None
    name = _text(name, "name", MAX_NAME_LENGTH)
    group = None if group is None else _text(group, "group", MAX_GROUP_LENGTH)
    if sla_target is not None and not 0 <= sla_target <= 100:
        raise MonitorError("sla target must be a percentage 0-100")
    given: dict = {"name": name or None, "sla_target": sla_target}
    if k is Kind.HEARTBEAT:
        description = _text(target, "description", MAX_NAME_LENGTH)
        if not description:
            raise MonitorError("a heartbeat needs a description of the job it watches")
        given["name"] = name or description
        given["period_s"] = _seconds(every_s, "period (--every)", MIN_PERIOD_S, MAX_INTERVAL_S)
        given["grace_s"] = _seconds(grace_s, "grace", MIN_PERIOD_S, MAX_INTERVAL_S)
        existing = _heartbeat_named(given["name"])
        key = None if existing else ("heartbeat", _slug(given["name"]), 0)
    else:
        if grace_s is not None:
            raise MonitorError("--grace is for heartbeat monitors")
        given["interval_s"] = _seconds(every_s, "interval (--every)", MIN_INTERVAL_S, MAX_INTERVAL_S)
        key = _key(k, target)
        if k is Kind.HTTP:
            given["health_url"] = _health_url(target, key)
        elif k is Kind.TCP:
            given.update(tcp_tls=tls or None, tcp_banner=_text(banner, "banner", 200) or None)
        elif k is Kind.DNS:
            if refused := nameserver_refusal(text=nameserver):
                raise MonitorError(f"nameserver: {refused}")
            try:
                nameserver_parse(nameserver)
                given.update(
                    dns_record_type=record_type_check(record_type) if record_type else None,
                    dns_expected=", ".join(sorted(expected_parse(expected))) if expected else None,
                    dns_server=nameserver.strip() or None,
                )
            except DnsSpecError as exc:
                raise MonitorError(str(exc)) from None
        existing = _monitor_at(k, key) or (_named(k, name, key) if name else None)
    given = {f: v for f, v in given.items() if v is not None}
    with transaction.atomic():
        if existing is None:
            return _monitor_create(k, key, given, group or "")
        return _monitor_update(existing, given, group)


def _heartbeat_named(name: str) -> ServerMonitor | None:
    return (
        ServerMonitor.objects.select_related("server")
        .filter(kind=Kind.HEARTBEAT.value, name=name)
        .order_by("server_id")
        .first()
    )


def _monitor_at(kind: Kind, key: tuple[str, str, int]) -> ServerMonitor | None:
    found = ServerMonitor.objects.select_related("server").filter(
        server__scheme=key[0], server__host=key[1], server__port=key[2]
    )
    monitor = found.first()
    if monitor is not None and monitor.kind != kind.value:
        raise MonitorError(f"{monitor.server.origin} is already a {monitor.kind} monitor")
    return monitor


def _named(kind: Kind, name: str, key: tuple[str, str, int]) -> ServerMonitor | None:
    """A monitor of this kind called `name` on another target: refused rather than given a second copy
    under the same name (its target is changed in the admin)."""
    monitor = ServerMonitor.objects.select_related("server").filter(kind=kind.value, name=name).first()
    if monitor is not None:
        raise MonitorError(
            f"a {kind.value} monitor named {name!r} already watches {monitor.target_text}; "
            "choose another name, or change its target in the admin"
        )
    return None


def _health_url(target: str, key: tuple[str, str, int]) -> str | None:
    """An HTTP target's health page: its URL when it is not the home page; None (keep what is set) for a
    bare host or the home page, so a second call without the path does not drop it."""
    url = target.strip() if "://" in target else ""
    if not url:
        return None
    canonical = canonicalize(url)
    home = canonicalize(f"{key[0]}://{key[1]}:{key[2]}/")
    return None if canonical == home else canonical


def _monitor_create(k: Kind, key: tuple[str, str, int], given: dict, group: str) -> Added:
    fields = dict(given)
    if k is Kind.HEARTBEAT:
        period = fields.setdefault("period_s", 86400.0)
        grace = fields.setdefault("grace_s", period)
        fields.update(ping_token=token_new(), interval_s=max(MIN_INTERVAL_S, check_interval(period, grace)))
    server, _ = Server.objects.get_or_create(scheme=key[0], host=key[1], port=key[2], defaults={"group": group})
    if server.group != group and group:
        server.group = group
        server.save(update_fields=["group"])
    monitor = ServerMonitor.objects.create(server=server, kind=k.value, **fields)
    return Added(monitor, True, ping_url(monitor.ping_token) if k is Kind.HEARTBEAT else "")


def _monitor_update(monitor: ServerMonitor, given: dict, group: str | None) -> Added:
    changes: list[tuple[str, object, object]] = []
    if monitor.kind == Kind.HEARTBEAT.value and ("period_s" in given or "grace_s" in given):
        period = given.get("period_s", monitor.period_s)
        given["interval_s"] = max(MIN_INTERVAL_S, check_interval(period, given.get("grace_s", monitor.grace_s)))
    for attr, value in given.items():
        old = getattr(monitor, attr)
        if old != value:
            changes.append((attr, old, value))
            setattr(monitor, attr, value)
    server = monitor.server
    if group is not None and server.group != group:
        changes.append(("group", server.group, group))
        server.group = group
        server.save(update_fields=["group"])
    fields = [f for f, _, _ in changes if f != "group"]
    if "interval_s" in fields and monitor.next_check_at is not None:
        # The new interval counts from the last check, not from the slot the old one set.
        last = monitor.last_check_at or timezone.now()
        monitor.next_check_at = min(monitor.next_check_at, last + timedelta(seconds=monitor.interval_s))
        fields.append("next_check_at")
    if fields:
        monitor.save(update_fields=fields)
    shown = [c for c in changes if c[0] != "interval_s" or monitor.kind != Kind.HEARTBEAT.value]
    kind = monitor.kind
    return Added(monitor, False, ping_url(monitor.ping_token) if kind == Kind.HEARTBEAT.value else "", tuple(shown))


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


def heartbeat_ping(
    *, token: str, signal: str = SUCCESS, body: str = "", source: str = "", now: datetime | None = None
) -> str:
    """Record one ping of a heartbeat: ``ok``, ``unknown`` (no heartbeat has this token) or ``limited``
    (more than MONITOR_PING_RATE pings of this token in the last minute; nothing recorded).

    Rate limit: one guarded UPDATE opens a new minute's window or counts the ping in the open one, so two
    web processes can't both let the same ping through past the limit. Each ping counted is logged with
    `source` (the caller's address) in HeartbeatPing, the newest PINGS_KEPT kept. A success after a failure makes the
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
        kept = clean_text(body, settings.MONITOR_PING_BODY_BYTES) if body else ""
        _ping_log(mine.values_list("server_id", flat=True).first(), signal, kept, source, now)
        if signal == START:
            mine.update(ping_started_at=now)
            return OK
        mine.update(last_ping_at=now, last_ping_kind=signal, last_ping_body=kept)
        bad = Q(status__in=[s.value for s in BAD])
        mine.filter(bad if signal == SUCCESS else ~bad).update(next_check_at=now, dispatched_at=None)
    return OK


def _ping_log(server_id: int | None, signal: str, body: str, source: str, now: datetime) -> None:
    if server_id is None:
        return
    try:
        ip = str(ipaddress.ip_address(source)) if source else None
    except ValueError:
        ip = None
    HeartbeatPing.objects.create(server_id=server_id, at=now, kind=signal, body=body, source=ip)
    older = HeartbeatPing.objects.filter(server_id=server_id).order_by("-at", "-id")[HeartbeatPing.PINGS_KEPT :]
    stale = list(older.values_list("id", flat=True)[:100])
    if stale:
        HeartbeatPing.objects.filter(id__in=stale).delete()


__all__ = ["LIMITED", "OK", "UNKNOWN", "Added", "MonitorError", "heartbeat_ping", "monitor_add", "ping_url"]
