"""Deterministic model of the local test web (pure: no sockets, no clock).

Everything a server answers is computed here from a :class:`SiteSpec` and the
port, so a test can ask the model what the crawler *should* find
(:meth:`Web.expected`) without touching the network, and two runs with the same
spec serve byte-identical pages.

Layout (``B = spec.first_octet``, ``N = spec.n_servers``):

* ``127.0.0.B .. 127.0.0.B+N-1`` -- normal servers: ``/``, ``/p/<k>.html``,
  ``/private/<k>.html`` (disallowed by robots.txt), ``/missing.html`` (404),
  ``/old.html`` (301 -> ``/p/0.html``), ``/loop-a`` <-> ``/loop-b`` (302 loop),
  ``/list?a=1&b=2`` (linked with its parameters in both orders).
  Server 0 also has ``/changing.html`` (see :meth:`Web.change`) and links to
  the two special servers.
* ``127.0.0.B+N`` -- slow server (``/`` and ``/s/<k>.html``), if enabled.
* ``127.0.0.B+N+1`` -- silent server (accepts TCP, never answers), if enabled.
"""

from __future__ import annotations

import hashlib
import html
import posixpath
import random
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from email.utils import formatdate, parsedate_to_datetime
from html.parser import HTMLParser
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

USER_AGENT = "crawladmin"  # the agent expected() evaluates robots.txt for

# Fixed epoch for Last-Modified so headers never depend on the wall clock.
_EPOCH = 1_700_000_000

_WORDS = (
    "alpha beta gamma delta crawler index archive harbor lantern meadow orbit "
    "pixel quartz river signal timber umbrella velvet willow yonder zephyr "
    "amber basalt cobalt dune ember fjord glacier horizon island jasper kelp "
    "lagoon mosaic nebula oasis prairie quiver ridge summit tundra valley"
).split()

Response = tuple[int, dict[str, str], bytes]


@dataclass(frozen=True)
class SiteSpec:
    n_servers: int = 5  # normal servers (plus the special ones below)
    pages_per_server: int = 30
    links_per_page: int = 6  # outgoing links per page (mix of on-site and off-site)
    offsite_share: float = 0.2  # share of links pointing to another normal server
    seed: int = 1  # RNG seed: same spec -> same web, byte for byte
    first_octet: int = 10  # servers live on 127.0.0.<first_octet + i>
    silent_server: bool = True  # one extra server that accepts TCP and never answers
    slow_server: bool = True  # one extra server that answers every request after slow_delay seconds
    slow_delay: float = 0.3
    slow_pages: int = 5
    crawl_delay: float | None = None  # a Crawl-delay line in the normal servers' robots.txt

    def __post_init__(self) -> None:
        if self.n_servers < 1:
            raise ValueError("n_servers must be >= 1")
        if self.pages_per_server < 1:
            raise ValueError("pages_per_server must be >= 1")
        last = self.first_octet + self.n_servers + 1
        if not 1 <= self.first_octet or last > 254:
            raise ValueError("servers must fit in 127.0.0.1 .. 127.0.0.254")


def canonical_url(url: str) -> str:
    """The URL form used by :meth:`Web.expected`.

    ``scheme://host:port/path?sorted-query`` -- lowercase scheme and host, the
    port always explicit, empty path -> ``/``, query parameters sorted by
    (name, value), fragment removed.  E.g. ``http://127.0.0.10:8000/list?b=2&a=1#x``
    becomes ``http://127.0.0.10:8000/list?a=1&b=2``.
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    port = parts.port or (443 if scheme == "https" else 80)
    query = urlencode(sorted(parse_qsl(parts.query, keep_blank_values=True)))
    return urlunsplit((scheme, f"{host}:{port}", parts.path or "/", query, ""))


class _LinkParser(HTMLParser):
    """Collects <a href> values, the same links a crawler would follow."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            for name, value in attrs:
                if name == "href" and value is not None:
                    self.hrefs.append(value)


def extract_links(base_url: str, body: bytes) -> list[str]:
    """Absolute URLs of all <a href> links in ``body``, resolved against ``base_url``."""
    parser = _LinkParser()
    parser.feed(body.decode("utf-8", "replace"))
    parser.close()
    return [urljoin(base_url, href) for href in parser.hrefs]


@dataclass(frozen=True)
class _Link:
    target: str  # absolute canonical target URL
    text: str
    form: str  # "abs" | "root" | "rel"
    fragment: str = ""


