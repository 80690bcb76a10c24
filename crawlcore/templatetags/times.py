"""The one time format of every page (dashboard, alerts, analyzer): the operator's zone (TIME_ZONE,
default UTC), named, seconds shown, the age on hover. Here, at the bottom of the Django layers, so every
app's templates can `{% load times %}` without reaching up to the dashboard."""

from __future__ import annotations

from datetime import datetime

from django import template
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.timesince import timesince

register = template.Library()


def when_text(at: datetime) -> str:
    local = timezone.localtime(at)
    return f"{local:%Y-%m-%d %H:%M:%S} {local.tzname()}"


@register.simple_tag
def when(at) -> SafeString:
    """`{% when some_datetime %}`: a <time> element in the one format, its age as the tooltip."""
    if not at:
        return mark_safe("–")  # a constant
    age = timesince(at, timezone.now())
    return format_html('<time datetime="{}" title="{} ago">{}</time>', at.isoformat(), age, when_text(at))
