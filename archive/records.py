"""WARC/1.1 records of stored pages, built with warcio (no Django: the rows come in as Capture values).

The stored body is the *decoded* payload (the fetcher undoes gzip and chunking and keeps what it read), so
the HTTP headers written with it must describe that payload: a transfer or content coding and the
wire length are kept under `X-Archive-Orig-<name>` (the name replay tools, pywb and OpenWayback, read),
and Content-Length is the stored length. The payload digest is then sha1 of exactly the bytes the crawl
checksummed: `sha1:` + base32 of Page.checksum's bytes.
"""

from __future__ import annotations

import base64
import hashlib
import io
from dataclasses import dataclass
from datetime import UTC, datetime

from warcio.statusandheaders import StatusAndHeaders
from warcio.timeutils import datetime_to_iso_date
from warcio.warcwriter import WARCWriter

# Headers that describe the bytes on the wire, not the stored payload.
_WIRE_HEADERS = frozenset({"content-encoding", "transfer-encoding", "content-length"})
IDENTICAL_PAYLOAD = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
SERVER_NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"


@dataclass(frozen=True)
class Exchange:
    """One request and its response as stored (Page's heads, CRLF-separated), and when."""

    at: datetime
    request_head: str
    response_head: str


@dataclass(frozen=True)
class Capture:
    """A stored page, or an answer kept without one (a redirect, a 4xx/5xx, robots.txt, a sitemap), as much
    as its records need."""

    page_id: int  # the Page's id, or the Exchange row's for an answer kept without a page
    url: str
    body: bytes
    checksum: str  # sha1 hex of body ('' for an empty body)
    content_type: str
    peer_ip: str | None
    truncated: str  # WARC-Truncated's word for a body not kept whole (length: the body limit), or ''
    fetch: Exchange
    revisit: Exchange | None  # a later re-fetch or re-check that found the same payload
    duplicate_of: tuple[str, datetime] | None  # (URL, date) of an earlier record with the same payload
    outlinks: tuple[str, ...]
    # The crawl's verdict, `name: value` lines of the metadata record: links not followed and why, where a
    # redirect led, the URL's state.
    verdict: tuple[tuple[str, str], ...] = ()
    rendered: Rendering | None = None  # the DOM a browser made of the page, when it was rendered


@dataclass(frozen=True)
class Rendering:
    """A page's rendered DOM (crawlcore.services.render): archived beside its response as a `conversion`."""

    at: datetime
    dom: bytes  # UTF-8 HTML
    reason: str  # why it was rendered (crawler.render_need)


def payload_digest(checksum: str, body: bytes) -> str:
    """WARC-Payload-Digest of a stored body: the crawl's own sha1, in WARC's base32 spelling."""
    raw = bytes.fromhex(checksum) if checksum else hashlib.sha1(body).digest()
    return "sha1:" + base64.b32encode(raw).decode("ascii")


def warc_date(at: datetime) -> str:
    """WARC/1.1's date: UTC with microseconds, `Z` (warcio appends it to a naive time)."""
    return datetime_to_iso_date(at.astimezone(UTC).replace(tzinfo=None), use_micros=True)


def parse_head(head: str) -> tuple[str, list[tuple[str, str]]]:
    """A stored head: its first line and its (name, value) header lines."""
    lines = head.split("\r\n") if head else [""]
    headers = []
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep and name.strip():
            headers.append((name.strip(), value.strip()))
    return lines[0], headers


def http_response_headers(head: str, *, body_length: int, content_type: str) -> StatusAndHeaders:
    """The response's status line and headers, rewritten to describe the stored (decoded) payload."""
    first, headers = parse_head(head)
    protocol, _, rest = first.partition(" ")
    if not protocol.startswith("HTTP/") or not rest:
        # Stored before heads were kept: what the page row knows.
        protocol, rest, headers = "HTTP/1.1", "200 OK", [("Content-Type", content_type)] if content_type else []
    kept = [(n, v) for n, v in headers if n.lower() not in _WIRE_HEADERS]
    orig = [(f"X-Archive-Orig-{n}", v) for n, v in headers if n.lower() in _WIRE_HEADERS]
    return StatusAndHeaders(rest, [*kept, *orig, ("Content-Length", str(body_length))], protocol=protocol)


def http_request_headers(head: str, url: str) -> StatusAndHeaders:
    first, headers = parse_head(head)
    if not first:
        first = f"GET {url} HTTP/1.1"  # stored before heads were kept
    # warcio splits a request line itself: protocol=<method>, statusline=<target> <version>.
    return StatusAndHeaders(first, headers, is_http_request=True)


