"""Writes to Server rows: creation, the per-server lease that keeps politeness, exclusion, robots cache."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime

from django.db.models import Q
from django.utils import timezone

from crawladmin.models import Server, Url
from crawler.urlnorm import ServerKey

from .common import lease_deadline

log = logging.getLogger(__name__)


def servers_ensure(*, keys: Iterable[ServerKey], trusted: bool = False) -> dict[ServerKey, Server]:
    """The Server row of every key, creating the missing ones in one statement."""
    keys = set(keys)
    if not keys:
        return {}
    Server.objects.bulk_create(
        [Server(scheme=k.scheme, host=k.host, port=k.port, trusted=trusted) for k in keys], ignore_conflicts=True
    )
    found: dict[ServerKey, Server] = {}
    hosts = {k.host for k in keys}
    for server in Server.objects.filter(host__in=hosts):
        key = ServerKey(server.scheme, server.host, server.port)
        if key in keys:
            found[key] = server
    if trusted:
        untrusted = [s.id for s in found.values() if not s.trusted]
        if untrusted:
            Server.objects.filter(id__in=untrusted).update(trusted=True)
    return found


def server_claim(*, server_id: int, owner: str, now: datetime | None = None) -> bool:
    """Take the server's lease: at most one load task works on a server at a time, cluster-wide."""
    now = now or timezone.now()
    changed = (
        Server.objects.filter(id=server_id, enabled=True, excluded_reason="")
        .filter(Q(lease_owner="") | Q(lease_expires_at__lt=now))
        .update(lease_owner=owner, lease_expires_at=lease_deadline(now))
    )
    # Nothing updated: another loader holds it, or it was disabled meanwhile.
    return changed == 1


def server_release(*, server_id: int, owner: str, next_request_at: datetime | None) -> None:
    Server.objects.filter(id=server_id, lease_owner=owner).update(
        lease_owner="", lease_expires_at=None, dispatched_at=None, next_request_at=next_request_at
    )


def server_exclude(*, server_id: int, reason: str) -> int:
    """Stop crawling a server (e.g. it resolves to a private address); its waiting URLs show the reason."""
    Server.objects.filter(id=server_id).update(excluded_reason=reason)
    excluded = Url.objects.filter(server_id=server_id, state="init", exclusion_reason="").update(
        exclusion_reason=reason, next_check_at=None, lease_owner="", lease_expires_at=None
    )
    log.warning("server %s excluded (%s): %d URLs set aside", server_id, reason, excluded)
    return excluded


def server_save_robots(*, server_id: int, kind: str, text: str, crawl_delay: float | None, ip: str | None) -> None:
    Server.objects.filter(id=server_id).update(
        robots_kind=kind, robots_txt=text, crawl_delay=crawl_delay, robots_fetched_at=timezone.now(), ip=ip
    )
