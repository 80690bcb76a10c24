"""Sitemaps (sitemaps.org protocol 0.9): what a server says it has, and when each page last changed.

Pure: bytes in, entries out. A server controls every byte, so parsing is bounded and safe:

* a file is at most 50 MB uncompressed (MAX_BYTES) and lists at most 50,000 URLs (MAX_URLS) — the
  protocol's limits; past them the file is refused (size) or cut (URLs), and the error says so;
* it is read as it is inflated, CHUNK bytes at a time, never whole: a text file line by line, XML by
  lxml's pull parser fed chunk by chunk, and reading stops at MAX_URLS. A small gzip that inflates to
  50 MB of blank lines costs a pass over them, not 50 MB of text and a list of millions of lines;
* XML is read by lxml's iterparse with entity resolution off, no network, no DTD, no huge-tree mode, so
  an external entity (XXE) or a billion-laughs expansion is never resolved; elements are freed as they
  are read, so a file's tree is never held whole;
* a file that is neither a urlset, a sitemap index nor plain text (one URL a line) is an error.
"""

from __future__ import annotations

import enum
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

from lxml import etree

from .sanitize import clean_line

MAX_BYTES = 50 * 1024 * 1024
MAX_URLS = 50_000
MAX_LOC = 2048
MAX_DEPTH = 3  # an index may list indexes, down to this many levels below the first file
MAX_FILES = 100  # sitemap files read per server and visit
CHUNK = 1024 * 1024  # bytes inflated and parsed at a time
MAX_LINE = MAX_LOC + 256  # a text sitemap's line, blanks around its URL included
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
    """The sitemap's bytes, whole: gunzipped when it is gzip (by its magic number, whatever the name or type
    says), refused past `limit` bytes uncompressed. parse() reads them chunk by chunk instead (chunks())."""
    return b"".join(chunks(body, limit=limit))


def chunks(body: bytes, *, limit: int = MAX_BYTES, size: int = CHUNK) -> Iterator[bytes]:
    """The sitemap's bytes, `size` at a time as they are inflated; SitemapError past `limit` in all."""
    if body[:2] != b"\x1f\x8b":
        if len(body) > limit:
            raise SitemapError(f"larger than {limit} bytes")
        for at in range(0, len(body), size):
            yield body[at : at + size]
        return
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    total, pending = 0, body
    while True:
        try:
            data = inflater.decompress(pending, size)
        except zlib.error as exc:
            raise SitemapError(f"bad gzip: {exc}") from exc
        pending = inflater.unconsumed_tail
        total += len(data)
        if total > limit:
            raise SitemapError(f"larger than {limit} bytes uncompressed")
        if data:
            yield data
        if not pending and (not data or inflater.eof):
            return


_BLANK = b"\xef\xbb\xbf \t\r\n"


def parse(body: bytes) -> Parsed:
    """A sitemap file's entries (gzip or not, XML or text). Raises SitemapError."""
    stream = chunks(body)
    first = b""
    for chunk in stream:  # the first chunk with something besides blanks decides XML or text
        first = chunk
        if chunk.lstrip(_BLANK):
            break
    rest = _prepend(first, stream)
    if first.lstrip(_BLANK)[:1] == b"<":
        return _parse_xml(rest)
    return _parse_text(rest)


def _prepend(first: bytes, stream: Iterator[bytes]) -> Iterator[bytes]:
    if first:
        yield first
    yield from stream


# A line with something on it: runs of blank lines are skipped in C, however many there are.
_LINE = re.compile(rb"[^\r\n]*[^\r\n \t][^\r\n]*")


def _parse_text(stream: Iterator[bytes]) -> Parsed:
    out = Parsed(Kind.TEXT)
    rest = b""
    for chunk in stream:
        data = rest + chunk
        cut = max(data.rfind(b"\n"), data.rfind(b"\r")) + 1
        data, rest = data[:cut], data[cut:]
        if len(rest) > MAX_LINE:
            raise SitemapError(f"not a sitemap: a line longer than {MAX_LINE} bytes")
        if _text_lines(data, out):
            return out
    _text_lines(rest, out)
    return out


def _text_lines(data: bytes, out: Parsed) -> bool:
    """The URLs of whole lines `data` added to `out`; True once MAX_URLS are there (the rest ignored)."""
    if not data or data.isspace():  # a chunk of blank lines, at C speed
        return False
    for match in _LINE.finditer(data):
        raw = match.group().decode("utf-8", errors="replace")
        loc = _loc(raw)
        if loc is None:
            raise SitemapError("not a sitemap: a text sitemap lists one http(s) URL a line")
        if len(out.entries) >= MAX_URLS:
            out.error = f"lists more than {MAX_URLS} URLs: the rest ignored"
            return True
        out.entries.append(Entry(loc))
    return False


def _local(tag: object) -> str:
    return etree.QName(tag).localname if isinstance(tag, str) else ""


def _parse_xml(stream: Iterator[bytes]) -> Parsed:
    parser = etree.XMLPullParser(
        events=("start", "end"),
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        huge_tree=False,
        remove_comments=True,
        remove_pis=True,
    )
    out: Parsed | None = None
    tail = b""  # the end of the previous chunk: a declaration cut in two is still seen
    try:
        for chunk in stream:
            if b"<!ENTITY" in tail + chunk[:16] or b"<!ENTITY" in chunk:
                # Never expanded here anyway (resolve_entities=False); a sitemap has no use for one, so say so.
                raise SitemapError("declares XML entities: refused")
            tail = chunk[-16:]
            parser.feed(chunk)
            out = _xml_entries(parser, out)
            if out is not None and out.error:
                return out  # MAX_URLS reached: the rest is not read
        parser.close()
        out = _xml_entries(parser, out)
    except etree.XMLSyntaxError as exc:
        raise SitemapError(f"bad XML: {clean_line(str(exc), 200)}") from exc
    if out is None:
        raise SitemapError("empty")
    return out


def _xml_entries(parser: etree.XMLPullParser, out: Parsed | None) -> Parsed | None:
    """The entries of the events the parser has ready, added to `out` (made at the root element)."""
    for event, element in parser.read_events():
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
            return out
        out.entries.append(entry)
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
