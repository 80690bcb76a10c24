"""Writes of the link reports: bring the recorded breaks up to date with the crawl (LinkBreak), and send
each owner the digest of what broke and what was fixed (Digest)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from crawlcore.db.bulk import update_by_id
from crawlcore.models import Link

from . import changes, selectors
from .models import LinkBreak, LinkBreakRefresh
from .selectors import Broken, LinkScope

log = logging.getLogger(__name__)

_IN_CHUNK = 500


@dataclass
class RefreshOutcome:
    broken: int = 0  # open breaks after the refresh
    new: int = 0  # first seen broken now (or broken again)
    changed: int = 0  # still broken, differently (status, kind, chain, last check)
    fixed: int = 0
    full: bool = True  # every link recomputed; False: only those of the URLs that changed
    urls: int = 0  # URLs that changed since the previous refresh (an incremental one)

    @property
    def unchanged(self) -> bool:
        """An incremental refresh that found nothing to look at and wrote nothing: every figure over the
        open breaks and their targets is what it was after the previous refresh."""
        return not (self.full or self.urls or self.new or self.changed or self.fixed)


# How long after its id is handed out a UrlEvent or Link row may still be uncommitted: the transactions
# that write them are a few statements long. A refresh reads on from a mark this much older than the
# previous refresh, so it sees every row committed after that refresh looked.
COMMIT_WINDOW = timedelta(minutes=2)
_OPEN = ("id", "from_url_id", "to_url_id", "status", "failure_kind", "redirect_chain", "last_checked_at")


def link_breaks_refresh(*, now: datetime | None = None, full: bool = False) -> RefreshOutcome:
    """Bring LinkBreak up to date with the crawl: new breaks get `first_broken_at = now`, breaks that are
    gone get `fixed_at = now`, the others keep their first time and take the target's current figures.
    Only the difference is written.

    Incremental unless `full` (or the first time, or when the settings it depends on changed): only the links
    that may have changed since the previous refresh are looked at (`_scope`): the new ones, and those of
    URLs that moved on the broken side; the result is the one a full recompute gives. One refresh at a time
    (its state row is locked). Memory: the open breaks' keys of what is looked at, not the crawl's links."""
    now = now or timezone.now()
    with transaction.atomic():
        state, _ = LinkBreakRefresh.objects.select_for_update().get_or_create(pk=1)
        tops = changes.newest_ids()
        rules = changes.rules()
        if full or state.full_at is None or state.rules != rules:
            pending = selectors.fragment_targets_waiting()  # before the links: an extraction after is seen next time
            outcome = _apply(_current(None), _open_rows(None), now)
            state.full_at = now
        else:
            events, links = changes.read_from(state.marks, previous=state.refreshed_at, window=COMMIT_WINDOW)
            scope, pending = _scope(events, links, set(state.pending))
            gone = changes.breaks_of_deleted_urls()
            current, open_rows = _current(scope), _open_rows(scope)
            # A link found broken by its id alone (a new link) may carry an open break all the same.
            open_rows |= _open_rows_of(set(current) - set(open_rows))
            outcome = _apply(current, open_rows, now, gone=gone)
            outcome.full, outcome.urls = False, len(scope.sources | scope.targets)
            outcome.broken = LinkBreak.objects.filter(fixed_at__isnull=True).count()
        state.marks = changes.marks_kept(state.marks, now=now, window=COMMIT_WINDOW) + [[now.isoformat(), *tops]]
        state.pending, state.rules, state.refreshed_at = sorted(pending), rules, now
        state.save()
    return outcome


def _scope(events: int, links: int, pending: set[int]) -> tuple[LinkScope, set[int]]:
    """The links whose breakage may have changed since the marks (`events`, `links`: the newest UrlEvent and
    Link ids then; `pending`: targets by #fragment whose anchors were not written then), followed from
    the broken side, so that a busy crawl of healthy pages costs little:
    - every new link (its target may be failing, a redirect, or linked by #fragment);
    - links to a moved URL that fails or redirects now, or to a redirect leading through one;
    - links to a moved URL, and from a moved page, that carry an open break (fixed, or checked again);
    - links to every target of an open break through a redirect (a hop further on may have moved);
    - links by #fragment to a moved URL or to one still waiting for its anchors.
    And the targets by #fragment still waiting for their anchors, for the next refresh."""
    moved = changes.moved_since(events)
    by_fragment = selectors.fragment_targets(Link.objects.filter(id__gt=links)) | pending
    breaking, pages, targets = set(), set(), set()
    if moved.exists():  # else no page, target or redirect hop of a link can have changed
        breaking = selectors.breaking(moved)
        pages, targets = selectors.open_break_ends(moved)
        by_fragment |= selectors.fragment_targets(Link.objects.filter(to_url_id__in=moved))
    targets |= breaking | selectors.redirects_into(breaking) | by_fragment
    scope = LinkScope(frozenset(pages), frozenset(targets), links_after=links)
    return scope, selectors.fragment_targets_waiting(by_fragment)


def _current(scope: LinkScope | None) -> dict[tuple[int, int], Broken]:
    current: dict[tuple[int, int], Broken] = {}
    for b in selectors.broken_links_now(scope=scope):
        current.setdefault((b.from_url_id, b.to_url_id), b)
    return current


def _open_rows(scope: LinkScope | None) -> dict[tuple[int, int], tuple[int, list]]:
    """The open breaks (of the links of `scope`): (page, target) -> (id, [status, kind, chain, last check])."""
    open_ = LinkBreak.objects.filter(fixed_at__isnull=True).values_list(*_OPEN)
    queries = [open_] if scope is None else [
        *(open_.filter(from_url_id__in=chunk) for chunk in selectors.chunks(scope.sources)),
        *(open_.filter(to_url_id__in=chunk) for chunk in selectors.chunks(scope.targets)),
    ]  # fmt: skip
    return {(f, t): (pk, rest) for qs in queries for pk, f, t, *rest in qs.iterator(chunk_size=2000)}


def _open_rows_of(keys: set[tuple[int, int]]) -> dict[tuple[int, int], tuple[int, list]]:
    """The open breaks of these links (page, target), looked up by page."""
    open_ = LinkBreak.objects.filter(fixed_at__isnull=True).values_list(*_OPEN)
    found = {}
    for chunk in selectors.chunks({f for f, _ in keys}):
        for pk, f, t, *rest in open_.filter(from_url_id__in=chunk).iterator(chunk_size=2000):
            if (f, t) in keys:
                found[(f, t)] = (pk, rest)
    return found


def _apply(
    current: dict[tuple[int, int], Broken],
    open_rows: dict[tuple[int, int], tuple[int, list]],
    now: datetime,
    *,
    gone: Sequence[int] = (),
) -> RefreshOutcome:
    """Write the difference between the breaks found (`current`) and the open ones recorded over the same
    links (`open_rows`); `gone`: open breaks to close besides (their page or target was deleted)."""
    changed, new = [], []
    for key, b in current.items():
        known = open_rows.get(key)
        if known is None:
            new.append(b)
        elif tuple(known[1]) != (b.status, b.failure_kind, b.redirect_chain, b.last_checked_at):
            changed.append((known[0], b.status, b.failure_kind, b.redirect_chain, b.last_checked_at))
    update_by_id(
        LinkBreak._meta.db_table,
        (
            ("status", "integer"),
            ("failure_kind", "text"),
            ("redirect_chain", "text"),
            ("last_checked_at", "timestamptz"),
        ),
        changed,
    )
    fixed = {pk for key, (pk, _) in open_rows.items() if key not in current} | set(gone)
    update_by_id(LinkBreak._meta.db_table, (("fixed_at", "timestamptz"),), [(pk, now) for pk in sorted(fixed)])
    _open_new(new, now)
    return RefreshOutcome(broken=len(current), new=len(new), changed=len(changed), fixed=len(fixed))


def _first_seen(b: Broken, now: datetime) -> datetime:
    """When a break was first seen: when the crawl saw the link (its page or target) as it is now, at the
    latest now. Never after the row's last check."""
    return min(now, b.last_checked_at) if b.last_checked_at is not None else now


def _open_new(breaks: list[Broken], now: datetime) -> None:
    """Insert the new breaks; a link fixed earlier and broken again has a row already: it starts over."""
    rows = [
        LinkBreak(
            site_id=b.site_id, from_url_id=b.from_url_id, to_url_id=b.to_url_id, anchor_text=b.anchor_text[:200],
            element=b.element, status=b.status, failure_kind=b.failure_kind[:40], redirect_chain=b.redirect_chain,
            first_broken_at=_first_seen(b, now), last_checked_at=b.last_checked_at,
        )
        for b in breaks
    ]  # fmt: skip
    LinkBreak.objects.bulk_create(rows, ignore_conflicts=True, batch_size=500)
    wanted = {(b.from_url_id, b.to_url_id): b for b in breaks}
    sources = sorted({f for f, _ in wanted})
    again = []
    for i in range(0, len(sources), _IN_CHUNK):
        fixed = LinkBreak.objects.filter(from_url_id__in=sources[i : i + _IN_CHUNK], fixed_at__isnull=False)
        for pk, f, t in fixed.values_list("id", "from_url_id", "to_url_id"):
            b = wanted.get((f, t))
            if b is not None:
                first = _first_seen(b, now)
                again.append((pk, None, first, b.status, b.failure_kind[:40], b.redirect_chain, b.last_checked_at))
    update_by_id(
        LinkBreak._meta.db_table,
        (
            ("fixed_at", "timestamptz"), ("first_broken_at", "timestamptz"), ("status", "integer"),
            ("failure_kind", "text"), ("redirect_chain", "text"), ("last_checked_at", "timestamptz"),
        ),
        again,
    )  # fmt: skip
