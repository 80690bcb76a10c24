"""Every dashboard, analyzer and API URL requested with junk: the URLconf walked, each path
parameter filled with ordinary and absurd ids, each with a set of junk query strings. Shared by the SQLite
test (in-process) and the PostgreSQL one (in a manage.py shell, where `walk()` runs and prints JSON)."""

from __future__ import annotations

from urllib.parse import quote

from django.urls import URLPattern, URLResolver, get_resolver

# Where a walk goes: the pages people and scripts read, not the admin (Django's own) nor the login forms.
PREFIXES = ("", "dashboard/", "analyzer/", "api/", "metrics", "healthz")
SKIP = ("admin/", "dashboard/login/", "dashboard/logout/")

IDS = ["1", "0", str(2**31), str(2**63), "9" * 30]
JUNK = [
    "",
    "offset=%C2%B2",  # '²': isdigit() but not int()
    "offset=-1&limit=%C2%B2",
    "offset=99999999999999999999999999",
    "limit=0",
    "group=%00",
    "group=a%00b&status=%00",
    "status=%F0%9F%92%A5&range=%00",
    "range=9999d",
    "after=%00-1",
    "after=99999999999999999999-1",
    "after=%C2%B9-%C2%B2",
    "group=" + quote("x" * 5000),
    "%00=%00",
    "offset=1e9&offset=2",
]


def _paths(resolver: URLResolver | None = None, prefix: str = "") -> list[tuple[str, list[str]]]:
    """(route with `{}` for each path converter, converter names) of every URL pattern."""
    out = []
    for p in (resolver or get_resolver()).url_patterns:
        route = str(p.pattern)
        if isinstance(p, URLResolver):
            out += _paths(p, prefix + route)
        elif isinstance(p, URLPattern):
            out.append((prefix + route, list(p.pattern.converters)))
    return out


def urls() -> list[str]:
    """Every URL to try, path parameters filled in."""
    out = []
    for route, params in _paths():
        if route.startswith(SKIP) or not route.startswith(PREFIXES) or route.startswith("^"):
            continue
        base = route
        for name in params:
            base = base.replace(f"<{name}>", "{}").replace(f"<int:{name}>", "{}")
            base = base.replace(f"<id:{name}>", "{}")
        values = IDS if params else [None]
        for v in values:
            out.append("/" + (base.format(*[v] * len(params)) if params else base))
    return out


def walk(client) -> dict[str, int]:
    """`url?junk` -> status for every URL and junk; only the statuses that are not what we accept."""
    bad = {}
    for url in urls():
        for junk in JUNK:
            target = f"{url}?{junk}" if junk else url
            status = client.get(target).status_code
            # 405: an action that only takes POST (a mute button) answers a GET so, whatever its query.
            if status not in (200, 301, 302, 400, 404, 405):
                bad[target[:120]] = status
    return bad
