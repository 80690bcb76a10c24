"""What an operator may write into a server's fields, the pure part (no Django import): the rules behind
Server.clean() (the admin's forms) and the import of a server list. Returns ``{field name: message}``.
"""

from __future__ import annotations

import re

from crawler.urlnorm import UrlError, canonicalize, server_key

MAX_CRAWLER_NUM = 10_000
MAX_GROUP_LENGTH = 100

# C0 and C1 controls and DEL: never meaningful in a name, a URL or a header, and PostgreSQL refuses NUL.
CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def has_control(text: str) -> bool:
    return CONTROL_RE.search(text) is not None


# The schemes of the server rows that TCP, DNS and heartbeat monitors hang on; the crawler never visits them.
MONITOR_SCHEMES = ("tcp", "dns", "heartbeat")


def server_problems(*, scheme: str, host: str, port: int | None, group: str, crawler_num: int | None) -> dict[str, str]:
    """The fields of one server that cannot be used, with why."""
    problems = _monitor_row_problems(host, port) if scheme in MONITOR_SCHEMES else _origin_problems(scheme, host, port)
    if has_control(group or ""):
        problems["group"] = "must not contain control characters"
    elif len(group or "") > MAX_GROUP_LENGTH:
        problems["group"] = f"longer than {MAX_GROUP_LENGTH} characters"
    if crawler_num is not None and not (0 <= crawler_num <= MAX_CRAWLER_NUM):
        problems["crawler_num"] = f"must be within 0-{MAX_CRAWLER_NUM}"
    return problems


def _monitor_row_problems(host: str, port: int | None) -> dict[str, str]:
    problems: dict[str, str] = {}
    if port is None or not (0 <= port <= 65535):
        problems["port"] = "must be within 0-65535"
    if not host or has_control(host) or any(c.isspace() for c in host):
        problems["host"] = "must be a name or an IP address, without spaces or control characters"
    return problems


def _origin_problems(scheme: str, host: str, port: int | None) -> dict[str, str]:
    problems: dict[str, str] = {}
    if scheme not in ("http", "https"):
        problems["scheme"] = "must be http or https"
    if port is None or not (1 <= port <= 65535):
        problems["port"] = "must be within 1-65535"
    if not host or has_control(host) or host != host.strip():
        problems["host"] = "must be a host name or an IP address, without spaces or control characters"
    elif not problems:
        shown = f"[{host}]" if ":" in host else host
        try:
            canonical_host = server_key(canonicalize(f"{scheme}://{shown}:{port}/")).host
        except UrlError as exc:
            problems["host"] = f"not a usable host name or IP address ({exc.reason})"
        else:
            if canonical_host != host:
                problems["host"] = f"not in canonical form: {canonical_host!r} (lower case, IPv6 without brackets)"
    return problems
