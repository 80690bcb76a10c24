"""Small formatting helpers for the dashboard templates (every output is plain text, autoescaped)."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def ms(value) -> str:
    """Milliseconds, short: '12 ms', '1.2 s', or an en dash when unknown."""
    if value is None:
        return "–"
    value = float(value)
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{value:.0f} ms"


@register.filter
def pct(value) -> str:
    return "–" if value is None else f"{float(value):.2f} %"


@register.filter
def per_s(value) -> str:
    return f"{float(value):.2f}/s"


@register.filter
def get(mapping, key):
    return mapping.get(key) if hasattr(mapping, "get") else None


@register.filter
def heat(fraction) -> str:
    """A background colour for a heatmap cell: green (the row's lightest hour) to red (its heaviest)."""
    if fraction is None:
        return "#eee"
    hue = round(120 * (1.0 - max(0.0, min(1.0, float(fraction)))))
    return f"hsl({hue}, 70%, 60%)"
