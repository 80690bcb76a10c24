"""What an operator's trust in a server covers for the monitor: its own host, nothing else.

A server marked trusted (by a superuser) may be monitored on a private address. That trust is for the
server's own host and port (`Server.serves`), as the crawler's visits have it: a health URL on another
host is guarded like any crawled URL, when the monitor is saved (`health_url_refusal`) and at every
fetch (`checks._guard`, through `url_trusted`). Content checks read the body, so they run only on a
trusted URL: on any other, their pass or fail would tell an operator what a third party's page says.

What a refusal tells is "refused" and nothing more: not the address a name resolved to, nor why it is
not allowed, so the outcome cannot be used to map an internal network.
"""

from __future__ import annotations

from django.conf import settings

from crawlcore.models import Server
from crawler.http import FetchResult
from crawler.netguard import forbidden_reason, parse_cidrs
from crawler.resolve import resolve_checked

REFUSED = "refused: not an address the monitor may contact"
CONTENT_UNTRUSTED = "content checks run only on a trusted server, on its own host"


def url_trusted(url: str, server: Server) -> bool:
    """Whether the monitor may fetch `url` without the private-address guard: the server is trusted and
    the URL is on its own host."""
    return bool(server.trusted) and server.serves(url)


def address_guard():
    """The private-address guard: only CRAWL_ALLOW_PRIVATE's networks may be private."""
    allowed = parse_cidrs(",".join(settings.CRAWL_ALLOW_PRIVATE))
    return lambda ip: forbidden_reason(ip, allowed)


def health_url_refusal(*, url: str, server: Server) -> str | None:
    """Why the monitor of `server` may not be set to fetch `url` (REFUSED), or None.

    An empty URL is the home page, and a URL on the server's own host is what the server's trust covers.
    Any other host is looked up now (within CRAWL_DNS_TIMEOUT) and refused if any address it resolves to
    is one the guard forbids; a name that does not resolve now is left to the guard at each fetch, which
    refuses it then if it ever resolves to such an address.
    """
    if not url or server.serves(url):
        return None
    found = resolve_checked(url, method="GET", check=None, dns_timeout=settings.CRAWL_DNS_TIMEOUT)
    if isinstance(found, FetchResult):
        return None
    guard = address_guard()
    addresses, _ms = found
    return REFUSED if any(guard(ip) is not None for ip in addresses) else None


def nameserver_refusal(*, text: str) -> str | None:
    """Why a DNS monitor may not ask the nameserver `text` ("ip[:port]"), or None (empty: the system's).
    Guarded like every address the monitor contacts, whatever the server's trust: that covers the server's
    own host, and a nameserver is any address and UDP port an operator types."""
    from ..kinds.dns import DnsSpecError, nameserver_parse

    try:
        found = nameserver_parse(text or "")
    except DnsSpecError as exc:
        return str(exc)
    if found is None:
        return None
    return REFUSED if address_guard()(found[0]) is not None else None


def content_refusal(*, url: str, server: Server, has_rule: bool) -> str | None:
    """Why a content rule may not be set on this monitor (CONTENT_UNTRUSTED), or None."""
    if not has_rule or url_trusted(url or f"{server.origin}/", server):
        return None
    return CONTENT_UNTRUSTED
