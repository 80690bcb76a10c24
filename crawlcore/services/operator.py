"""What an operator does by hand (the admin's actions): enable or disable servers, pin them to a crawler
number, check or crawl them now, revive their Dead URLs; re-queue, revive or exclude URLs. Each is one
guarded write (or calls the service that owns the transition), takes ids, and returns what it changed, so
a repeated click changes nothing twice and a URL a worker holds right now is left to its worker.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models import Q
from django.utils import timezone

from crawlcore.models import Server, Url
from crawler.lifecycle import State

from .load_dispatch import servers_dispatch_with_due_work
from .urls import url_exclude, urls_revive

OPERATOR_EXCLUSION = "excluded by an operator"


def servers_set_enabled(*, server_ids: Sequence[int], enabled: bool) -> int:
    """Enable or disable crawling and monitoring of these servers. Returns servers changed."""
    return Server.objects.filter(id__in=list(server_ids)).exclude(enabled=enabled).update(enabled=enabled)


def servers_move_to_group(*, server_ids: Sequence[int], group: str) -> int:
    """Put these servers in `group` ("" for none). Returns servers changed."""
    return Server.objects.filter(id__in=list(server_ids)).exclude(group=group).update(group=group)


def servers_pin(*, server_ids: Sequence[int], crawler_num: int | None) -> int:
    """Pin servers to a crawler number (None: unpin). Work already queued keeps its queue; the next
    dispatch sends to the new one. Returns servers changed."""
    qs = Server.objects.filter(id__in=list(server_ids))
    qs = qs.exclude(crawler_num__isnull=True) if crawler_num is None else qs.exclude(crawler_num=crawler_num)
    return qs.update(crawler_num=crawler_num)


def servers_crawl_now(*, server_ids: Sequence[int]) -> int:
    """Send a load task now for each of these servers that has due Init URLs and is neither paused nor
    already dispatched. Returns tasks sent."""
    return servers_dispatch_with_due_work(server_ids=list(server_ids))


def servers_revive_dead(*, server_ids: Sequence[int]) -> int:
    """Every Dead URL of these servers back to Init (to be loaded again). Returns URLs revived."""
    url_ids = Url.objects.filter(server_id__in=list(server_ids), state=State.DEAD.value).values_list("id", flat=True)
    return urls_revive(url_ids=list(url_ids))


def urls_requeue(*, url_ids: Sequence[int]) -> int:
    """Make these URLs due now: Init ones are loaded at the next dispatch, NoResponse ones re-checked at
    the inactive scan's next sweep (their back-off cut short). Left alone: Visited URLs (the staleness
    scheduler decides when they are re-checked, from their real last check), Dead ones (revive them),
    excluded ones, and those leased by a worker right now. Returns URLs changed."""
    now = timezone.now()
    free = Q(lease_owner="") | Q(lease_expires_at__lt=now)
    live = [State.INIT.value, State.NO_RESPONSE_1.value, State.NO_RESPONSE_2.value]
    return (
        Url.objects.filter(id__in=list(url_ids), state__in=live, exclusion_reason="")
        .filter(free)
        .update(next_check_at=now)
    )


def urls_revive_dead(*, url_ids: Sequence[int]) -> list[int]:
    """Those of these URLs that are Dead back to Init. Returns the ids revived."""
    dead = Url.objects.filter(id__in=list(url_ids), state=State.DEAD.value).values_list("id", flat=True)
    return [i for i in dead if urls_revive(url_ids=[i])]


def urls_exclude(*, url_ids: Sequence[int], reason: str = OPERATOR_EXCLUSION) -> list[int]:
    """Exclude these URLs for good (never fetched again), whatever their state, except those excluded
    already and those a worker holds right now (left to their worker). Returns the ids excluded, in order."""
    ids = Url.objects.filter(id__in=list(url_ids), exclusion_reason="").order_by("id").values_list("id", flat=True)
    return [i for i in ids if url_exclude(url_id=i, reason=reason, owner="", states=tuple(State))]
