"""The WARC export: the stored pages of a crawl, or of a site, a group or a
period, as WARC/1.1 with a CDXJ index beside it.

Per page: a `response` record (the stored body, its HTTP headers) and the `request` that brought it; a
`revisit` (identical-payload-digest) instead of the response when the body duplicates an earlier page's;
a `revisit` for a later re-fetch or re-check that found the same body (server-not-modified for a 304);
a `metadata` record with the page's outlinks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from .records import IDENTICAL_PAYLOAD, SERVER_NOT_MODIFIED, Capture, RecordMaker, is_not_modified
from .selectors import ExportScope, pages_export_chunks, pages_export_count
from .writer import RollingWarc, Written, index_path


@dataclass
class ExportSummary:
    files: list[Path]
    index: Path
    pages: int
    records: int
    bytes: int


def warc_export(
    *,
    out: Path,
    scope: ExportScope,
    max_size: int | None = None,
    on_pages: Callable[[int], None] | None = None,
    on_total: Callable[[int], None] | None = None,
) -> ExportSummary:
    """Write the pages in `scope` to `out` (numbered files when `max_size` is given) and the CDXJ index.
    `on_total` hears the number of pages to export, `on_pages` each chunk's count (a progress bar)."""
    if on_total is not None:
        on_total(pages_export_count(scope=scope))
    maker = RecordMaker()
    warc = RollingWarc(out, max_size=max_size, info=_warcinfo(scope), maker=maker)
    pages = 0
    try:
        for chunk in pages_export_chunks(scope=scope):
            for capture in chunk:
                warc.write_group(capture_records(maker, capture, scope=scope))
            pages += len(chunk)
            if on_pages is not None:
                on_pages(len(chunk))
    finally:
        written: Written = warc.close()
    return ExportSummary(written.files, index_path(out), pages, written.records, written.bytes)


def capture_records(maker: RecordMaker, capture: Capture, *, scope: ExportScope) -> list:
    """The records of one page, in the order they are written."""
    records = []
    main = None
    if scope.since is None or capture.fetch.at >= scope.since:
        if capture.duplicate_of is not None:
            main = maker.revisit(capture, capture.fetch, capture.duplicate_of, IDENTICAL_PAYLOAD)
        else:
            main = maker.response(capture)
        records += [main, maker.request(capture, capture.fetch, main.rec_headers.get_header("WARC-Record-ID"))]
    revisit = capture.revisit
    if revisit is not None and (scope.since is None or revisit.at >= scope.since):
        profile = SERVER_NOT_MODIFIED if is_not_modified(revisit.response_head) else IDENTICAL_PAYLOAD
        again = maker.revisit(capture, revisit, (capture.url, capture.fetch.at), profile)
        records += [again, maker.request(capture, revisit, again.rec_headers.get_header("WARC-Record-ID"))]
    if main is not None and capture.outlinks:
        records.append(maker.metadata(capture, main.rec_headers.get_header("WARC-Record-ID")))
    return records


def _warcinfo(scope: ExportScope) -> dict[str, str]:
    chosen = [f"site={scope.site}"] * bool(scope.site) + [f"group={scope.group}"] * bool(scope.group)
    if scope.since:
        chosen.append(f"since={scope.since.isoformat()}")
    return {
        "software": "crawladmin export_warc (warcio)",
        "format": "WARC File Format 1.1",
        "conformsTo": "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
        "http-header-user-agent": settings.CRAWL_USER_AGENT,
        "robots": "obey",
        "description": "crawladmin stored pages" + (f" ({', '.join(chosen)})" if chosen else ""),
    }
