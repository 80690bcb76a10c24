"""The one time format of every page (dashboard, alerts, analyzer): the operator's zone (TIME_ZONE,
default UTC), named, seconds shown, the age on hover. Here, at the bottom of the Django layers, so every
app's templates can `{% load times %}` without reaching up to the dashboard."""

from __future__ import annotations

from datetime import datetime

from django import template
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

register = template.Library()


def when_text(at: datetime) -> str:
    local = timezone.localtime(at)
    return f"{local:%Y-%m-%d %H:%M:%S} {local.tzname()}"


def ago_text(at: datetime, now: datetime | None = None) -> str:
    """How long ago, in the unit a reader can watch tick: seconds under a minute ("12 s ago"), minutes under
    an hour, hours under two days, then days. Never "0 minutes ago" for a check made seconds ago."""
    seconds = max(0, int(((now or timezone.now()) - at).total_seconds()))
    if seconds < 60:
        return f"{seconds} s ago"
    if seconds < 3600:
        return f"{seconds // 60} min ago"
    if seconds < 172800:
        return f"{seconds // 3600} h ago"
    return f"{seconds // 86400} days ago"


@register.simple_tag
def when(at) -> SafeString:
    """`{% when some_datetime %}`: a <time> element in the one format, its age as the tooltip."""
    if not at:
        return mark_safe("–")  # a constant
    return format_html('<time datetime="{}" title="{}">{}</time>', at.isoformat(), ago_text(at), when_text(at))
