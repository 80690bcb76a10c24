"""The WARC export: the stored pages of a crawl, or of a site, a group or a period, and every other answer
the crawl kept (redirects, 4xx and 5xx pages, resource checks, robots.txt and sitemap fetches), as WARC/1.1
with a CDXJ index beside it.

Per page: a `response` record (the stored body, its HTTP headers) and the `request` that brought it; a
`revisit` (identical-payload-digest) instead of the response when the body duplicates an earlier page's
or a payload of an earlier export (`dedup`, read from its CDXJ); a `revisit` for a later re-fetch or
re-check that found the same body (server-not-modified for a 304); a `metadata` record with the page's
outlinks and the links the crawl did not follow, with why.

Per answer kept without a page: its `response` (a revisit when the same body was written before: the
same 404 page under many URLs), its `request`, and a `metadata` record with the crawl's verdict (where a
redirect led, the URL's state, a robots.txt or sitemap fetch).

With `crawl_log`, a last `resource` record holds the crawl log of the export's scope: every status check,
one line each.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from .dedup import PayloadIndex
from .records import (
    IDENTICAL_PAYLOAD,
    SERVER_NOT_MODIFIED,
    Capture,
    RecordMaker,
    conversion,
    is_not_modified,
    log_resource,
    payload_digest,
)
from .selectors import (
    ExportScope,
    crawl_log_lines,
    exchanges_export_chunks,
    exchanges_export_count,
    pages_export_chunks,
    pages_export_count,
)
from .writer import RollingWarc, Written, index_path

CRAWL_LOG_URI = "crawladmin:crawl.log"


@dataclass
class ExportSummary:
    files: list[Path]
    index: Path
    pages: int
    records: int
    bytes: int
    exchanges: int = 0  # answers kept without a page (redirects, 4xx/5xx, robots.txt, sitemaps)
    deduplicated: int = 0  # responses written as revisits of a payload an earlier export holds


def warc_export(
    *,
    out: Path,
    scope: ExportScope,
    max_size: int | None = None,
    dedup: PayloadIndex | None = None,
    crawl_log: bool = False,
    on_pages: Callable[[int], None] | None = None,
    on_total: Callable[[int], None] | None = None,
) -> ExportSummary:
    """Write the pages in `scope` to `out` (numbered files when `max_size` is given), then the answers kept
    without a page, and the CDXJ index. `dedup`: payloads an earlier export holds (its CDXJ), written here
    as revisits. `on_total` hears the number of captures to export, `on_pages` each chunk's count (a
    progress bar)."""
    if on_total is not None:
        on_total(pages_export_count(scope=scope) + exchanges_export_count(scope=scope))
    maker = RecordMaker()
    warc = RollingWarc(out, max_size=max_size, info=_warcinfo(scope, dedup), maker=maker)
    writer = _Writer(maker, scope, dedup if dedup is not None else PayloadIndex())
    pages = exchanges = 0
    try:
        for chunk in pages_export_chunks(scope=scope):
            for capture in chunk:
                warc.write_group(writer.page(capture))
            pages += len(chunk)
            if on_pages is not None:
                on_pages(len(chunk))
        for chunk in exchanges_export_chunks(scope=scope):
            for capture in chunk:
                warc.write_group(writer.answer(capture))
            exchanges += len(chunk)
            if on_pages is not None:
                on_pages(len(chunk))
        if crawl_log:
            _write_crawl_log(warc, maker, scope)
    finally:
        written: Written = warc.close()
    return ExportSummary(
        written.files, index_path(out), pages, written.records, written.bytes, exchanges, writer.deduplicated
    )


def capture_records(maker: RecordMaker, capture: Capture, *, scope: ExportScope) -> list:
    """The records of one page, in the order they are written (no earlier export to deduplicate against)."""
    return _Writer(maker, scope, PayloadIndex()).page(capture)


class _Writer:
    """The records of each capture, and the payloads written so far (for the revisits of later ones)."""

    def __init__(self, maker: RecordMaker, scope: ExportScope, payloads: PayloadIndex) -> None:
        self.maker = maker
        self.scope = scope
        self.payloads = payloads
        self.deduplicated = 0

    def _main(self, capture: Capture, *, keep: bool):
        """The response record, or a revisit when the payload is archived already: a duplicate page's
        original, or a payload of an earlier export or (for `keep`) of this one."""
        maker = self.maker
        if capture.duplicate_of is not None:
            return maker.revisit(capture, capture.fetch, capture.duplicate_of, IDENTICAL_PAYLOAD)
        if capture.body:
            digest = payload_digest(capture.checksum, capture.body)
            earlier = self.payloads.earlier(digest)
            if earlier is not None:
                self.deduplicated += 1
                return maker.revisit(capture, capture.fetch, earlier, IDENTICAL_PAYLOAD)
            if keep and not capture.truncated:
                self.payloads.add(digest, capture.url, capture.fetch.at)
        return maker.response(capture)

    def page(self, capture: Capture) -> list:
        # An incidents' export takes the last good captures of its URLs whatever their date (ExportScope).
        maker, since = self.maker, self.scope.since if self.scope.page_ids is None else None
        records = []
        main = None
        if since is None or capture.fetch.at >= since:
            main = self._main(capture, keep=False)
            records += [main, maker.request(capture, capture.fetch, main.rec_headers.get_header("WARC-Record-ID"))]
        revisit = capture.revisit
        if revisit is not None and (since is None or revisit.at >= since):
            profile = SERVER_NOT_MODIFIED if is_not_modified(revisit.response_head) else IDENTICAL_PAYLOAD
            again = maker.revisit(capture, revisit, (capture.url, capture.fetch.at), profile)
            records += [again, maker.request(capture, revisit, again.rec_headers.get_header("WARC-Record-ID"))]
        if main is not None and (capture.outlinks or capture.verdict):
            records.append(maker.metadata(capture, main.rec_headers.get_header("WARC-Record-ID")))
        if main is not None and capture.rendered is not None:
            records.append(conversion(maker, capture, main.rec_headers.get_header("WARC-Record-ID")))
        return records

    def answer(self, capture: Capture) -> list:
        """An answer kept without a page: its response (or a revisit of the same body), request, verdict."""
        maker = self.maker
        main = self._main(capture, keep=True)
        main_id = main.rec_headers.get_header("WARC-Record-ID")
        records = [main, maker.request(capture, capture.fetch, main_id)]
        if capture.verdict:
            records.append(maker.metadata(capture, main_id))
        return records


def _write_crawl_log(warc: RollingWarc, maker: RecordMaker, scope: ExportScope) -> None:
    """The crawl log of the export's scope as one `resource` record, spooled to a temporary file first (its
    length goes before it), so memory stays bounded whatever the number of checks."""
    with tempfile.TemporaryFile() as spool:
        for line in crawl_log_lines(scope=scope):
            spool.write(line.encode("utf-8"))
        length = spool.tell()
        spool.seek(0)
        warc.write_group(
            [log_resource(maker.writer, uri=CRAWL_LOG_URI, at=timezone.now(), payload=spool, length=length)]
        )


def _warcinfo(scope: ExportScope, dedup: PayloadIndex | None) -> dict[str, str]:
    chosen = [f"site={scope.site}"] * bool(scope.site) + [f"group={scope.group}"] * bool(scope.group)
    if scope.incidents:
        chosen.append("incidents' evidence and their last good captures")
    if scope.since:
        chosen.append(f"since={scope.since.isoformat()}")
    if dedup is not None:
        chosen.append(f"deduplicated against {len(dedup)} earlier payloads")
    return {
        "software": "crawladmin export_warc (warcio)",
        "format": "WARC File Format 1.1",
        "conformsTo": "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
        "http-header-user-agent": settings.CRAWL_USER_AGENT,
        "robots": "obey",
        "description": "crawladmin stored pages" + (f" ({', '.join(chosen)})" if chosen else ""),
    }
