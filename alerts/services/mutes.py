"""Muting: "mute for ..." on a server or a group."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from django.db.models import Q
from django.utils import timezone

from crawlcore.models import Server

from ..models import Mute


def muted_servers(*, server_ids: Sequence[int], at: datetime) -> set[int]:
    """The servers among these that a mute covers at `at` (their own, or their group's)."""
    mutes = list(Mute.objects.filter(until__gt=at).values_list("server_id", "group"))
    if not mutes:
        return set()
    ids = {sid for sid, _ in mutes if sid is not None} & set(server_ids)
    groups = {g for _, g in mutes if g}
    if groups:
        ids |= set(Server.objects.filter(id__in=server_ids, group__in=groups).values_list("id", flat=True))
    return ids


def mute_add(
    *, seconds: float, server_id: int | None = None, group: str = "", reason: str = "", now: datetime | None = None
) -> Mute:
    if (server_id is None) == (not group):
        raise ValueError("mute one server or one group")
    if seconds <= 0:
        raise ValueError("a mute lasts a positive time")
    until = (now or timezone.now()) + timedelta(seconds=seconds)
    return Mute.objects.create(server_id=server_id, group=group, until=until, reason=reason[:200])


def mute_end(*, server_id: int | None = None, group: str = "", now: datetime | None = None) -> int:
    """End the mutes of this server (or group) now; returns how many were running."""
    now = now or timezone.now()
    running = Mute.objects.filter(until__gt=now).filter(Q(server_id=server_id) if server_id else Q(group=group))
    return running.update(until=now)
