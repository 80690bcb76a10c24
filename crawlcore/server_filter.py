"""The servers a user names on a command line: one spelling rule for every command that filters by site or
group (`dead_links`, `export_warc`, `add_channel`), so the way the dashboard writes a site works everywhere.

A site is written as a host (`www.example.org`, `[2001:db8::1]`), a host and port (`127.0.0.11:8090`), or an
origin or URL as the dashboard shows it (`http://127.0.0.11:8090`, `https://example.org/some/page`).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.db.models import Q, QuerySet

from crawlcore.models import Server

SPELLINGS = "a host (example.org), host:port (127.0.0.11:8090) or an origin (http://127.0.0.11:8090)"


def site_q(site: str) -> Q:
    """The servers `site` names, as a filter on Server (prefix it for a related model's field)."""
    text = site.strip()
    scheme = port = None
    if "://" in text:
        parts = urlsplit(text)
        scheme, host = parts.scheme.lower(), (parts.hostname or "")
        try:
            port = parts.port
        except ValueError:
            return Q(pk__in=[])  # a port that is no number names no server
    elif text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() else None
    elif text.count(":") == 1:
        host, _, after = text.partition(":")
        port = int(after) if after.isdigit() else -1
    else:
        host = text
    q = Q(host=host.lower().strip("[]"))
    if port is not None:
        q &= Q(port=port)
    if scheme:
        q &= Q(scheme=scheme)
    return q


def servers_named(site: str) -> QuerySet[Server]:
    return Server.objects.filter(site_q(site))


def filter_problem(*, site: str = "", group: str = "") -> str | None:
    """Why a --site / --group filter would match no server (a typo, most likely), or None."""
    if site and not servers_named(site).exists():
        return f"--site {site!r}: no server is named so; write {SPELLINGS}"
    if group and not Server.objects.filter(group=group).exists():
        groups = sorted(g for g in Server.objects.exclude(group="").values_list("group", flat=True).distinct()[:20])
        known = f"; groups: {', '.join(groups)}" if groups else "; no server has a group yet"
        return f"--group {group!r}: no server is in that group{known}"
    return None
