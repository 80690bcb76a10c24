"""Writes the dashboard owns (besides the rollups, dashboard.rollups)."""

from __future__ import annotations

from .models import StatusPage


def status_page_ensure(*, slug: str, group: str, title: str = "") -> StatusPage:
    """The group's public status page at /status/<slug>/, created enabled if there is none; an existing
    page is left as the operator set it."""
    page, _ = StatusPage.objects.get_or_create(slug=slug, defaults={"group": group, "title": title})
    return page
