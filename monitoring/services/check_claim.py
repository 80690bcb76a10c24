"""Claiming the due monitors for a round, exactly once: one guarded UPDATE moves each due row to leased
under this worker's token, so a redelivered or duplicated message claims nothing and writes nothing. A worker
killed after its claim loses that one check slot; the lease (next_check_at pushed forward) then expires and
the server is due again. A multi-location monitor is claimed per location, on its LocationState row.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from datetime import datetime

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from crawlcore.services.leases import lease_deadline

from ..models import LocationState, ServerMonitor
from ..quorum import locations_parse
from .check_targets import monitors_of


def monitors_claim(*, server_ids: Sequence[int], now: datetime | None = None) -> list[ServerMonitor]:
    """Lease the due monitors among `server_ids`; the ones not due (already checked, or taken by another
    worker) are left alone. The lease pushes next_check_at forward, so a worker that dies mid-check
    leaves the server due again when the lease expires, and one poison server can't loop a worker."""
    now = now or timezone.now()
    token = secrets.token_hex(8)
    due = Q(next_check_at__isnull=True) | Q(next_check_at__lte=now)
    ServerMonitor.objects.filter(server_id__in=server_ids, enabled=True, locations="").filter(due).update(
        claim_token=token, next_check_at=lease_deadline(now), dispatched_at=None
    )
    # The guard was in the UPDATE: rows another claimer took in between carry its token, not ours.
    mine = list(monitors_of(server_ids).filter(claim_token=token, locations=""))
    return mine + _located_claim(server_ids, token, now, due)


def _located_claim(server_ids: Sequence[int], token: str, now: datetime, due: Q) -> list[ServerMonitor]:
    """Multi-location monitors are claimed per location: every listed crawler number gets the message
    and checks the server once per interval, on its own LocationState row (same guarded UPDATE)."""
    here = settings.CRAWLER_NUM
    if here is None:
        return []
    located = [
        m for m in monitors_of(server_ids).exclude(locations="").only("server_id", "locations")
        if here in locations_parse(m.locations)
    ]  # fmt: skip
    if not located:
        return []
    ids = [m.server_id for m in located]
    LocationState.objects.bulk_create(
        [LocationState(server_id=sid, crawler_num=here) for sid in ids], ignore_conflicts=True
    )
    states = LocationState.objects.filter(server_id__in=ids, crawler_num=here)
    states.filter(due).update(claim_token=token, next_check_at=lease_deadline(now))
    claimed = set(states.filter(claim_token=token).values_list("server_id", flat=True))
    return list(monitors_of(sorted(claimed))) if claimed else []