class Web:
    """The deterministic model of all pages of one test web on one port."""

    SILENT_PATHS = ("/", "/a.html", "/b.html")  # links pointing at the silent server
    PRIVATE_PAGES = 3

    def __init__(self, spec: SiteSpec, port: int) -> None:
        self.spec = spec
        self.port = port
        # Only mutable state: per-URL version counters bumped by change().
        self._versions: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ hosts
    def normal_hosts(self) -> list[str]:
        s = self.spec
        return [f"127.0.0.{s.first_octet + i}" for i in range(s.n_servers)]

    @property
    def slow_host(self) -> str | None:
        s = self.spec
        return f"127.0.0.{s.first_octet + s.n_servers}" if s.slow_server else None

    @property
    def silent_host(self) -> str | None:
        s = self.spec
        return f"127.0.0.{s.first_octet + s.n_servers + 1}" if s.silent_server else None

    def hosts(self) -> list[str]:
        """All server IPs, normal ones first, then slow, then silent (if enabled)."""
        extra = [h for h in (self.slow_host, self.silent_host) if h]
        return self.normal_hosts() + extra

    def seeds(self) -> list[str]:
        return [self.url(h, "/") for h in self.normal_hosts()]

    def url(self, host: str, path: str) -> str:
        return f"http://{host}:{self.port}{path}"

    def is_silent(self, host: str) -> bool:
        return host == self.silent_host

    def delay(self, host: str) -> float:
        """Seconds the server for ``host`` waits before answering."""
        return self.spec.slow_delay if host == self.slow_host else 0.0

    def _server_index(self, host: str) -> int | None:
        hosts = self.normal_hosts()
        return hosts.index(host) if host in hosts else None

    def _rng(self, *parts: object) -> random.Random:
        # String seeds are hashed with SHA-512 by random, so this is stable
        # across processes regardless of PYTHONHASHSEED.
        return random.Random(":".join(str(p) for p in (self.spec.seed, *parts)))

    # ----------------------------------------------------------------- robots
    def robots_txt(self, host: str) -> str:
        if host == self.slow_host:
            return "User-agent: *\nDisallow:\n"
        delay = "" if self.spec.crawl_delay is None else f"Crawl-delay: {self.spec.crawl_delay:g}\n"
        return f"User-agent: *\nDisallow: /private/\n{delay}"

    def allowed(self, host: str, path: str) -> bool:
        """robots.txt verdict for :data:`USER_AGENT` (all our rules are for ``*``)."""
        if path == "/robots.txt":
            return True
        for line in self.robots_txt(host).splitlines():
            key, _, value = line.partition(":")
            value = value.strip()
            if key.strip().lower() == "disallow" and value and path.startswith(value):
                return False
        return True

    # ---------------------------------------------------------------- changes
    def version(self, host: str, path: str) -> int:
        with self._lock:
            return self._versions.get((host, path), 0)

    def change(self, url: str) -> int:
        """Bump the version of the page at ``url``; returns the new version.

        Meant for ``/changing.html`` on server 0, but works for any 200 page
        so tests can simulate edits anywhere.  Body, ETag and Last-Modified
        all change.
        """
        parts = urlsplit(url)
        host, path = (parts.hostname or ""), (parts.path or "/")
        if parts.query:
            path += "?" + parts.query
        if self.is_silent(host) or host not in self.hosts():
            raise ValueError(f"not a page of this web: {url}")
        status, _, _ = self._page(host, path)
        if status != 200:
            raise ValueError(f"not a changeable page (status {status}): {url}")
        key = (host, urlsplit(path).path)
        with self._lock:
            self._versions[key] = self._versions.get(key, 0) + 1
            return self._versions[key]

    # --------------------------------------------------------------- response
    def response(self, host: str, path: str, method: str, headers: Mapping[str, str] | None = None) -> Response:
        """(status, headers, body) for a request; ``path`` may carry a query.

        HEAD gets the GET headers (including Content-Length) and an empty body.
        ``headers`` (request headers, optional) enables conditional requests:
        If-None-Match / If-Modified-Since give 304.
        Raises ValueError for the silent server, which has no response at all.
        """
        if self.is_silent(host):
            raise ValueError("the silent server never answers")
        method = method.upper()
        if method not in ("GET", "HEAD"):
            status, hdrs, body = self._html(405, "Method not allowed", "<p>Only GET and HEAD.</p>")
            hdrs["Allow"] = "GET, HEAD"
        else:
            status, hdrs, body = self._page(host, path)
            if status == 200 and headers is not None and _not_modified(hdrs, headers):
                # 304 keeps validators but has no body / Content-Length.
                keep = ("ETag", "Last-Modified")
                return 304, {k: v for k, v in hdrs.items() if k in keep}, b""
        if method == "HEAD":
            body = b""
        return status, hdrs, body

    def _page(self, host: str, raw_path: str) -> Response:
        parts = urlsplit(raw_path)
        path, query = parts.path or "/", parts.query
        if path == "/robots.txt":
            body = self.robots_txt(host).encode()
            return 200, {"Content-Type": "text/plain; charset=utf-8", "Content-Length": str(len(body))}, body
        if host == self.slow_host:
            return self._slow_page(host, path)
        idx = self._server_index(host)
        if idx is None:
            return self._not_found()
        simple_redirects = {"/old.html": (301, "/p/0.html"), "/loop-a": (302, "/loop-b"), "/loop-b": (302, "/loop-a")}
        if path in simple_redirects:
            status, target = simple_redirects[path]
            # /old.html uses an absolute Location, the loop a relative one, so
            # both forms get exercised.
            location = self.url(host, target) if status == 301 else target
            return self._redirect(status, location)
        if path == "/":
            return self._finish(host, path, self._home(idx, host))
        if path == "/list":
            return self._finish(host, path, self._list_page(host, query))
        if path == "/changing.html" and idx == 0:
            return self._finish(host, path, self._changing_page(host))
        k = _page_number(path, "/p/")
        if k is not None and k < self.spec.pages_per_server:
            return self._finish(host, path, self._content_page(idx, host, k))
        k = _page_number(path, "/private/")
        if k is not None and k < self.PRIVATE_PAGES:
            return self._finish(host, path, self._private_page(host, k))
        return self._not_found()

    # ----------------------------------------------------------- page bodies
    def _finish(self, host: str, path: str, page: tuple[str, str, str, list[_Link]]) -> Response:
        title, desc, text, links = page
        version = self.version(host, path)
        if version:
            text += f" Revision {version}."
        body = _render(title, desc, text, [(self._href(host, path, link), link.text) for link in links])
        last_modified = _EPOCH + _stable_int(self.spec.seed, host, path) % 86_400 + version * 3600
        return (
            200,
            {
                "Content-Type": "text/html; charset=utf-8",
                "Content-Length": str(len(body)),
                "ETag": '"' + hashlib.sha1(body).hexdigest()[:16] + '"',
                "Last-Modified": formatdate(last_modified, usegmt=True),
            },
            body,
        )

    def _href(self, host: str, from_path: str, link: _Link) -> str:
        """Write ``link`` the way a real page might: absolute, root-relative or relative."""
        t = urlsplit(link.target)
        suffix = ("?" + t.query if t.query else "") + ("#" + link.fragment if link.fragment else "")
        if t.hostname != host or link.form == "abs":
            return urlunsplit((t.scheme, t.netloc, t.path, t.query, link.fragment))
        if link.form == "root":
            return t.path + suffix
        base_dir = posixpath.dirname(from_path) or "/"
        rel = posixpath.relpath(t.path, base_dir)
        if t.path.endswith("/") and rel != ".":
            rel += "/"
        return ("./" if rel == "." else rel) + suffix

    def _text(self, rng: random.Random, n: int) -> str:
        words = [rng.choice(_WORDS) for _ in range(n)]
        return " ".join(words).capitalize() + "."

    def _link(self, rng: random.Random, host: str, path: str, text: str, form: str | None = None) -> _Link:
        form = form or rng.choice(("abs", "root", "rel"))
        fragment = f"section-{rng.randint(1, 3)}" if rng.random() < 0.15 else ""
        return _Link(self.url(host, path), text, form, fragment)

    def _specials(self, idx: int) -> dict[str, list[int]]:
        """Which content pages of server ``idx`` carry the special links.

        ``-1`` means the home page.  Chosen per server from the seed, so the
        broken link, redirects, loop, private and query links move around.
        """
        rng = self._rng("specials", idx)
        pages = list(range(self.spec.pages_per_server))
        pick = lambda n: sorted(rng.sample(pages, min(n, len(pages))))  # noqa: E731
        specials = {
            "missing": pick(1),
            "old": pick(1),
            "loop": pick(1),
            "private": pick(self.PRIVATE_PAGES - 1),
            "list_ba": pick(1),
            "list_ab": pick(1),
        }
        if idx == 0:
            specials["silent"] = [-1] + pick(2)
        return specials

    def _special_links(self, idx: int, host: str, k: int) -> list[_Link]:
        rng = self._rng("speciallinks", idx, k)
        sp = self._specials(idx)
        links: list[_Link] = []
        if k in sp["missing"]:
            links.append(self._link(rng, host, "/missing.html", "An old article"))
        if k in sp["old"]:
            links.append(self._link(rng, host, "/old.html", "Previous start page"))
        if k in sp["loop"]:
            links.append(self._link(rng, host, "/loop-a", "Round and round"))
        for n, page in enumerate(sp["private"]):
            if page == k:
                links.append(self._link(rng, host, f"/private/{n}.html", f"Private {n}"))
        if k in sp["private"][:1]:
            # One page links to every private page beyond the per-page ones,
            # so all PRIVATE_PAGES are linked (and must all stay unfetched).
            links.append(self._link(rng, host, f"/private/{self.PRIVATE_PAGES - 1}.html", "Staff only"))
        if k in sp["list_ba"]:
            links.append(_Link(self.url(host, "/list?b=2&a=1"), "List (b, a)", "root"))
        if k in sp["list_ab"]:
            links.append(_Link(self.url(host, "/list?a=1&b=2"), "List (a, b)", "rel", "top"))
        silent = self.silent_host
        if silent and k in sp.get("silent", []):
            for n, page in enumerate(sp["silent"]):
                if page == k:
                    links.append(_Link(self.url(silent, self.SILENT_PATHS[n]), "Quiet mirror", "abs"))
        return links

    def _home(self, idx: int, host: str) -> tuple[str, str, str, list[_Link]]:
        rng = self._rng("home", idx)
        n = self.spec.pages_per_server
        links = [self._link(rng, host, f"/p/{k}.html", f"Page {k}") for k in range(min(2, n))]
        for k in sorted(rng.sample(range(n), min(2, n))):
            links.append(self._link(rng, host, f"/p/{k}.html", f"Featured {k}"))
        if idx == 0:
            links.append(self._link(rng, host, "/changing.html", "News (changes)"))
            if self.slow_host:
                links.append(_Link(self.url(self.slow_host, "/"), "Slow mirror", "abs"))
        links += self._special_links(idx, host, -1)
        title = f"Test web server {idx}"
        return title, f"Home page of {title}", self._text(rng, 30), links

    def _content_page(self, idx: int, host: str, k: int) -> tuple[str, str, str, list[_Link]]:
        rng = self._rng("page", idx, k)
        s = self.spec
        n = s.pages_per_server
        # Binary tree (k -> 2k+1, 2k+2) guarantees every page is reachable
        # from /p/0.html whatever the random links do.
        links = [self._link(rng, host, f"/p/{c}.html", f"Page {c}") for c in (2 * k + 1, 2 * k + 2) if c < n]
        others = [h for h in self.normal_hosts() if h != host]
        while len(links) < s.links_per_page:
            if others and rng.random() < s.offsite_share:
                other = rng.choice(others)
                links.append(_Link(self.url(other, f"/p/{rng.randrange(n)}.html"), f"Elsewhere {other}", "abs"))
            else:
                c = rng.randrange(n)
                links.append(self._link(rng, host, f"/p/{c}.html", f"See page {c}"))
        links += self._special_links(idx, host, k)
        title = f"Server {idx} page {k}: {rng.choice(_WORDS)} {rng.choice(_WORDS)}"
        return title, f"Page {k} of test server {idx}", self._text(rng, 40), links

    def _list_page(self, host: str, query: str) -> tuple[str, str, str, list[_Link]]:
        # The body depends only on the *sorted* parameters, so both orders are
        # genuinely the same resource.
        params = sorted(parse_qsl(query, keep_blank_values=True))
        rng = self._rng("list", host, params)
        shown = ", ".join(f"{k}={v}" for k, v in params) or "none"
        links = [self._link(rng, host, "/", "Home"), self._link(rng, host, "/p/0.html", "Page 0")]
        return "Listing", f"Listing with parameters {shown}", f"Parameters: {shown}.", links

    def _changing_page(self, host: str) -> tuple[str, str, str, list[_Link]]:
        rng = self._rng("changing")
        links = [self._link(rng, host, "/", "Home")]
        return "News", "A page that changes on demand", self._text(rng, 20), links

    def _private_page(self, host: str, k: int) -> tuple[str, str, str, list[_Link]]:
        return f"Private {k}", "Disallowed by robots.txt", "Crawlers must not fetch this page.", []

    def _slow_page(self, host: str, path: str) -> Response:
        n = self.spec.slow_pages
        rng = self._rng("slow", path)
        if path == "/":
            links = [self._link(rng, host, f"/s/{k}.html", f"Slow {k}") for k in range(n)]
            return self._finish(host, path, ("Slow server", "Answers slowly", self._text(rng, 20), links))
        k = _page_number(path, "/s/")
        if k is None or k >= n:
            return self._not_found()
        links = [self._link(rng, host, "/", "Home")]
        if k + 1 < n:
            links.append(self._link(rng, host, f"/s/{k + 1}.html", f"Slow {k + 1}"))
        return self._finish(host, path, (f"Slow {k}", f"Slow page {k}", self._text(rng, 20), links))

    def _html(self, status: int, title: str, inner: str) -> Response:
        body = (
            f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{title}</title></head><body><h1>{title}</h1>{inner}</body></html>\n"
        ).encode()
        return status, {"Content-Type": "text/html; charset=utf-8", "Content-Length": str(len(body))}, body

    def _not_found(self) -> Response:
        return self._html(404, "Not found", "<p>No such page.</p>")

    def _redirect(self, status: int, location: str) -> Response:
        inner = f'<p>Moved to <a href="{html.escape(location)}">{html.escape(location)}</a>.</p>'
        status, hdrs, body = self._html(status, "Moved", inner)
        hdrs["Location"] = location
        return status, hdrs, body

    # --------------------------------------------------------------- expected
    def expected(self, seeds: list[str] | None = None) -> dict[str, str]:
        """What a correct crawl starting at ``seeds`` (default: :meth:`seeds`) finds.

        Keys are canonical URLs as produced by :func:`canonical_url`, i.e.
        exactly ``scheme://host:port/path?sorted-query`` without fragment
        (``http://127.0.0.10:8000/list?a=1&b=2``).  Values:

        * ``"visited"``  -- answers 2xx or 3xx (a redirect's target is followed too)
        * ``"failed"``   -- answers 4xx/5xx, or lives on the silent server
        * ``"excluded"`` -- disallowed by robots.txt for ``crawladmin``

        Links of failed/excluded pages are not followed.  Links are found
        by parsing the very HTML the servers send, so model and wire agree.
        """
        queue = [canonical_url(u) for u in (seeds if seeds is not None else self.seeds())]
        result: dict[str, str] = {}
        while queue:
            url = queue.pop(0)
            if url in result:
                continue
            outcome, next_urls = self._classify(url)
            result[url] = outcome
            queue.extend(canonical_url(u) for u in next_urls if canonical_url(u) not in result)
        return result

    def _classify(self, url: str) -> tuple[str, list[str]]:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if parts.port != self.port or host not in self.hosts() or self.is_silent(host):
            return "failed", []
        path = parts.path + ("?" + parts.query if parts.query else "")
        if not self.allowed(host, parts.path):
            return "excluded", []
        status, headers, body = self.response(host, path, "GET")
        if 300 <= status < 400:
            return "visited", [urljoin(url, headers["Location"])]
        if 200 <= status < 300:
            return "visited", extract_links(url, body)
        return "failed", []


