"""Reads for the pages and /metrics: a server's notifications, counts per channel."""

from __future__ import annotations

from django.db.models import Count

from .models import Mute, Notification


def server_notifications(*, server_id: int, limit: int = 20) -> list[Notification]:
    """The latest notifications of this server's events, newest first, with their event and channel."""
    rows = Notification.objects.filter(server_id=server_id).select_related("event", "channel")
    return list(rows.order_by("-created_at", "-id")[:limit])


def notification_counts() -> dict[tuple[str, str], int]:
    """(channel name, status) -> notifications, for every channel that has any."""
    rows = Notification.objects.values("channel__name", "status").annotate(n=Count("id"))
    return {(r["channel__name"], r["status"]): r["n"] for r in rows}


def server_mutes(*, server_id: int, group: str, now) -> list[Mute]:
    """The mutes running now that cover this server (its own or its group's)."""
    qs = Mute.objects.filter(until__gt=now)
    own = list(qs.filter(server_id=server_id))
    return own + (list(qs.filter(group=group)) if group else [])
