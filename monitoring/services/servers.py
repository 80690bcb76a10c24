"""Putting servers under monitoring: the import of a server list, and maintenance windows."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from django.db import transaction

from crawlcore.db import bulk
from crawlcore.models import Server
from crawler.urlnorm import ServerKey

from ..models import ServerMonitor
from ..server_list import ServerRow


@dataclass
class Imported:
    created: int = 0  # servers that had no monitor before
    updated: int = 0
    server_ids: list[int] = field(default_factory=list)


IMPORT_CHUNK = 2000  # rows per round of statements: well under SQLite's limit on query parameters
_MONITOR_FIELDS = ("health_url", "interval_s", "delay_threshold_s", "accepted_codes")
_SERVER_FIELDS = ("group", "crawler_num", "trusted", "owner_email", "owner_name")


def servers_import(*, rows: Sequence[ServerRow], trusted: bool = False) -> Imported:
    """Create or update the servers and their monitors, all rows in one transaction. Idempotent: the same
    list imported twice leaves the same rows. Status and history are never touched.

    ``trusted``: the servers become trusted (fetched without the private-address guard, content checks
    allowed), which only whoever runs the import can vouch for (``import_servers --trusted``). Without
    it new servers are untrusted and a listed server keeps the trust it had.

    Written in chunks of IMPORT_CHUNK rows, a few statements each, with plain values: the missing servers
    and monitors inserted, the changed ones updated. One ORM call per row took 287 s and 320 MB for a list
    of 100,000 servers, and Django's bulk_create and bulk_update, whose per-field preparation of every
    model instance is pure Python, still a minute (bench/import_servers.py)."""
    out = Imported()
    if not rows:
        return out
    with transaction.atomic():
        for i in range(0, len(rows), IMPORT_CHUNK):
            _import_chunk(rows[i : i + IMPORT_CHUNK], out, trusted)
    return out


def _servers_found(keys: Iterable[ServerKey]) -> dict[ServerKey, tuple]:
    """(id, group, crawler_num, trusted, owner_email, owner_name) of the servers with these keys that exist."""
    keys = set(keys)
    # Scheme and host: the leading columns of the unique (scheme, host, port) index, which PostgreSQL then
    # uses; by host alone it scanned the table once per chunk.
    hosts = Server.objects.filter(scheme__in={k.scheme for k in keys}, host__in={k.host for k in keys})
    rows = hosts.values_list("scheme", "host", "port", "id", *_SERVER_FIELDS)
    return {key: row[3:] for row in rows if (key := ServerKey(*row[:3])) in keys}


def _import_chunk(rows: Sequence[ServerRow], out: Imported, trusted: bool) -> None:
    by_key = {ServerKey(r.scheme, r.host, r.port): r for r in rows}
    found = _servers_found(by_key)
    # The same rows crawlcore.services.servers.servers_ensure would create, with the import's fields set at
    # once; a server another process created meanwhile is skipped here and updated below.
    new_servers = [
        {
            "scheme": k.scheme, "host": k.host, "port": k.port, "group": r.group, "crawler_num": r.crawler_num,
            "owner_email": r.owner_email, "owner_name": r.owner_name,
        }  # fmt: skip
        for k, r in by_key.items()
        if k not in found
    ]
    bulk.insert_plain(Server, new_servers, constant={"trusted": trusted}, ignore_conflicts=True)
    found.update(_servers_found(k for k in by_key if k not in found))
    monitors = dict(
        (row[0], row[1:])
        for row in ServerMonitor.objects.filter(server_id__in=[v[0] for v in found.values()]).values_list(
            "server_id", *_MONITOR_FIELDS
        )
    )
    changed_servers, changed_monitors, new_monitors = [], [], []
    for r in rows:
        server_id, *server_now = found[ServerKey(r.scheme, r.host, r.port)]
        server_wanted = (r.group, r.crawler_num, trusted or server_now[2], r.owner_email, r.owner_name)
        if tuple(server_now) != server_wanted:
            changed_servers.append((server_id, *server_wanted))
        wanted = tuple(getattr(r, name) for name in _MONITOR_FIELDS)
        if server_id not in monitors:
            new_monitors.append(dict(zip(("server_id", *_MONITOR_FIELDS), (server_id, *wanted), strict=True)))
            monitors[server_id] = wanted
            out.created += 1
        else:
            if monitors[server_id] != wanted:
                changed_monitors.append((server_id, *wanted))
            out.updated += 1
        out.server_ids.append(server_id)
    bulk.update_plain(Server, _SERVER_FIELDS, changed_servers)
    bulk.update_plain(ServerMonitor, _MONITOR_FIELDS, changed_monitors)
    bulk.insert_plain(ServerMonitor, new_monitors)
