from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def percent(value: float) -> str:
    """0.2034 -> "20.3%"."""
    try:
        return f"{float(value):.1%}"
    except (TypeError, ValueError):
        return ""
