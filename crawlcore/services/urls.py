"""Writes to Url rows: insertion in bulk, claims with leases, and the guarded life-cycle transitions
(`urls_transition`, the one write path of every move, single ones included)."""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from crawlcore.db.bulk import insert_new, update_by_id
from crawlcore.db.chain import Const, Insert, Update
from crawlcore.db.params import column_types
from crawlcore.db.raw import fetch_rows, rows_by_values, skip_locked, typed
from crawlcore.models import Url, UrlEvent
from crawler import notfollowed
from crawler.lifecycle import Agent, Event, InvalidTransition, State, next_state
from crawler.scope import Scope
from crawler.urlnorm import server_key, url_hash

from .leases import lease_deadline
from .servers import servers_ensure

log = logging.getLogger(__name__)

CHUNK = 500  # keeps IN (...) lists under SQLite's variable limit and statements small


@dataclass(frozen=True)
class NewUrl:
    url: str  # canonical
    depth: int
    redirect_hops: int = 0
    scope: Scope | None = None  # None: a seed's own scope, from CRAWL_SCOPE
    exclusion_reason: str = ""
    resource: bool = False  # an image, stylesheet or script: checked, never parsed


def new_url_from(
    parent: Url | Claimed,
    url: str,
    *,
    depth: int,
    redirect_hops: int = 0,
    resource: bool = False,
    offsite_depth: int | None = None,
) -> NewUrl:
    """A URL found on `parent` (a link or a redirect): it inherits the parent's scope, or is kept as
    excluded 'out of scope' — stored so the link graph is whole, but never fetched. `offsite_depth`:
    CRAWL_OFFSITE_DEPTH, unless the caller read it already."""
    if offsite_depth is None:
        offsite_depth = settings.CRAWL_OFFSITE_DEPTH
    mode, root, hops = parent.scope_mode, parent.scope_root, parent.offsite_hops
    followed = _followed(mode, root, hops, server_key(url).host, offsite_depth)
    if followed is None:
        return NewUrl(url, depth, redirect_hops, Scope(mode, root, hops), exclusion_reason="out of scope",
                      resource=resource)  # fmt: skip
    return NewUrl(url, depth, redirect_hops, followed, resource=resource)


@functools.lru_cache(maxsize=65536)
def _followed(mode: str, root: str, hops: int, host: str, offsite_depth: int) -> Scope | None:
    """Scope.follow, once per scope and host a process: a crawl's links name few hosts, thirty times a page."""
    return Scope(mode, root, hops).follow(host, offsite_depth=offsite_depth)


@dataclass
class Inserted:
    ids: dict[str, int]  # url -> id, for every URL asked for (new or already known)
    server_ids: set[int]  # the servers that got new URLs (the ones that may have new due work)
    # The known ones among them that are Init and set aside only for how they were first found
    # (notfollowed.LIFTABLE): the only ones a followed link can lift (the extract agent's).
    liftable: set[int] = dataclasses.field(default_factory=set)


@dataclass
class Known:
    """What one lookup found of some URLs: the ids of those that exist, by URL, the liftable ones among them
    (as in Inserted), and the key of every URL looked up."""

    ids: dict[str, int]
    liftable: set[int]
    hashes: dict[str, str]  # url -> url_hash, for every URL looked up (found or not)


def urls_known(urls: Iterable[str]) -> Known:
    """Look the URLs up by their key (one indexed query): which exist, and which of those are liftable."""
    hashes = {url: url_hash(url) for url in urls}
    liftable: set[int] = set()
    ids = url_ids(hashes=list(hashes.values()), urls=list(hashes), liftable=liftable) if hashes else {}
    return Known(ids, liftable, hashes)


