"""How the dashboard writes figures, shared by the selectors and the template tags (which both need them,
so neither imports the other): milliseconds, and the heatmap's one colour scale."""

from __future__ import annotations

from django.conf import settings

HEAT_FLOOR_MS = 10.0  # green: this fast or faster


def ms(value) -> str:
    """Milliseconds, short: '12 ms', '1.2 s', or an en dash when unknown."""
    if value is None:
        return "–"
    value = float(value)
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{value:.0f} ms"


def heat_scale() -> tuple[float, float]:
    """The heatmap's one colour scale, the same for every row and page: logarithmic from HEAT_FLOOR_MS
    (green) to the delay threshold (red), where a check stops being normal. One scale, so 8 ms and 306 ms
    are different colours; logarithmic, so 10 ms and 30 ms are too."""
    top = max(settings.MONITOR_DELAY_THRESHOLD * 1000.0, HEAT_FLOOR_MS * 10)
    return HEAT_FLOOR_MS, top