class RecordMaker:
    """Builds the records of one capture; `writer` only lends its record factory (no file is written)."""

    def __init__(self) -> None:
        self.writer = WARCWriter(io.BytesIO(), gzip=True, warc_version="1.1")

    def warcinfo(self, filename: str, info: dict[str, str]):
        return self.writer.create_warcinfo_record(filename, info)

    def _common(self, at: datetime, capture: Capture) -> dict[str, str]:
        headers = {"WARC-Date": warc_date(at)}
        if capture.peer_ip:
            headers["WARC-IP-Address"] = capture.peer_ip
        return headers

    def request(self, capture: Capture, exchange: Exchange, concurrent_to: str):
        headers = self._common(exchange.at, capture) | {"WARC-Concurrent-To": concurrent_to}
        return self.writer.create_warc_record(
            capture.url,
            "request",
            payload=io.BytesIO(b""),
            length=0,
            http_headers=http_request_headers(exchange.request_head, capture.url),
            warc_headers_dict=headers,
        )

    def response(self, capture: Capture):
        headers = self._common(capture.fetch.at, capture) | {
            "WARC-Payload-Digest": payload_digest(capture.checksum, capture.body)
        }
        if capture.truncated:
            headers["WARC-Truncated"] = capture.truncated
        http = http_response_headers(
            capture.fetch.response_head, body_length=len(capture.body), content_type=capture.content_type
        )
        return self.writer.create_warc_record(
            capture.url,
            "response",
            payload=io.BytesIO(capture.body),
            length=len(capture.body),
            http_headers=http,
            warc_headers_dict=headers,
        )

    def revisit(self, capture: Capture, exchange: Exchange, refers_to: tuple[str, datetime], profile: str):
        """A fetch whose payload is already archived: headers only, pointing at the record that holds it."""
        http = http_response_headers(exchange.response_head, body_length=0, content_type=capture.content_type)
        # No payload follows the headers: the Content-Length describing the stored payload would mislead.
        http.remove_header("Content-Length")
        record = self.writer.create_revisit_record(
            capture.url,
            payload_digest(capture.checksum, capture.body),
            refers_to[0],
            warc_date(refers_to[1]),
            http_headers=http,
            warc_headers_dict=self._common(exchange.at, capture),
        )
        record.rec_headers.replace_header("WARC-Profile", profile)
        return record

    def metadata(self, capture: Capture, refers_to: str):
        """The page's outlinks, one `outlink: URL` line each (application/warc-fields, as Heritrix writes), then
        the crawl's verdict (`not-followed: URL reason`, `redirect: URL`, `state: …`)."""
        lines = [("outlink", link) for link in capture.outlinks] + list(capture.verdict)
        body = "".join(f"{name}: {_field(value)}\r\n" for name, value in lines).encode("utf-8")
        headers = {"WARC-Date": warc_date(capture.fetch.at), "WARC-Refers-To": refers_to}
        return self.writer.create_warc_record(
            capture.url,
            "metadata",
            payload=io.BytesIO(body),
            length=len(body),
            warc_content_type="application/warc-fields",
            warc_headers_dict=headers,
        )


def conversion(maker: RecordMaker, capture: Capture, refers_to: str):
    """The page's rendered DOM as a `conversion` record of its response: what the browser made of the
    payload (WARC 1.1 §6.8), so a replay or a reader sees both the raw answer and the rendered page."""
    rendered = capture.rendered
    assert rendered is not None
    headers = {
        "WARC-Date": warc_date(rendered.at),
        "WARC-Refers-To": refers_to,
        "WARC-Payload-Digest": payload_digest("", rendered.dom),
        # Not a WARC field of the standard: why the crawler rendered the page (its detector's reason).
        "WARC-Render-Reason": _field(rendered.reason) or "rendered",
    }
    return maker.writer.create_warc_record(
        capture.url,
        "conversion",
        payload=io.BytesIO(rendered.dom),
        length=len(rendered.dom),
        warc_content_type="text/html; charset=utf-8",
        warc_headers_dict=headers,
    )


def log_resource(writer: WARCWriter, *, uri: str, at: datetime, payload, length: int):
    """A `resource` record of a text log (the crawl log) read from `payload`, `length` bytes."""
    return writer.create_warc_record(
        uri,
        "resource",
        payload=payload,
        length=length,
        warc_content_type="text/plain; charset=utf-8",
        warc_headers_dict={"WARC-Date": warc_date(at)},
    )


def _field(value: str) -> str:
    """One line of a warc-fields body: a line break in a value (a scraped reason) would start a field."""
    return " ".join(value.split())


def head_content_type(head: str) -> str:
    """The Content-Type a stored response head names ('' when none)."""
    _, headers = parse_head(head)
    return next((v for n, v in headers if n.lower() == "content-type"), "")


def is_not_modified(head: str) -> bool:
    first, _ = parse_head(head)
    return first.split(" ")[1:2] == ["304"]
