"""URL canonicalisation for the crawler.

Every URL the crawler stores or deduplicates goes through :func:`canonicalize`
so that trivially different spellings of the same resource ("HTTP://Example.com:80"
vs "http://example.com/") map to one row.  The heavy lifting (query sorting,
percent-encoding normalisation, IDNA, dot segments) is done by
``w3lib.url.canonicalize_url``; this module adds the policy on top: which
schemes we accept, default-port removal, length limits and error reasons.
"""

from __future__ import annotations

import binascii
import functools
import hashlib
import re
from dataclasses import dataclass
from urllib.parse import SplitResult, urljoin, urlsplit, urlunsplit

from w3lib.url import canonicalize_url

__all__ = [
    "MAX_URL_LENGTH",
    "URL_KEY_LENGTH",
    "ServerKey",
    "UrlError",
    "canonical_cache_clear",
    "canonicalize",
    "server_key",
    "url_hash",
]

MAX_URL_LENGTH = 2048
MAX_HOST_LENGTH = 253  # a DNS name's limit
URL_KEY_LENGTH = 24  # characters of url_hash: the base64 of 18 bytes
CANONICAL_CACHE_SIZE = 32768

ALLOWED_SCHEMES = frozenset({"http", "https"})
DEFAULT_PORTS = {"http": 80, "https": 443}

# Browsers silently drop ASCII tab and newlines anywhere in a URL (WHATWG URL
# spec), and pages in the wild contain hrefs broken over several lines.
_STRIP_CHARS_RE = re.compile(r"[\t\n\r]")

# After IDNA encoding a registered name is plain ASCII.  Underscores are not
# valid in hostnames but common in real subdomains, so we accept them.
# RFC 3986 scheme; its presence makes a reference absolute.
_SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")

_LABEL_RE = re.compile(r"^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$")


class UrlError(ValueError):
    """A URL the crawler refuses to handle.

    ``reason`` is a short machine-readable code used for statistics:
    "scheme", "no_host", "too_long" or "malformed".
    """

    def __init__(self, reason: str, url: str) -> None:
        # Truncate the URL in the message: rejected URLs can be megabytes long.
        super().__init__(f"{reason}: {url[:200]!r}")
        self.reason = reason
        self.url = url


def _clean(url: str) -> str:
    return _STRIP_CHARS_RE.sub("", url.strip())


def _check_length(url: str) -> None:
    if len(url) > MAX_URL_LENGTH:
        raise UrlError("too_long", url)


def _join(base: str, url: str) -> str:
    # Only join relative references: urljoin("http://h/p", "http://") would
    # silently return the base instead of failing on the empty host.
    if _SCHEME_RE.match(url):
        return url
    if url.startswith("/") and not url.startswith("//") and "/." not in url:
        # The common case, an absolute path without dot segments: the base's origin plus the path, which
        # is what urljoin would return (dot segments are left to urljoin: it removes them its own way).
        origin = _origin_of(base)
        if origin is not None:
            return origin + url
    try:
        return urljoin(_clean(base), url)
    except ValueError as exc:  # e.g. "//[::1/x": unbalanced IPv6 brackets
        raise UrlError("malformed", url) from exc


@functools.lru_cache(maxsize=256)  # a page's links all share its base: one scan per page, not per link
def _origin_of(base: str) -> str | None:
    """'scheme://authority' of an absolute URL without tabs or newlines; None when it isn't one."""
    start = base.find("://")
    if start <= 0 or not _SCHEME_RE.match(base) or _STRIP_CHARS_RE.search(base):
        return None
    end = len(base)
    for stop in "/?#":
        at = base.find(stop, start + 3)
        if 0 <= at < end:
            end = at
    return base[:end]


