"""Writes to Server rows: creation, the per-server lease that keeps politeness, exclusion, robots cache."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from crawlcore.db import locks
from crawlcore.db.raw import rows_by_values
from crawlcore.models import Page, Server, ServerLease, Url
from crawlcore.selectors_jobs import server_concurrency_cap
from crawler.lifecycle import Agent
from crawler.netguard import forbidden_reason, parse_cidrs
from crawler.resolve import lookup_many
from crawler.urlnorm import ServerKey

from .leases import lease_deadline

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Ensured:
    """What the callers of servers_ensure read of a server: a row, not a model instance (some thirty fields to
    build, for each of the hundred or so servers one batch of extracted pages links to)."""

    id: int
    excluded_reason: str


def servers_ensure(*, keys: Iterable[ServerKey], trusted: bool = False) -> dict[ServerKey, Ensured]:
    """The server of every key, creating the missing ones in one statement.

    A new server's address is resolved first (servers_resolve) and stored with it. A new server on the address,
    scheme and port of an earlier site is not merged here: name-based virtual hosting puts different sites on
    one address. It is a suspect, whose home page the load agent fetches alone first and compares with the
    earlier site's (seed 003's site dedup before dispatch: crawlcore.services.sites.server_home_first)."""
    keys = set(keys)
    if not keys:
        return {}
    found = _servers_by_key(keys)
    missing = keys - found.keys()
    if missing:
        addresses = servers_resolve(keys=missing, trusted=trusted)
        Server.objects.bulk_create(
            [Server(scheme=k.scheme, host=k.host, port=k.port, trusted=trusted, ip=addresses.get(k)) for k in missing],
            ignore_conflicts=True,
        )
        found.update(_servers_by_key(missing))
    if trusted:  # guarded: only the rows not trusted yet are written
        Server.objects.filter(id__in=[s.id for s in found.values()], trusted=False).update(trusted=True)
    return found


def servers_resolve(*, keys: Iterable[ServerKey], trusted: bool = False) -> dict[ServerKey, str | None]:
    """The address each new server's fetches would use (the crawler's resolver, with its private-address guard
    unless an operator added the server), all names at once within CRAWL_DNS_TIMEOUT; None when unknown. Not
    asked at all when merging by address is off. A visit stores the address its robots.txt came from later."""
    keys = list(keys)
    if not (settings.CRAWL_MERGE_HOSTS and settings.CRAWL_MERGE_BY_ADDRESS) or not keys:
        return {}
    allowed = parse_cidrs(",".join(settings.CRAWL_ALLOW_PRIVATE))
    check = None if trusted else (lambda ip: forbidden_reason(ip, allowed))
    found = lookup_many([(k.host, k.port) for k in keys], timeout=settings.CRAWL_DNS_TIMEOUT, check=check)
    return {k: found.get((k.host, k.port)) for k in keys}


def _servers_by_key(keys: set[ServerKey]) -> dict[ServerKey, Ensured]:
    found: dict[ServerKey, Ensured] = {}
    # One plain statement (crawlcore.db.raw.rows_by_values): building the ORM's query cost more than running it.
    rows = rows_by_values(
        Server._meta.db_table,
        "host",
        list({k.host for k in keys}),
        ("scheme", "host", "port", "id", "excluded_reason"),
    )
    for scheme, host, port, *rest in rows:
        key = ServerKey(scheme, host, port)
        if key in keys:
            found[key] = Ensured(*rest)
    return found


def server_politeness_id(*, server_id: int) -> int:
    """The server whose slots and request turns a server's requests take: the first server (lowest id) of its
    host and port, whatever the scheme. http://h:8443 and https://h:8443 are one machine to be polite to: an
    https attempt on the host and port of a running http fetch must wait its turn like any other request."""
    row = Server.objects.filter(id=server_id).values_list("host", "port").first()
    if row is None:
        return server_id
    same = Server.objects.filter(scheme__in=("http", "https"), host=row[0], port=row[1])
    return same.order_by("id").values_list("id", flat=True).first() or server_id


def server_claim(
    *, server_id: int, owner: str, agent: str = "", now: datetime | None = None, slots_of: int | None = None
) -> int | None:
    """Take one of the server's CRAWL_SERVER_CONCURRENCY slots; the slot number, or None when all are
    held (or the server is disabled or excluded). Cluster-wide: the slots are rows, taken by guarded UPDATE.
    `agent` marks what holds it (the dispatcher counts the load agent's, its busy robots). `slots_of`: the
    server whose slots are taken (server_politeness_id), when not its own."""
    now = now or timezone.now()
    lease_id = slots_of or server_id
    found = Server.objects.filter(id=server_id, enabled=True, excluded_reason="").values_list("max_concurrency")
    if not found:
        return None
    # An operator's or a running job's lower bound takes the first slots only; the rest stay untouched.
    (own,) = found[0]
    slots = range(server_concurrency_cap(server_id, own, settings.CRAWL_SERVER_CONCURRENCY))
    ServerLease.objects.bulk_create([ServerLease(server_id=lease_id, slot=n) for n in slots], ignore_conflicts=True)
    for n in slots:
        changed = (
            ServerLease.objects.filter(server_id=lease_id, slot=n)
            .filter(Q(owner="") | Q(expires_at__lt=now))
            .update(owner=owner, agent=agent, expires_at=lease_deadline(now))
        )
        if changed:
            # The dispatch that sent us is consumed: with free slots left, the dispatcher may send another.
            Server.objects.filter(id=server_id).update(dispatched_at=None)
            return n
        # Nothing updated: another task holds this slot; try the next.
    if agent == Agent.LOAD.value:
        # Every slot is held (a dispatch raced with another visit's claim): the message that sent us is consumed
        # all the same. Left marked queued, the server would get no continuation from its running visits
        # either until CRAWL_REDISPATCH_AFTER (a stall at the end of a crawl).
        Server.objects.filter(id=server_id).update(dispatched_at=None)
    return None


def server_release(*, server_id: int, owner: str) -> None:
    ServerLease.objects.filter(server_id=server_id, owner=owner).update(owner="", expires_at=None)


def server_take_turn(*, server_id: int, delay: float, now: datetime | None = None) -> float:
    """Claim the server's next request start for the caller: 0 when granted (the next one is then `delay`
    later, for everyone), else the seconds to wait before asking again. One guarded UPDATE, so two
    workers on two machines cannot both start a request inside one crawl delay."""
    now = now or timezone.now()
    granted = (
        Server.objects.filter(id=server_id)
        .filter(Q(next_request_at__isnull=True) | Q(next_request_at__lte=now))
        .update(next_request_at=now + timedelta(seconds=delay))
    )
    if granted:
        return 0.0
    nxt = Server.objects.filter(id=server_id).values_list("next_request_at", flat=True).first()
    return max(0.001, (nxt - now).total_seconds()) if nxt else 0.001


def server_back_off(*, server_id: int, until: datetime) -> None:
    Server.objects.filter(id=server_id).filter(Q(next_request_at__isnull=True) | Q(next_request_at__lt=until)).update(
        next_request_at=until
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
    """Cache the server's robots.txt and the address it came from. No address (robots.txt unreachable) keeps
    the one known: the address resolved at creation is what site dedup compares (server_home_first)."""
    fields = dict(robots_kind=kind, robots_txt=text, crawl_delay=crawl_delay, robots_fetched_at=timezone.now())
    Server.objects.filter(id=server_id).update(**fields, **({"ip": ip} if ip else {}))


@contextmanager
def server_robots_lock(*, server_id: int, wait: float) -> Iterator[bool]:
    """One robots.txt fetch per server at a time, across the cluster: a session advisory lock (not a
    transaction's: the fetch commits its status check on its own; crawlcore.db.locks "robots"). Yields
    whether it was taken.

    A visit that finds the lock held waits up to `wait` seconds for the holder's answer, then re-reads the
    server's rules instead of asking robots.txt again (two slots of one server start together, and both
    found no rules). A lock not taken by then is given up: the fetch goes ahead rather than stall. The lock
    dies with its session, so a killed worker never leaves it held; if giving it back fails, this thread's
    connection is closed, which gives it back too."""
    with locks.advisory_lock("robots", server_id, wait=wait) as taken:
        yield taken


def server_merge_if_alias(*, server: Server, home_checksum: str) -> Server | None:
    """Site dedup by IP (seed 003), when a home page is stored: two host names on the same address, scheme and
    port serving the same home page (same checksum) are one site. The later server becomes an alias of the
    earlier one and its waiting URLs are set aside. Returns the server that was made an alias, or None.

    A suspect (a later server on a known site's address) fetches its home page alone first
    (sites.server_home_first), so when the earlier site's home page is stored already, this runs before any
    other URL of the suspect is fetched. When it is not stored yet, the comparison happens when it is (this
    function, called for the earlier server, finds the later one's home page): the merge then comes after
    some of the later server's URLs were fetched. So it does for a server whose address was unknown until
    its first robots.txt, and with CRAWL_MERGE_BY_ADDRESS=false."""
    if not (settings.CRAWL_MERGE_HOSTS and server.ip and home_checksum):
        return None
    twins = (
        Server.objects.filter(ip=server.ip, scheme=server.scheme, port=server.port, alias_of__isnull=True)
        .exclude(id=server.id)
        .order_by("id")
    )
    for twin in twins:
        if not Page.objects.filter(url__url=f"{twin.origin}/", checksum=home_checksum).exists():
            continue
        alias, keep = (server, twin) if twin.id < server.id else (twin, server)
        # Guarded: only a server nobody has made an alias meanwhile (the two home pages may be stored at once).
        if not Server.objects.filter(id=alias.id, alias_of__isnull=True).update(alias_of=keep):
            return None
        alias.alias_of = keep
        server_exclude(server_id=alias.id, reason=f"alias of {keep.origin}"[:100])
        log.info("server %s is an alias of %s (address %s, same home page)", alias.origin, keep.origin, server.ip)
        return alias
    return None
