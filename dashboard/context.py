"""What every page's template may use."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest


def time_zone(request: HttpRequest) -> dict:
    """The operator's zone, which every time on the pages is shown in (charts label their axis with it)."""
    return {"time_zone": settings.TIME_ZONE}