def urls_insert(*, urls: Sequence[NewUrl], trusted: bool = False, known: Known | None = None) -> Inserted:
    """Insert the URLs not yet known as Init (known ones are left as they are).

    A URL of an excluded server is stored excluded, with the server's reason, so it shows but is never due.
    Most links found on a page are known already: they are looked up first (one indexed query), and only
    the new ones are built and inserted. `known`: that lookup, made by the caller over these URLs (and
    maybe more), so that it builds nothing for the URLs it finds known; its ids are in the result.
    """
    by_url = {u.url: u for u in urls}
    if known is None or not known.hashes.keys() >= by_url.keys():
        known = urls_known(by_url)  # none given, or one that missed some of these: no query for no URLs
    hashes, ids, liftable = known.hashes, dict(known.ids), set(known.liftable)
    if not urls:
        return Inserted(ids, set(), liftable)
    missing = [u for url, u in by_url.items() if url not in ids]
    if not missing and not trusted:
        return Inserted(ids, set(), liftable)
    keys = {u.url: server_key(u.url) for u in (missing or by_url.values())}
    servers = servers_ensure(keys=set(keys.values()), trusted=trusted)
    now = timezone.now()
    init, seed_scope = State.INIT.value, settings.CRAWL_SCOPE
    rows = []
    for u in missing:
        key = keys[u.url]
        server = servers[key]
        scope = u.scope or Scope.for_seed(seed_scope, key.host)
        reason = server.excluded_reason or u.exclusion_reason
        rows.append(
            dict(
                url=u.url,
                url_hash=hashes[u.url],
                server_id=server.id,
                depth=u.depth,
                redirect_hops=u.redirect_hops,
                state=init,
                exclusion_reason=reason,
                next_check_at=None if reason else now,
                scope_mode=scope.mode,
                scope_root=scope.root,
                offsite_hops=scope.offsite_hops,
                resource=u.resource,
            )
        )
    if rows:
        inserted = insert_new(Url, rows, unique="url_hash", returning=("url_hash", "id"))
        by_hash = {r["url_hash"]: r["url"] for r in rows}
        ids.update((by_hash[h], pk) for h, pk in inserted)
        if len(inserted) < len(rows):
            # Another agent inserted some of them meanwhile (or the database returns nothing): they exist now.
            left = [r for r in rows if r["url"] not in ids]
            found = url_ids(hashes=[r["url_hash"] for r in left], urls=[r["url"] for r in left], liftable=liftable)
            ids.update(found)
    return Inserted(ids, {r["server_id"] for r in rows}, liftable)


def url_ids(*, hashes: Sequence[str], urls: Sequence[str], liftable: set[int] | None = None) -> dict[str, int]:
    """The ids of the URLs that exist, by URL (looked up by hash). `liftable` gets the ids of those that are
    Init and set aside for a reason a followed link lifts (notfollowed.LIFTABLE), read in the same lookup."""
    wanted = dict(zip(hashes, urls, strict=True))
    found: dict[str, int] = {}
    keys = list(wanted)
    init = State.INIT.value
    columns = ("url_hash", "id", "state", "exclusion_reason")
    for h, pk, state, reason in rows_by_values(Url._meta.db_table, "url_hash", keys, columns):
        found[wanted[h]] = pk
        if liftable is not None and state == init and reason in notfollowed.LIFTABLE:
            liftable.add(pk)
    return found


@dataclass(frozen=True, slots=True)
class Claimed:
    """A URL leased for loading: what the load agent reads of it (a model instance per row would cost
    more than the claim itself: ~40 ms for 1,000 rows)."""

    id: int
    url: str
    server_id: int
    depth: int
    redirect_hops: int
    failure_count: int
    scope_mode: str
    scope_root: str
    offsite_hops: int
    resource: bool


_CLAIMED = [f.name for f in dataclasses.fields(Claimed)]


def urls_claim(
    *, server_id: int, owner: str, limit: int, only: int | None = None, now: datetime | None = None
) -> list[Claimed]:
    """Lease up to `limit` due Init URLs of one server, shallowest first; with `only`, that URL alone if due.

    One statement: pick the due rows through url_claim_idx, skip those another claimer is locking right now
    (crawlcore.db.raw.skip_locked), lease them and return them. Two claimers never get the same row and never
    wait on each other; one statement is its own transaction, no BEGIN and COMMIT around it."""
    now = now or timezone.now()
    if only is not None:
        limit = 1
    table = Url._meta.db_table
    sql = f"""
        UPDATE {table} SET lease_owner = %s, lease_expires_at = %s
        WHERE id IN (
            SELECT id FROM {table}
            WHERE server_id = %s AND state = %s AND next_check_at <= %s
              AND (lease_owner = '' OR lease_expires_at < %s) AND ({typed("bigint")} IS NULL OR id = %s)
            ORDER BY depth, id LIMIT %s
            {skip_locked()}
        )
        RETURNING {", ".join(_CLAIMED)}"""
    params = [owner, lease_deadline(now), server_id, State.INIT.value, now, now, only, only, limit]
    # `resource`, the last column, as a bool: SQLite returns its booleans as 0 and 1.
    rows = [Claimed(*row[:-1], bool(row[-1])) for row in fetch_rows(sql, params)]
    rows.sort(key=lambda u: (u.depth, u.id))
    return rows


