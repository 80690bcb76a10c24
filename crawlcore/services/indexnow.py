"""The IndexNow receiver: a site pushes the URLs that changed, and each becomes due at once.

The protocol (indexnow.org): a push names a host, a key and URLs; the key proves the push comes from the site,
since only the site can publish `https?://HOST/KEY.txt` holding the key (or the file `keyLocation` names on
that host). We fetch that file through the crawl's guarded fetcher (a site nobody vouched for may not make us
reach a private address) and remember a key once found for KEY_TRUSTED, so a site pushing often costs it one
request a day. Answers, as the protocol has them: 200 accepted, 400 a malformed push, 403 the key file does not
hold the key, 422 a URL not of the host or of no site we crawl, 429 too many pushes from the site.

Accepted URLs: a known page is marked pushed (Url.pushed_at) and, if Visited, sent to the active scan now
(within its server's freshness budget, crawlcore.services.freshness_choice); a new URL of the site is inserted
for the load agent, due now.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from django.db.models import F, Q
from django.utils import timezone

from crawlcore.models import IndexNowSite, Server, Url
from crawler.lifecycle import Agent, State
from crawler.urlnorm import UrlError, canonicalize, server_key, url_hash

from .freshness_choice import budget_left, within_budget
from .sweep import scan_send
from .urls import NewUrl, urls_insert
from .visit import address_check_for, thread_fetcher

KEY = re.compile(r"^[A-Za-z0-9-]{8,128}$")
MAX_URLS = 10_000
KEY_TRUSTED = timedelta(days=1)
WINDOW = timedelta(minutes=1)
PUSHES_PER_WINDOW = 30  # per site: a site that pushes every change of a busy page is still heard every 2 s


@dataclass(frozen=True)
class Answer:
    status: int
    message: str
    accepted: int = 0


def _refused(status: int, message: str) -> Answer:
    return Answer(status, message)


def _urls_of(host: str | None, urls: object) -> tuple[list[str], Answer | None]:
    """The pushed URLs, canonical, all of one host (the push's `host` when it names one)."""
    if not isinstance(urls, list) or not urls or len(urls) > MAX_URLS:
        return [], _refused(400, f"urlList must be a list of 1 to {MAX_URLS} URLs")
    out = []
    for raw in urls:
        try:
            url = canonicalize(raw) if isinstance(raw, str) else None
        except UrlError:
            url = None
        if url is None or urlsplit(url).scheme not in ("http", "https"):
            return [], _refused(400, f"not an http(s) URL: {str(raw)[:200]!r}")
        out.append(url)
    hosts = {urlsplit(u).hostname for u in out}
    if len(hosts) > 1 or (host is not None and hosts != {str(host).lower().strip()}):
        return [], _refused(422, "every URL must be on the host the push names")
    return out, None


def _rate_limited(server: Server, *, now: datetime) -> bool:
    """Count the push in the site's window (a new window when the last one is over); True when over the limit."""
    IndexNowSite.objects.get_or_create(server=server)
    over = Q(window_at__isnull=True) | Q(window_at__lte=now - WINDOW)
    fresh = IndexNowSite.objects.filter(over, server=server)
    if fresh.update(window_at=now, window_count=1):
        return False
    counted = IndexNowSite.objects.filter(server=server, window_count__lt=PUSHES_PER_WINDOW)
    return counted.update(window_count=F("window_count") + 1) == 0


def _key_holds(server: Server, key: str, location: str | None, *, now: datetime) -> bool:
    """Whether the site's key file holds `key`: remembered for KEY_TRUSTED, else fetched (guarded) once."""
    site = IndexNowSite.objects.get(server=server)
    if site.key == key and site.verified_at and site.verified_at > now - KEY_TRUSTED:
        return True
    url = f"{server.origin}/{key}.txt"
    if location:
        try:
            candidate = canonicalize(location)
        except UrlError:
            return False
        if not server.serves(candidate):
            return False  # a key file elsewhere proves nothing about this site
        url = candidate
    result = thread_fetcher("threads").fetch(url, address_check=address_check_for(server))
    body = (result.body or b"")[:1024].decode("utf-8", errors="replace").strip()
    if result.status != 200 or body.splitlines()[:1] != [key]:
        return False
    IndexNowSite.objects.filter(server=server).update(key=key, verified_at=now)
    return True


def _server_of(url: str) -> Server | None:
    key = server_key(url)
    return Server.objects.filter(scheme=key.scheme, host=key.host, port=key.port).first()


def indexnow_push(*, host: str | None, key: object, urls: object, key_location: str | None = None,
                  now: datetime | None = None) -> Answer:  # fmt: skip
    """Receive one push (the POST's host, key, urlList and keyLocation; a GET's url and key with host None)."""
    now = now or timezone.now()
    if not isinstance(key, str) or not KEY.match(key):
        return _refused(400, "key must be 8 to 128 letters, digits or dashes")
    pushed, problem = _urls_of(host, urls)
    if problem is not None:
        return problem
    server = _server_of(pushed[0])
    if server is None or any(not server.serves(u) for u in pushed):
        return _refused(422, "a URL of no site this crawler crawls")
    if _rate_limited(server, now=now):
        return _refused(429, "too many pushes from this site; try again in a minute")
    if not _key_holds(server, key, key_location, now=now):
        return _refused(403, f"the key file on {server.origin} does not hold this key")
    return Answer(200, "accepted", accepted=urls_pushed(server=server, urls=pushed, now=now))


def urls_pushed(*, server: Server, urls: list[str], now: datetime) -> int:
    """Make each pushed URL due now: known ones marked pushed (Visited ones sent to the active scan within the
    server's budget), new ones inserted for the load agent. How many URLs were taken."""
    hashes = {url_hash(u): u for u in urls}
    known = Url.objects.filter(url_hash__in=list(hashes))
    known.update(pushed_at=now)
    seen = set(known.values_list("url_hash", flat=True))
    new = [NewUrl(u, depth=0) for h, u in hashes.items() if h not in seen]
    if new:
        urls_insert(urls=new, trusted=server.trusted)
    visited = list(known.filter(state=State.VISITED.value, exclusion_reason="").values_list("id", flat=True))
    scan_send(agent=Agent.ACTIVE_SCAN, ids=within_budget(visited, left=budget_left(now=now)), now=now)
    return len(hashes)
