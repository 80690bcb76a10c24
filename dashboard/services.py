"""The few operator writes the admin's actions need that crawladmin.services has no function for yet
(enable/disable, pin, re-queue). Kept small and guarded; candidates to move into crawladmin.services.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models import Q
from django.utils import timezone

from crawladmin.models import Server, Url
from crawler.lifecycle import State


def servers_set_enabled(*, server_ids: Sequence[int], enabled: bool) -> int:
    """Enable or disable crawling and monitoring of these servers. Returns servers changed."""
    return Server.objects.filter(id__in=list(server_ids)).exclude(enabled=enabled).update(enabled=enabled)


def servers_pin(*, server_ids: Sequence[int], crawler_num: int | None) -> int:
    """Pin servers to a crawler number (None: unpin). Work already queued keeps its queue; the next
    dispatch sends to the new one."""
    return Server.objects.filter(id__in=list(server_ids)).update(crawler_num=crawler_num)


def urls_requeue(*, url_ids: Sequence[int]) -> int:
    """Make these URLs due now: Init ones are loaded at the next dispatch, NoResponse ones re-checked at
    the inactive scan's next sweep (their back-off cut short). Left alone: Visited URLs (the staleness
    scheduler decides when they are re-checked, from their real last check), Dead ones (revive them),
    excluded ones, and those leased by a worker right now."""
    now = timezone.now()
    free = Q(lease_owner="") | Q(lease_expires_at__lt=now)
    live = [State.INIT.value, State.NO_RESPONSE_1.value, State.NO_RESPONSE_2.value]
    return (
        Url.objects.filter(id__in=list(url_ids), state__in=live, exclusion_reason="")
        .filter(free)
        .update(next_check_at=now)
    )