def urls_lease(
    *,
    ids: Sequence[int],
    owner: str,
    states: Sequence[State],
    server_id: int | None = None,
    held_by_prefix: str | None = None,
    now: datetime | None = None,
) -> list[int]:
    """Lease the given URLs to `owner` while they are still in one of `states`; returns the ids leased.

    Takes free rows (no lease, or an expired one); with `held_by_prefix`, instead takes over rows leased
    by an owner whose name starts with it — a scan task taking the URLs its sweep reserved. Rows already
    processed (lease cleared) or held by another task are left alone, so a redelivered message gets nothing.
    """
    now = now or timezone.now()
    if held_by_prefix is None:
        held = Q(lease_owner="") | Q(lease_expires_at__lt=now)
    else:
        held = Q(lease_owner__startswith=held_by_prefix)
    ids, leased = list(ids), []
    for i in range(0, len(ids), CHUNK):
        chunk = ids[i : i + CHUNK]
        rows = Url.objects.filter(id__in=chunk, state__in=[s.value for s in states]).filter(held)
        if server_id is not None:
            rows = rows.filter(server_id=server_id)
        rows.update(lease_owner=owner, lease_expires_at=lease_deadline(now))
        leased += Url.objects.filter(id__in=chunk, lease_owner=owner).values_list("id", flat=True)
    return leased


def urls_release(*, ids: Sequence[int], owner: str, next_check_at: datetime | None = None) -> int:
    """Give back leased URLs that were not processed (budget spent, server backing off)."""
    fields: dict = {"lease_owner": "", "lease_expires_at": None}
    if next_check_at is not None:
        fields["next_check_at"] = next_check_at
    return Url.objects.filter(id__in=ids, lease_owner=owner).update(**fields)


def url_exclude(*, url_id: int, reason: str, owner: str, states: Sequence[State] = (State.INIT,)) -> bool:
    """Set a leased URL aside (e.g. robots.txt disallows it): never due again, its state kept as it is."""
    return (
        Url.objects.filter(id=url_id, state__in=[s.value for s in states], lease_owner=owner).update(
            exclusion_reason=reason, next_check_at=None, lease_owner="", lease_expires_at=None
        )
        == 1
    )


@dataclass(frozen=True, slots=True)
class Move:
    """One URL's move in `urls_transition`: the values its row takes besides the state and the lease
    (`fields`, Url columns), and what its UrlEvent says of the request that caused it."""

    url_id: int
    fields: Mapping[str, object] = dataclasses.field(default_factory=dict)
    http_status: int | None = None
    latency_ms: float | None = None
    reason: str = ""


# Set by every move: the new state, the lease given up, the time of the check.
_MOVE_COLUMNS = (
    ("state", "text"),
    ("lease_owner", "text"),
    ("lease_expires_at", "timestamptz"),
    ("last_checked_at", "timestamptz"),
)


@functools.cache
def _column(name: str) -> tuple[str, str]:
    """A Url column and the PostgreSQL type its values are cast to in crawlcore.db.bulk.update_by_id."""
    field = Url._meta.get_field(name)
    # text, not varchar(n): an explicit cast to varchar(n) would cut a long value silently, where the
    # column's own limit refuses it, as the ORM's UPDATE would.
    if field.get_internal_type() in ("CharField", "TextField"):
        return field.column, "text"
    return field.column, field.db_type(connection)


def urls_transition(
    *,
    moves: Sequence[Move],
    expected: State,
    event: Event,
    agent: Agent,
    owner: str | None,
    now: datetime | None = None,
) -> list[int]:
    """Move URLs along the life-cycle by `event`, each with one guarded write, and record each move;
    returns the ids moved, in the order of `moves`.

    Refused (and logged, never applied) when the table has no such move. A URL no longer in `expected`
    state or no longer leased by `owner` (None: any lease) is left alone: a redelivered message, or another
    agent that got there first. Moves that set the same columns are written together: one UPDATE on
    PostgreSQL (the load agent's plain pages), and their events in one INSERT.
    """
    try:
        new = next_state(expected, event, agent)
    except InvalidTransition as exc:
        log.error("refused: url %s: %s", ", ".join(str(m.url_id) for m in moves), exc)
        return []
    now = now or timezone.now()
    guards = [("state", "text")]
    guard_values: tuple = (expected.value,)
    if owner is not None:
        guards.append(("lease_owner", "text"))
        guard_values += (owner,)
    groups: dict[tuple[str, ...], list[Move]] = {}
    for move in moves:
        groups.setdefault(tuple(sorted(move.fields)), []).append(move)
    moved: set[int] = set()
    for names, group in groups.items():
        rows = [(m.url_id, new.value, "", None, now, *(m.fields[n] for n in names), *guard_values) for m in group]
        columns = (*_MOVE_COLUMNS, *(_column(n) for n in names))
        moved.update(update_by_id(Url._meta.db_table, columns, rows, guards=guards))
    for move in moves:
        if move.url_id not in moved:
            log.info("url %s: not in %s under %s any more; another agent got there first", move.url_id, expected, owner)
    UrlEvent.objects.bulk_create(
        [
            UrlEvent(
                url_id=m.url_id,
                from_state=expected.value,
                to_state=new.value,
                agent=agent.value,
                crawler_num=settings.CRAWLER_NUM,
                at=now,
                http_status=m.http_status,
                latency_ms=m.latency_ms,
                reason=m.reason[:100],
            )
            for m in moves
            if m.url_id in moved
        ]
    )
    return [m.url_id for m in moves if m.url_id in moved]


