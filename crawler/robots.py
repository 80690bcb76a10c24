"""robots.txt policy (RFC 9309) on top of protego.

``RobotsRules`` is a small immutable value that can be cached in the database
as (kind, text) and rebuilt cheaply; the parsed protego object is memoised
per text because ``allowed()`` is called for every URL we consider.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urljoin

from protego import Protego

from .sanitize import clean_text

__all__ = [
    "ALLOW_ALL",
    "DISALLOW_ALL",
    "MAX_ROBOTS_BYTES",
    "PARSED",
    "RobotsRules",
    "product_token",
    "robots_text",
    "rules_from_response",
    "rules_from_text",
    "sitemap_urls",
]

PARSED = "parsed"
ALLOW_ALL = "allow_all"
DISALLOW_ALL = "disallow_all"

# Google ignores everything after the first 500 KiB; RFC 9309 asks for >= 500 KiB.
MAX_ROBOTS_BYTES = 500 * 1024

# RFC 9309 product token: letters, "_" and "-".
_PRODUCT_TOKEN_RE = re.compile(r"[A-Za-z_-]+")


@lru_cache(maxsize=512)
def _parser(text: str) -> Protego:
    # str caches its hash, so repeated lookups with the same object are O(1).
    return Protego.parse(text)


def product_token(user_agent: str) -> str:
    """The name robots.txt groups match: "crawladmin/0.1 (+http://x)" -> "crawladmin"."""
    match = _PRODUCT_TOKEN_RE.match(user_agent.strip())
    return match.group(0) if match else ""


@dataclass(frozen=True)
class RobotsRules:
    kind: str  # PARSED | ALLOW_ALL | DISALLOW_ALL
    text: str = ""

    def allowed(self, url: str, user_agent: str) -> bool:
        if self.kind == ALLOW_ALL:
            return True
        if self.kind == DISALLOW_ALL:
            return False
        # Match on the product token so a full UA string behaves like the bare
        # name; an empty token only matches the "*" group.
        token = product_token(user_agent) or "*"
        return _parser(self.text).can_fetch(url, token)

    def crawl_delay(self, user_agent: str) -> float | None:
        if self.kind != PARSED:
            return None
        delay = _parser(self.text).crawl_delay(product_token(user_agent) or "*")
        return None if delay is None else float(delay)


def robots_text(body: bytes) -> str:
    """The text of a robots.txt body, as stored and parsed. RFC 9309 §2.2: the file is UTF-8, and a
    crawler parses every line it can and uses the rules it could parse. So bytes that are not UTF-8
    become U+FFFD (their lines then match nothing), a byte-order mark is dropped, and NUL and the other
    control characters (which no rule contains, and which the database can't store) are removed. A file
    saved as UTF-16 says so with its byte-order mark: it is decoded as UTF-16, which is what its author
    wrote, rather than read as UTF-8 with a NUL between every two letters."""
    body = body[:MAX_ROBOTS_BYTES]
    if body[:2] in (b"\xff\xfe", b"\xfe\xff"):
        text = body.decode("utf-16", errors="replace")
    else:
        text = body.decode("utf-8", errors="replace").removeprefix("\ufeff")
    return clean_text(text.removeprefix("\ufeff"), MAX_ROBOTS_BYTES)


def rules_from_text(text: str) -> RobotsRules:
    """Rebuild rules from a stored robots.txt body (always kind "parsed")."""
    # The cap is in bytes upstream; chars are >= bytes/4, so this is a safe bound
    # for text that never went through rules_from_response.
    return RobotsRules(kind=PARSED, text=text[:MAX_ROBOTS_BYTES])


def rules_from_response(status: int | None, body: bytes) -> RobotsRules:
    """Map a robots.txt fetch result to rules, per RFC 9309 section 2.3.1."""
    if status is None or status >= 500:
        # Unreachable / server error: assume complete disallow.
        return RobotsRules(kind=DISALLOW_ALL)
    if 200 <= status < 300:
        return RobotsRules(kind=PARSED, text=robots_text(body))
    # 4xx ("unavailable") means no restrictions; 3xx should have been followed
    # by the caller, and 1xx is nonsense here - neither should block crawling.
    return RobotsRules(kind=ALLOW_ALL)


def sitemap_urls(*, rules: RobotsRules, base: str) -> list[str]:
    """The `Sitemap:` lines of a parsed robots.txt, made absolute against `base` (the robots.txt URL),
    http(s) only, in order, each once."""
    if rules.kind != PARSED:
        return []
    out: dict[str, None] = {}
    for line in _parser(rules.text).sitemaps:
        url = urljoin(base, line.strip())
        if url.lower().startswith(("http://", "https://")):
            out[url] = None
    return list(out)