def _page_number(path: str, prefix: str) -> int | None:
    """``/p/12.html`` -> 12 for prefix ``/p/``; None if it doesn't match."""
    if not (path.startswith(prefix) and path.endswith(".html")):
        return None
    digits = path[len(prefix) : -len(".html")]
    return int(digits) if digits.isdigit() and str(int(digits)) == digits else None


def _stable_int(*parts: object) -> int:
    return int(hashlib.sha1(":".join(map(str, parts)).encode()).hexdigest()[:8], 16)


def _render(title: str, desc: str, text: str, links: list[tuple[str, str]]) -> bytes:
    items = "\n".join(f'    <li><a href="{html.escape(href)}">{html.escape(label)}</a></li>' for href, label in links)
    page = f"""<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>{html.escape(title)}</title>
  <meta name="description" content="{html.escape(desc)}">
</head>
<body>
  <h1 id="top">{html.escape(title)}</h1>
  <p>{html.escape(text)}</p>
  <ul>
{items}
  </ul>
</body>
</html>
"""
    return page.encode("utf-8")


def _not_modified(response_headers: Mapping[str, str], request_headers: Mapping[str, str]) -> bool:
    req = {k.lower(): v for k, v in request_headers.items()}
    etag = response_headers.get("ETag", "")
    inm = req.get("if-none-match")
    if inm is not None:
        # If-None-Match wins over If-Modified-Since (RFC 9110 13.2.2).
        return inm.strip() == "*" or etag in [t.strip().removeprefix("W/") for t in inm.split(",")]
    ims = req.get("if-modified-since")
    if ims:
        try:
            since = parsedate_to_datetime(ims).timestamp()
            modified = parsedate_to_datetime(response_headers["Last-Modified"]).timestamp()
        except (TypeError, ValueError, KeyError):
            return False
        return modified <= since
    return False