MOVED = "moved_urls"  # the chain write of transition_writes, returning the URL ids moved


def transition_writes(
    *,
    moves: Sequence[Move],
    expected: State,
    event: Event,
    agent: Agent,
    owner: str,
    now: datetime,
) -> tuple[list[tuple[str, str]], list[tuple], list[Update | Insert]]:
    """urls_transition of moves that all set the same fields, as writes of a crawlcore.db.chain: the input
    columns (prefixed `u_`), one row per move in order, and the guarded UPDATE (named MOVED) followed by the
    INSERT of the events of the URLs it moved. The same guard and the same event as urls_transition."""
    new = next_state(expected, event, agent)  # InvalidTransition: the caller's bug, as a table error
    names = sorted(moves[0].fields) if moves else []
    if any(sorted(m.fields) != names for m in moves):
        raise ValueError("transition_writes: every move must set the same fields")
    types = dict(zip(names, (kind for _, kind in column_types(Url, names)), strict=True))
    columns = [("u_id", "bigint"), ("u_status", "integer"), ("u_latency", "double precision"), ("u_reason", "text")]
    columns += [(f"u_{n}", types[n]) for n in names]
    rows = [(m.url_id, m.http_status, m.latency_ms, m.reason[:100], *(m.fields[n] for n in names)) for m in moves]
    fixed = {
        "state": Const(new.value, "text"),
        "lease_owner": Const("", "text"),
        "lease_expires_at": Const(None, "timestamptz"),
        "last_checked_at": Const(now, "timestamptz"),
    }
    move = Update(
        MOVED,
        Url._meta.db_table,
        key="u_id",
        set=fixed | {_column(n)[0]: f"u_{n}" for n in names},
        guards={"state": Const(expected.value, "text"), "lease_owner": Const(owner, "text")},
    )
    record = Insert(
        "url_events",
        UrlEvent._meta.db_table,
        values={
            "url_id": "u_id",
            "from_state": Const(expected.value, "text"),
            "to_state": Const(new.value, "text"),
            "agent": Const(agent.value, "text"),
            "crawler_num": Const(settings.CRAWLER_NUM, "integer"),
            "at": Const(now, "timestamptz"),
            "http_status": "u_status",
            "latency_ms": "u_latency",
            "reason": "u_reason",
        },
        after=(MOVED, "u_id"),
    )
    return columns, rows, [move, record]


def url_transition(
    *,
    url_id: int,
    expected: State,
    event: Event,
    agent: Agent,
    owner: str | None,
    http_status: int | None = None,
    latency_ms: float | None = None,
    reason: str = "",
    now: datetime | None = None,
    **fields,
) -> bool:
    """`urls_transition` of one URL, `fields` its row's new values: True if it moved."""
    move = Move(url_id, fields, http_status=http_status, latency_ms=latency_ms, reason=reason)
    return bool(urls_transition(moves=[move], expected=expected, event=event, agent=agent, owner=owner, now=now))


def urls_revive(*, url_ids: Sequence[int]) -> int:
    """An operator brings Dead URLs back to Init, due at once; URLs not Dead (any more) are left alone.
    Returns how many moved."""
    now = timezone.now()
    revived = 0
    for url_id in url_ids:
        with transaction.atomic():
            revived += url_transition(
                url_id=url_id,
                expected=State.DEAD,
                event=Event.REVIVE,
                agent=Agent.ADMIN,
                owner=None,
                reason="revived by an operator",
                now=now,
                next_check_at=now,
                failure_count=0,
                failure_kind="",
            )
    return revived
