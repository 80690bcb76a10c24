"""One line of a server list (`manage.py import_servers`): parsed and checked, nothing written.

Pure: no Django or Celery import.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from crawlcore.validate import has_control
from crawler.urlnorm import UrlError, canonicalize, server_key

from .accepted_codes import AcceptedCodes, AcceptedCodesError

COLUMNS = (
    "host_or_url", "group", "crawler_num", "interval_s", "delay_threshold_s", "accepted_codes", "owner_email",
    "owner_name",
)  # fmt: skip
MIN_INTERVAL_S = 10.0
MAX_INTERVAL_S = 7 * 86400.0
MAX_THRESHOLD_S = 600.0


_EMAIL = re.compile(r"^[^@\s,;<>]+@[^@\s,;<>]+\.[^@\s,;<>]+$")


class RowError(ValueError):
    pass


@dataclass(frozen=True)
class ServerRow:
    scheme: str
    host: str
    port: int
    health_url: str  # "" when it is the home page
    group: str
    crawler_num: int | None
    interval_s: float | None
    delay_threshold_s: float | None
    accepted_codes: str
    owner_email: str = ""  # the server owner's contact: alerts sends them their server's events
    owner_name: str = ""  # how the link reports address the owner


def is_header(cells: Sequence[str]) -> bool:
    return bool(cells) and cells[0].strip().lower() in {"host", "url", "host_or_url", "server"}


def _number(text: str, name: str, low: float, high: float) -> float | None:
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise RowError(f"{name} {text!r} is not a number") from None
    if not (low <= value <= high):  # also refuses nan
        raise RowError(f"{name} {text!r} must be within {low:g}-{high:g}")
    return value


def parse_server_row(cells: Sequence[str]) -> ServerRow:
    """One line of a server list: host or URL, group, crawler number, check interval (s), delay threshold
    (s), accepted codes, owner e-mail, owner name. Only the first is required; empty fields take the MONITOR_*
    defaults."""
    if len(cells) > len(COLUMNS):
        raise RowError(f"{len(cells)} fields, at most {len(COLUMNS)} expected ({', '.join(COLUMNS)})")
    cells = [c.strip() for c in cells] + [""] * (len(COLUMNS) - len(cells))
    target, group, crawler, interval, threshold, codes, owner, owner_name = cells
    if not target:
        raise RowError("host or URL is empty")
    url = target if "://" in target else f"http://{target}/"
    try:
        canonical = canonicalize(url)
        key = server_key(canonical)
    except UrlError as exc:
        raise RowError(f"{target!r} is not a usable host or http(s) URL ({exc.reason})") from None
    if len(group) > 100:
        raise RowError("group is longer than 100 characters")
    if has_control(group):
        raise RowError(f"group {group!r} contains a control character")
    crawler_num = None
    if crawler:
        # ASCII digits only: str.isdigit() also takes '²', which int() refuses.
        if not (crawler.isascii() and crawler.isdigit()) or int(crawler) > 10_000:
            raise RowError(f"crawler number {crawler!r} must be a whole number 0-10000")
        crawler_num = int(crawler)
    try:
        accepted = str(AcceptedCodes.parse(codes))
    except AcceptedCodesError as exc:
        raise RowError(f"accepted codes: {exc}") from None
    if owner and not _EMAIL.match(owner):
        raise RowError(f"owner {owner!r} is not an e-mail address")
    if len(owner_name) > 200 or has_control(owner_name):
        raise RowError("owner name is longer than 200 characters or contains a control character")
    home = f"{key.origin()}/"
    return ServerRow(
        scheme=key.scheme,
        host=key.host,
        port=key.port,
        health_url="" if canonical == home else canonical,
        group=group,
        crawler_num=crawler_num,
        interval_s=_number(interval, "interval", MIN_INTERVAL_S, MAX_INTERVAL_S),
        delay_threshold_s=_number(threshold, "delay threshold", 0.0, MAX_THRESHOLD_S),
        accepted_codes=accepted,
        owner_email=owner,
        owner_name=owner_name,
    )
