"""Sitemaps (sitemaps.org protocol 0.9): what a server says it has, and when each page last changed.

Pure: bytes in, entries out. A server controls every byte, so parsing is bounded and safe:

* a file is at most 50 MB uncompressed (MAX_BYTES; gzip is inflated incrementally up to it, so a gzip
  bomb costs no more) and lists at most 50,000 URLs (MAX_URLS) — the protocol's limits; past them the
  file is refused (size) or cut (URLs), and the error says so;
* XML is read by lxml's iterparse with entity resolution off, no network, no DTD, no huge-tree mode, so
  an external entity (XXE) or a billion-laughs expansion is never resolved; elements are freed as they
  are read, so a file's tree is never held whole;
* a file that is neither a urlset, a sitemap index nor plain text (one URL a line) is an error.
"""

from __future__ import annotations

import enum
import io
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime

from lxml import etree

from .sanitize import clean_line

MAX_BYTES = 50 * 1024 * 1024
MAX_URLS = 50_000
MAX_LOC = 2048
MAX_DEPTH = 3  # an index may list indexes, down to this many levels below the first file
MAX_FILES = 100  # sitemap files read per server and visit
CHANGEFREQS = frozenset({"always", "hourly", "daily", "weekly", "monthly", "yearly", "never"})


class Kind(enum.StrEnum):
    URLSET = "urlset"
    INDEX = "index"
    TEXT = "text"


class SitemapError(Exception):
    """The file can't be used; the message says why (it is stored with the sitemap)."""


@dataclass(frozen=True)
class Entry:
    loc: str
    lastmod: datetime | None = None
    changefreq: str = ""
    priority: float | None = None


@dataclass
class Parsed:
    kind: Kind
    entries: list[Entry] = field(default_factory=list)
    error: str = ""  # a problem that did not stop the file from being used (cut at MAX_URLS)


def inflate(body: bytes, *, limit: int = MAX_BYTES) -> bytes:
    """The sitemap's bytes: gunzipped when it is gzip (by its magic number, whatever the name or type
    says), refused past `limit` bytes uncompressed."""
    if body[:2] != b"\x1f\x8b":
        if len(body) > limit:
            raise SitemapError(f"larger than {limit} bytes")
        return body
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        data = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise SitemapError(f"bad gzip: {exc}") from exc
    if len(data) > limit:
        raise SitemapError(f"larger than {limit} bytes uncompressed")
    return data


def parse(body: bytes) -> Parsed:
    """A sitemap file's entries (gzip or not, XML or text). Raises SitemapError."""
    data = inflate(body)
    start = data.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    if start == b"<":
        return _parse_xml(data)
    return _parse_text(data)


def _parse_text(data: bytes) -> Parsed:
    out = Parsed(Kind.TEXT)
    for raw in data.decode("utf-8", errors="replace").splitlines():
        loc = _loc(raw)
        if loc is None:
            if raw.strip():
                raise SitemapError("not a sitemap: a text sitemap lists one http(s) URL a line")
            continue
        if len(out.entries) >= MAX_URLS:
            out.error = f"lists more than {MAX_URLS} URLs: the rest ignored"
            break
        out.entries.append(Entry(loc))
    return out


def _local(tag: object) -> str:
    return etree.QName(tag).localname if isinstance(tag, str) else ""


def _parse_xml(data: bytes) -> Parsed:
    if b"<!ENTITY" in data:
        # Never expanded here anyway (resolve_entities=False); a sitemap has no use for one, so say so.
        raise SitemapError("declares XML entities: refused")
    events = etree.iterparse(
        io.BytesIO(data),
        events=("start", "end"),
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        huge_tree=False,
        remove_comments=True,
        remove_pis=True,
    )
    out: Parsed | None = None
    try:
        for event, element in events:
            if out is None:
                root = _local(element.tag)
                if root not in ("urlset", "sitemapindex"):
                    raise SitemapError(f"not a sitemap: root element <{root[:50]}>")
                out = Parsed(Kind.URLSET if root == "urlset" else Kind.INDEX)
                continue
            if event != "end" or _local(element.tag) not in ("url", "sitemap"):
                continue
            entry = _entry(element)
            element.clear()
            if entry is None:
                continue
            if len(out.entries) >= MAX_URLS:
                out.error = f"lists more than {MAX_URLS} URLs: the rest ignored"
                break
            out.entries.append(entry)
    except etree.XMLSyntaxError as exc:
        raise SitemapError(f"bad XML: {clean_line(str(exc), 200)}") from exc
    if out is None:
        raise SitemapError("empty")
    return out


def _entry(element) -> Entry | None:
    fields = {_local(child.tag): (child.text or "").strip() for child in element}
    loc = _loc(fields.get("loc", ""))
    if loc is None:
        return None
    changefreq = fields.get("changefreq", "").lower()
    return Entry(
        loc=loc,
        lastmod=parse_lastmod(fields.get("lastmod", "")),
        changefreq=changefreq if changefreq in CHANGEFREQS else "",
        priority=_priority(fields.get("priority", "")),
    )


def _loc(text: str) -> str | None:
    loc = text.strip()
    if not loc or len(loc) > MAX_LOC or not loc.lower().startswith(("http://", "https://")):
        return None
    return clean_line(loc, MAX_LOC)


def parse_lastmod(text: str) -> datetime | None:
    """W3C Datetime (YYYY, YYYY-MM, YYYY-MM-DD, or a date-time with a zone) as an aware datetime; a date
    without a zone is UTC. None when absent or not a date."""
    text = text.strip()
    if not text or len(text) > 40:
        return None
    if len(text) in (4, 7) and text[:4].isdigit():
        text = text + "-01" * ((10 - len(text)) // 3)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _priority(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if 0.0 <= value <= 1.0 else None
