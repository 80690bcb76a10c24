"""Filters of the crawl jobs' pages."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def duration(seconds) -> str:
    """Seconds in the unit a reader takes in at once: "45 s", "12 min", "3 h 05 min"; "–" for none. The
    jobs' script (dashboard/static/dashboard/jobs.js) writes the same words."""
    if seconds is None or seconds == "":
        return "–"
    s = int(seconds)
    if s < 120:
        return f"{s} s"
    if s < 7200:
        return f"{s // 60} min"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"
