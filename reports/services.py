"""Writes of the link reports: bring the recorded breaks up to date with the crawl (LinkBreak), and send
each owner the digest of what broke and what was fixed (Digest)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from crawlcore.db.bulk import update_by_id

from .models import LinkBreak
from .selectors import Broken, broken_links_now

log = logging.getLogger(__name__)

_IN_CHUNK = 500


@dataclass
class RefreshOutcome:
    broken: int = 0  # open breaks after the refresh
    new: int = 0  # first seen broken now (or broken again)
    changed: int = 0  # still broken, differently (status, kind, chain, last check)
    fixed: int = 0


def link_breaks_refresh(*, now: datetime | None = None) -> RefreshOutcome:
    """Bring LinkBreak up to date with the crawl: new breaks get `first_broken_at = now`, breaks that are
    gone get `fixed_at = now`, the others keep their first time and take the target's current figures.
    Only the difference is written. Memory: the open breaks' keys, not the crawl's links."""
    now = now or timezone.now()
    outcome = RefreshOutcome()
    with transaction.atomic():
        open_rows = {
            (f, t): (pk, rest)
            for pk, f, t, *rest in LinkBreak.objects.filter(fixed_at__isnull=True)
            .values_list(
                "id", "from_url_id", "to_url_id", "status", "failure_kind", "redirect_chain", "last_checked_at"
            )
            .iterator(chunk_size=2000)
        }
        current: dict[tuple[int, int], Broken] = {}
        for b in broken_links_now():
            current.setdefault((b.from_url_id, b.to_url_id), b)
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
        gone = [(pk, now) for key, (pk, _) in open_rows.items() if key not in current]
        update_by_id(LinkBreak._meta.db_table, (("fixed_at", "timestamptz"),), gone)
        _open_new(new, now)
    outcome.broken, outcome.new, outcome.changed, outcome.fixed = len(current), len(new), len(changed), len(gone)
    return outcome


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
