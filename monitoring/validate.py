"""What an operator may write into a monitor's and a server's settings, the pure part (no Django import).

One set of rules serves the admin's forms (model ``clean()``), the import of a server list and the check
round itself: a row that reached the database some other way (a shell, raw SQL, an older version) is
judged by the same rules when it is checked, and fails its own check with the reason instead of the
round. The server's own fields are crawlcore.validate's.

Each function returns ``{field name: message}``; empty when all is well.
"""

from __future__ import annotations

import math

from crawlcore.validate import has_control
from crawler.urlnorm import UrlError, canonicalize

from .accepted_codes import AcceptedCodes, AcceptedCodesError
from .server_list import MAX_INTERVAL_S, MAX_THRESHOLD_S, MIN_INTERVAL_S

MAX_CONFIRM = 100  # fail_after / recover_after
MAX_HEALTH_URL_LENGTH = 2048


def health_url_problem(url: str) -> str | None:
    """None when `url` is empty (the home page) or an absolute http(s) URL with a host."""
    if not url:
        return None
    if len(url) > MAX_HEALTH_URL_LENGTH:
        return f"longer than {MAX_HEALTH_URL_LENGTH} characters"
    if has_control(url) or url != url.strip():
        return "contains control characters or surrounding spaces"
    if not url.lower().startswith(("http://", "https://")):
        return "must be an http:// or https:// URL"
    try:
        canonicalize(url)
    except UrlError as exc:
        return f"not a usable http(s) URL ({exc.reason})"
    return None


def _number_problem(value: float | None, low: float, high: float) -> str | None:
    if value is None:
        return None
    if not isinstance(value, int | float) or math.isnan(value) or not (low <= value <= high):
        return f"must be within {low:g}-{high:g} seconds"
    return None


def _count_problem(value: int | None) -> str | None:
    if value is None or value == 0:  # empty (or 0, as before): the MONITOR_* default
        return None
    if not (1 <= value <= MAX_CONFIRM):
        return f"must be within 1-{MAX_CONFIRM}"
    return None


def monitor_problems(
    *,
    health_url: str,
    interval_s: float | None,
    delay_threshold_s: float | None,
    accepted_codes: str,
    fail_after: int | None = None,
    recover_after: int | None = None,
) -> dict[str, str]:
    """The fields of one monitor's settings that cannot be used, with why."""
    problems: dict[str, str | None] = {
        "health_url": health_url_problem(health_url or ""),
        "interval_s": _number_problem(interval_s, MIN_INTERVAL_S, MAX_INTERVAL_S),
        "delay_threshold_s": _number_problem(delay_threshold_s, 0.0, MAX_THRESHOLD_S),
        "fail_after": _count_problem(fail_after),
        "recover_after": _count_problem(recover_after),
    }
    try:
        AcceptedCodes.parse(accepted_codes or "")
    except AcceptedCodesError as exc:
        problems["accepted_codes"] = str(exc)
    return {name: message for name, message in problems.items() if message}