def _split_checked(url: str) -> SplitResult:
    """urlsplit plus the scheme/host/port validation we need."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a non-numeric/out-of-range port
    except ValueError as exc:
        raise UrlError("malformed", url) from exc
    scheme = parts.scheme.lower()
    if not scheme:
        # A relative reference without a base: we cannot know what it means.
        raise UrlError("malformed", url)
    if scheme not in ALLOWED_SCHEMES:
        raise UrlError("scheme", url)
    if not parts.hostname:
        raise UrlError("no_host", url)
    return parts


def _valid_hostname(host: str) -> bool:
    """DNS-shaped host check; w3lib passes garbage like "a..b" or "x y" through."""
    if ":" in host:  # IPv6 literal; urlsplit already validated the brackets.
        return True
    if len(host) > MAX_HOST_LENGTH:
        return False
    return all(_LABEL_RE.match(label) for label in host.split("."))


def _normalise_netloc(url: str) -> str:
    """Drop a default port and a trailing root dot from the host, and any user name and password.

    "example.com." names the same DNS host as "example.com"; keeping both would
    give one server two politeness queues. Credentials in a link (user and password before the host) are never part
    of a URL's identity nor sent on: kept, they made a second copy of the whole site, fetched with them.
    """
    parts = urlsplit(url)
    port = parts.port
    _userinfo, _, hostport = parts.netloc.rpartition("@")
    host = hostport
    if port is not None or hostport.endswith(":"):
        host = hostport.rsplit(":", 1)[0]
    if not host.startswith("["):
        host = host.removesuffix(".")
        if not _valid_hostname(host):
            raise UrlError("malformed", url)
    netloc = host
    if port is not None and port != DEFAULT_PORTS[parts.scheme]:
        netloc = f"{host}:{port}"
    if netloc == parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=netloc))


def canonicalize(url: str, base: str | None = None) -> str:
    """Return the canonical absolute form of ``url`` (resolved against ``base``).

    Raises :class:`UrlError` for anything that is not a fetchable http(s) URL.
    The result is idempotent: ``canonicalize(canonicalize(u)) == canonicalize(u)``.
    """
    cleaned = _clean(url)
    # Check early so a multi-megabyte href does not get parsed at all.
    _check_length(cleaned)
    if base is not None:
        cleaned = _join(base, cleaned)
        _check_length(cleaned)
    return _canonical_absolute(cleaned)


# A URL already in its canonical form, in the plainest spelling: http(s), a lowercase host of valid labels (no
# punycode, no user, no trailing dot; a port only if not the scheme's own), a path of unreserved characters
# whose segments are neither empty nor start with a dot (no dot segments), at most a query of plain `key=value`
# pairs, no fragment. Most links of most sites are written so; canonicalising one through w3lib returns it
# unchanged at ~20 µs, most of a page's parse. tests/test_urlnorm_as_is.py checks that the slow path returns
# every URL this matches as is.
_LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_SEGMENT = r"[A-Za-z0-9_~-][A-Za-z0-9._~-]*"
_PAIR = r"[A-Za-z0-9._-]+=[A-Za-z0-9._-]*"
_AS_IS_RE = re.compile(
    rf"(https?)://((?!xn--)(?:{_LABEL}\.(?!xn--))*{_LABEL})(?::([1-9][0-9]{{0,4}}))?"
    rf"/(?:{_SEGMENT}(?:/{_SEGMENT})*/?)?(\?{_PAIR}(?:&{_PAIR})*)?"
)


def _as_is(cleaned: str) -> bool:
    """Whether the URL is its own canonical form (_AS_IS_RE; a host within a DNS name's length; a port, if any,
    that is not the scheme's own; a query's pairs already in w3lib's order)."""
    m = _AS_IS_RE.fullmatch(cleaned)
    if m is None:
        return False
    scheme, host, port, query = m.groups()
    if len(host) > MAX_HOST_LENGTH:
        return False
    if port is not None and (int(port) > 65535 or int(port) == DEFAULT_PORTS[scheme]):
        return False
    if query is None or "&" not in query:
        return True
    pairs = [tuple(pair.split("=", 1)) for pair in query[1:].split("&")]
    return pairs == sorted(pairs)


# A page's links repeat across the pages of a site (navigation, footers): each distinct absolute URL is
# canonicalised once per worker, not once per occurrence. Bounded, so a worker's memory is too (~10 MB).
@functools.lru_cache(maxsize=CANONICAL_CACHE_SIZE)
def _canonical_absolute(cleaned: str) -> str:
    if _as_is(cleaned):
        return cleaned
    return _canonical_slow(cleaned)


def _canonical_slow(cleaned: str) -> str:
    """The canonical form through w3lib and the policy's checks (what a URL not as is takes)."""
    _split_checked(cleaned)
    try:
        canonical = canonicalize_url(cleaned, keep_blank_values=True, keep_fragments=False)
    except (ValueError, UnicodeError) as exc:
        # e.g. a host that is not valid IDNA ("a..b", labels > 63 chars).
        raise UrlError("malformed", cleaned) from exc
    # Re-validate the output (w3lib may normalise a host to nothing); this also
    # guarantees _normalise_netloc gets a URL whose port parses.
    _split_checked(canonical)
    canonical = _normalise_netloc(canonical)
    # Percent-encoding and IDNA can make the URL longer than the input.
    _check_length(canonical)
    return canonical


def canonical_cache_clear() -> None:
    """Forget every URL canonicalised so far in this process: for a measurement that times parsing from a
    cold start (a warm cache makes a page's links look almost free; canonicalising is most of a parse)."""
    _canonical_absolute.cache_clear()


def url_hash(canonical: str) -> str:
    """The database key of a canonical URL (unique): 24 characters, the base64 of 18 bytes, which are
    4 bytes of a digest of the URL's origin, 2 of its first directory, then 12 (96 bits) of the whole URL.

    The digest of the whole URL makes the key unique: two URLs of one server and directory share a key with
    a chance of one in 2**96 a pair, none in a frontier of billions. The two short digests in front are there
    for the index: they sort a server's URLs next to each other, and those under one directory of it, so the
    new URLs a batch of pages brings go into the few index pages of their servers and directories. A digest
    alone sends each new URL to a random page of the whole index: once the index outgrows PostgreSQL's
    buffers, every insert reads a page from outside them, dirties it and logs all of it again after each
    checkpoint. Short, because the key is in every URL row and in the unique index: the URL's first 48
    characters and a hex sha1 (the key until migration 0026) made it ~90 bytes of each, and the index of 10
    million URLs 1.6 GB, more than stays in the OS's cache beside the table (bench/THROUGHPUT.md)."""
    path = canonical.find("/", canonical.find("://") + 3)
    if path < 0:  # no path: not canonical, but a key all the same
        head = canonical.partition("?")[0]
    else:
        end = canonical.find("/", path + 1)
        query = canonical.find("?", path + 1)
        head = canonical[:path] if end < 0 or 0 <= query < end else canonical[:end]
    digest = hashlib.blake2b(canonical.encode("utf-8"), digest_size=12).digest()
    return _key_prefix(head) + binascii.b2a_base64(digest, newline=False).decode("ascii")


@functools.lru_cache(maxsize=65536)
def _key_prefix(head: str) -> str:
    """The 8 characters in front of a URL's own digest, from its head: the origin and the first directory
    ("http://example.com/news" of "http://example.com/news/a?b", "http://example.com" of
    "http://example.com/a?b/c"). The origin's digest (4 bytes), then the directory's (2 bytes). A crawl's URLs
    have few distinct heads: cached."""
    start = head.find("://") + 3
    slash = head.find("/", start)
    origin, directory = (head, "") if slash < 0 else (head[:slash], head[slash:])
    raw = hashlib.blake2b(origin.encode("utf-8"), digest_size=4).digest()
    raw += hashlib.blake2b(directory.encode("utf-8"), digest_size=2).digest()
    return binascii.b2a_base64(raw, newline=False).decode("ascii")


@dataclass(frozen=True)
class ServerKey:
    """Identifies one server for politeness (rate limits, robots.txt)."""

    scheme: str
    host: str  # lowercase, IPv6 literals without brackets
    port: int  # always explicit

    def origin(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        if self.port == DEFAULT_PORTS.get(self.scheme):
            return f"{self.scheme}://{host}"
        return f"{self.scheme}://{host}:{self.port}"


def server_key(canonical: str) -> ServerKey:
    """The (scheme, host, port) a canonical URL will be fetched from."""
    # Only the part before the path matters, and a crawl has far fewer servers than URLs: cache by origin.
    start = canonical.find("://") + 3
    end = len(canonical)
    for stop in "/?#":
        at = canonical.find(stop, start)
        if 0 <= at < end:
            end = at
    return _server_key_of_origin(canonical[:end] if start >= 3 else canonical)


@functools.lru_cache(maxsize=4096)
def _server_key_of_origin(origin: str) -> ServerKey:
    parts = _split_checked(origin)
    scheme = parts.scheme.lower()
    port = parts.port or DEFAULT_PORTS[scheme]
    # hostname is already lowercased by urlsplit and excludes userinfo.
    return ServerKey(scheme=scheme, host=parts.hostname or "", port=port)
