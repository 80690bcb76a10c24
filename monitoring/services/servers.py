"""Putting servers under monitoring: the import of a server list, and maintenance windows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.db import transaction

from crawlcore.models import Server
from crawlcore.services.servers import servers_ensure
from crawler.urlnorm import ServerKey

from ..models import MaintenanceWindow, ServerMonitor
from ..server_list import ServerRow


@dataclass
class Imported:
    created: int = 0  # servers that had no monitor before
    updated: int = 0
    server_ids: list[int] = field(default_factory=list)


def servers_import(*, rows: Sequence[ServerRow]) -> Imported:
    """Create or update the servers and their monitors, all rows in one transaction. Idempotent: the same
    list imported twice leaves the same rows. Imported servers are trusted (an operator listed them),
    so a server on a private address can be monitored. Status and history are never touched."""
    out = Imported()
    if not rows:
        return out
    with transaction.atomic():
        servers = servers_ensure(keys={ServerKey(r.scheme, r.host, r.port) for r in rows}, trusted=True)
        existing = set(
            ServerMonitor.objects.filter(server_id__in=[s.id for s in servers.values()]).values_list(
                "server_id", flat=True
            )
        )
        for r in rows:
            server = servers[ServerKey(r.scheme, r.host, r.port)]
            Server.objects.filter(id=server.id).update(group=r.group, crawler_num=r.crawler_num)
            ServerMonitor.objects.update_or_create(
                server_id=server.id,
                defaults={
                    "health_url": r.health_url,
                    "interval_s": r.interval_s,
                    "delay_threshold_s": r.delay_threshold_s,
                    "accepted_codes": r.accepted_codes,
                },
            )
            if server.id in existing:
                out.updated += 1
            else:
                out.created += 1
                existing.add(server.id)
            out.server_ids.append(server.id)
    return out


def maintenance_add(*, server_id: int, starts_at: datetime, ends_at: datetime, reason: str = "") -> MaintenanceWindow:
    if ends_at <= starts_at:
        raise ValueError("a maintenance window must end after it starts")
    return MaintenanceWindow.objects.create(
        server_id=server_id, starts_at=starts_at, ends_at=ends_at, reason=reason[:200]
    )
