"""The URL-extract agent's work: parse stored pages, insert the new URLs and the links in bulk."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeVar

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from crawlcore.db import fulltext
from crawlcore.db.chain import Const, Input, Insert, SearchVector, Sql, Update, chain
from crawlcore.db.raw import fetch_rows, one_of, typed
from crawlcore.db.transactions import unflushed_commits
from crawlcore.models import JobUrl, Link, Page, Url
from crawlcore.models.urls import page_body
from crawler import notfollowed
from crawler.brokenlinks import fragment_missing
from crawler.child import ChildResult, run_each
from crawler.fulltext import IndexText
from crawler.lifecycle import State
from crawler.parse import LIMIT_MEMORY, LIMIT_TIME, Extracted, Found, extract, is_html
from crawler.pdf import extract_pdf, is_pdf
from crawler.sanitize import clean_label

from .job_admission import jobs_admit
from .load_dispatch import servers_dispatch_with_due_work
from .render import ExtractedPage, pages_render_flag
from .urls import NewUrl, new_url_from, urls_insert, urls_known

log = logging.getLogger(__name__)

T = TypeVar("T")

# A page whose parse its child's hard bounds stopped (crawler.child's error -> the limit, the problem).
PARSE_STOPPED = {"timeout": (LIMIT_TIME, "parse_time"), "memory": (LIMIT_MEMORY, "parse_memory")}

LINK_COLUMNS = ("from_url_id", "to_url_id", "anchor_text", "element", "nofollow", "fragments")


@dataclass
class ExtractOutcome:
    pages: int = 0
    links: int = 0
    new_urls: int = 0


@dataclass(frozen=True)
class FollowRules:
    """The settings that decide whether a link is followed, read once a batch: a Django setting costs an
    attribute lookup through LazySettings each time, ~10 % of extraction when read for every link."""

    obey_nofollow: bool
    max_url_length: int
    max_depth: int
    offsite_depth: int
    check_resources: bool

    @classmethod
    def from_settings(cls) -> FollowRules:
        return cls(
            settings.CRAWL_OBEY_NOFOLLOW,
            settings.CRAWL_MAX_URL_LENGTH,
            settings.CRAWL_MAX_DEPTH,
            settings.CRAWL_OFFSITE_DEPTH,
            settings.CRAWL_CHECK_RESOURCES,
        )


def not_followed_reason(ex: Extracted, link: Found, depth: int, rules: FollowRules | None = None) -> str:
    """Why this link of the page is not to be followed ("" when it is). Resources are checked whatever
    their depth: they are leaves, never parsed."""
    rules = rules or FollowRules.from_settings()
    if ex.nofollow or (link.nofollow and rules.obey_nofollow):
        return notfollowed.NOFOLLOW
    if len(link.url) > rules.max_url_length:
        return notfollowed.TOO_LONG
    if depth > rules.max_depth and not link.resource:
        return notfollowed.TOO_DEEP
    return ""


@dataclass(frozen=True, slots=True)
class StoredPage:
    """What extraction reads of a page and its URL: one row of one query, no model instances."""

    id: int
    url_id: int
    body_z: bytes | None
    content_type: str
    checksum: str
    url: str
    depth: int
    scope_mode: str
    scope_root: str
    offsite_hops: int
    waited: bool  # its extract message was sent (or its parse said it is alive) over half CRAWL_REDISPATCH_AFTER ago
    of_job: bool  # a crawl job reached its URL: its links follow the jobs' rules (crawlcore.services.job_admission)
    inbound: str | None  # anchor texts of links to this page, for its index
    dom_z: bytes | None = None  # the DOM a browser rendered of it (crawlcore.services.render), when it has one

    @property
    def body(self) -> bytes:
        """What extraction reads: the rendered DOM when the page has one, else the body as fetched."""
        return page_body(self.dom_z) if self.dom_z else page_body(self.body_z)


def _stored_pages(page_ids: Sequence[int], *, indexing: bool) -> list[StoredPage]:
    """The batch's pages not extracted yet, with what extraction reads of their URLs, whether a crawl job
    reached each URL and the anchor texts of the links to it: one fixed-shape statement (prepared on
    PostgreSQL). Built by the ORM each batch, the same read cost three times its own execution in Python."""
    page, url, job_url = Page._meta.db_table, Url._meta.db_table, JobUrl._meta.db_table
    ids, ids_param = one_of("p.id", page_ids, "bigint")
    since = timezone.now() - timedelta(seconds=settings.CRAWL_REDISPATCH_AFTER / 2)
    sql = (
        "SELECT p.id, p.url_id, p.body_z, p.content_type, p.checksum, u.url, u.depth, u.scope_mode, u.scope_root,"
        f" u.offsite_hops, p.extract_dispatched_at IS NULL OR p.extract_dispatched_at < {typed('timestamptz')},"
        f" EXISTS (SELECT 1 FROM {job_url} j WHERE j.url_id = p.url_id),"
        f" {fulltext.inbound_anchors_sql('p.url_id') if indexing else 'NULL'}, p.dom_z"
        f" FROM {page} p JOIN {url} u ON u.id = p.url_id WHERE {ids} AND p.extracted_at IS NULL"
    )
    rows = fetch_rows(sql, [since, ids_param], prepare=True)
    return [_rendered_as_html(StoredPage(*row[:10], bool(row[10]), bool(row[11]), row[12], row[13])) for row in rows]


def _rendered_as_html(page: StoredPage) -> StoredPage:
    # A rendered DOM is stored as UTF-8 HTML whatever the body's own type and charset said.
    return dataclasses.replace(page, content_type=RENDERED_TYPE) if page.dom_z else page


RENDERED_TYPE = "text/html; charset=utf-8"


def _labels_clean(ex: Extracted) -> Extracted:
    """The page's title, description and anchor texts without control characters (crawler.sanitize), before
    they are stored: a page's ESC or BEL would otherwise reach every terminal, CSV and report that shows them."""
    ex.title, ex.description = clean_label(ex.title), clean_label(ex.description)
    for link in (*ex.links, *ex.over_limit):
        link.text = clean_label(link.text)
        if link.fragments:
            link.fragments = [(fragment, clean_label(text)) for fragment, text in link.fragments]
    return ex


def pages_extract(*, page_ids: Sequence[int]) -> ExtractOutcome:
    """Extract a batch of pages in one transaction. Idempotent: links and URLs are inserted under unique
    constraints and a page already extracted is skipped, so a redelivered message does no harm.

    Every link is recorded, followed or not: a link not followed makes its target a URL set aside with
    the reason (never fetched), so a site owner can see why."""
    outcome = ExtractOutcome()
    indexing = settings.SEARCH_INDEX
    pages = _stored_pages(page_ids, indexing=indexing)
    if not pages:
        return outcome
    parsed = _parse_pages(pages)

    rules = FollowRules.from_settings()
    # The pages of crawl jobs lead only where their jobs' rules allow (crawlcore.services.job_admission); the others
    # follow the global settings. Nothing more to read when no page of the batch is a job's.
    admission = jobs_admit(
        links=[
            (page.url_id, link.url, 1)
            for page, ex in parsed
            if ex is not None and page.of_job
            for link in ex.links
            if rules.check_resources or not link.resource
        ]
    )
    # Every target looked up first: most are known, and a known URL needs no candidate (its scope, its
    # server, its reason: a third of the batch's own work) unless a followed link may lift it.
    looked_up = urls_known(
        link.url
        for _page, ex in parsed
        if ex is not None
        for link, _over in _links_of(ex)
        if rules.check_resources or not link.resource
    )
    settled = {url for url, pk in looked_up.ids.items() if pk not in looked_up.liftable}
    new: dict[str, NewUrl] = {}
    followed: dict[str, int] = {}  # url -> the smallest depth it is followed at, from this batch
    for page, ex in parsed:
        if ex is None:
            continue
        depth = page.depth + 1
        of_jobs = admission.applies(page.url_id)
        for link, over in _links_of(ex):
            if (link.resource and not rules.check_resources) or link.url in settled:
                continue
            reason = notfollowed.TOO_MANY_LINKS if over else not_followed_reason(ex, link, depth, rules)
            candidate = new_url_from(
                page, link.url, depth=depth, resource=link.resource, offsite_depth=rules.offsite_depth
            )
            if of_jobs:
                # The jobs' depth and scope stand in for the global ones; nofollow and length still hold.
                if reason == notfollowed.TOO_DEEP:
                    reason = ""
                candidate = admission.candidate(dataclasses.replace(candidate, exclusion_reason=reason))
                reason = ""
            if reason and not candidate.exclusion_reason:
                candidate = NewUrl(
                    link.url, depth, scope=candidate.scope, exclusion_reason=reason, resource=link.resource
                )
            if not candidate.exclusion_reason:
                followed[link.url] = min(depth, followed.get(link.url, depth))
            known = new.get(link.url)
            # A followed occurrence wins over an excluded one, then the shallowest, then a page over a resource.
            if known is None or (known.exclusion_reason, known.depth, known.resource) > (
                candidate.exclusion_reason,
                depth,
                candidate.resource,
            ):
                new[link.url] = candidate

    # The new URLs first, each statement committed on its own: an insert waits for any other transaction
    # inserting the same URL, so in one long transaction with the rest, extract tasks queued behind each
    # other for whole batches. A URL committed before its links is harmless: a redelivered
    # message finds it known, and the page stays unextracted until the links are written.
    # Their commits do not wait for the disk (unflushed_commits): a crash of PostgreSQL loses at most the last of
    # them, in order, so a page whose extraction was lost is unextracted again and the reconciler sends it again
    # (CRAWL_REDISPATCH_AFTER), and the URLs of a lost insert are inserted again then.
    with unflushed_commits():
        inserted = urls_insert(urls=list(new.values()), known=looked_up)
        ids = inserted.ids
        admission.record(ids)
        with transaction.atomic():
            # Only the URLs the lookup found set aside for a liftable reason are offered to the lift (usually
            # none): the guarded update probes every id it is given (hundreds a batch).
            depths = {ids[url]: depth for url, depth in followed.items() if ids.get(url) in inserted.liftable}
            links = {
                (page.url_id, ids[link.url]): (link.text, link.element, link.nofollow, _fragments(link))
                for page, ex in parsed
                if ex is not None
                for link, _over in reversed(_links_of(ex))  # reversed: the first occurrence on the page is the one kept
                if link.url in ids and (ids[link.url] != page.url_id or _names_nothing_here(link, ex))
            }
            link_rows = [(*key, *links[key]) for key in sorted(links)]
            page_rows = [
                (
                    page.id,
                    ex.title if ex else "",
                    ex.description if ex else "",
                    "\n".join(ex.anchors) if ex and ex.anchors is not None else None,
                    ex.problem if ex else "",
                    stored_text(ex),
                )
                for page, ex in parsed
            ]
            index_rows = [
                (page.id, *(_index_text(page, ex) if indexing else NOT_INDEXED).as_row()) for page, ex in parsed
            ]
            now = timezone.now()
            _record_limits(parsed)
            lifted = _record(depths, link_rows, page_rows, index_rows, now)
    # Pages that look built by JavaScript go to the render agent (its messages sent after this commit).
    pages_render_flag(pages=_render_candidates(parsed))
    # After the commit: the servers' guarded dispatch marks are not held locked through the broker's sends.
    servers_dispatch_with_due_work(server_ids=inserted.server_ids | lifted)
    outcome.pages, outcome.links, outcome.new_urls = len(pages), len(links), len(looked_up.hashes)
    return outcome


def _render_candidates(parsed: list[tuple[StoredPage, Extracted | None]]) -> list[ExtractedPage]:
    """The batch's pages read from their raw bodies (a rendered one is not rendered again)."""
    return [
        ExtractedPage(page.id, page.url_id, page.body, page.content_type, ex.text, ex.urls, page.of_job)
        for page, ex in parsed
        if ex is not None and not page.dom_z and not ex.problem
    ]


def _parse_pages(pages: list[StoredPage]) -> list[tuple[StoredPage, Extracted | None]]:
    """Each page parsed (None when the parser failed on it), in a child process (crawler.child.run_each), each
    page within CRAWL_PARSE_TIMEOUT and CRAWL_PARSE_MEMORY_MB: whatever a page holds, its parse ends there and
    the page is classified over the bound (LIMIT_TIME, LIMIT_MEMORY), and the batch goes on.

    While a parse runs, this worker's thread is free: every quarter of CRAWL_REDISPATCH_AFTER it moves the
    pages' extract_dispatched_at on, however long one page takes, so the reconciler never takes a batch a
    live worker holds for lost (and never starts a second parse of it); once this worker is gone, its child
    is gone too (its own timer), and the batch is sent again. Before the first parse only a batch that waited
    in the queue more than half of CRAWL_REDISPATCH_AFTER says so: any other still has two beats (a quarter
    of it each) before the reconciler could take it, and the first beat moves it on. That write is a second
    update of every page it names (a new row version each), and in a crawl whose extraction lags its loading
    most batches wait a beat or more."""
    ids = [page.id for page in pages]

    def alive() -> None:
        Page.objects.filter(id__in=ids, extracted_at__isnull=True).update(extract_dispatched_at=timezone.now())

    if any(page.waited for page in pages):
        alive()
    known = _known_copies(pages)
    todo, same_as = _to_parse(pages, known)
    results = parse_bounded(todo, _read_page, on_beat=alive)
    done: dict[int, Extracted | None] = dict(known)
    for page, result in zip(todo, results, strict=True):
        done[page.id] = _parse_outcome(page, result)
    for page_id, first_id in same_as.items():
        first = done[first_id]
        done[page_id] = dataclasses.replace(first) if first is not None else None
    return [(page, done[page.id]) for page in pages]


def parse_bounded(
    items: Sequence[T], read: Callable[[T], Extracted], *, on_beat: Callable[[], None] | None = None
) -> list[ChildResult]:
    """`read(item)` for each item, in a child process, each within CRAWL_PARSE_TIMEOUT and
    CRAWL_PARSE_MEMORY_MB (crawler.child.run_each); `on_beat` every quarter of CRAWL_REDISPATCH_AFTER while
    it waits. The one way a stored answer is parsed: an HTML page or a PDF (read_stored), and a page's
    rendered DOM (its serialised HTML through crawler.parse.extract) when rendering feeds this path."""
    return run_each(
        read,
        items,
        deadline_s=settings.CRAWL_PARSE_TIMEOUT,
        memory_bytes=settings.CRAWL_PARSE_MEMORY_MB * 1024 * 1024,
        beat_s=max(0.25, settings.CRAWL_REDISPATCH_AFTER / 4),
        on_beat=on_beat,
    )


def _read_page(page: StoredPage) -> Extracted:
    """In the parse's child: what the stored page says, its labels clean."""
    return _labels_clean(read_stored(page.body, page.url, page.content_type))


def _parse_outcome(page: StoredPage, result: ChildResult) -> Extracted | None:
    if result.ok:
        return result.value
    stopped = PARSE_STOPPED.get("timeout" if result.timed_out else result.error)
    if stopped is not None:
        # Over the hard bound: nothing of the page is kept but the fact, and the page moves on (extracted).
        limit, problem = stopped
        return Extracted(base_url=page.url, limits=[limit], problem=problem)
    # A parser bug, or a child that died: the page is marked and logged, the batch goes on.
    log.error("extract failed for page %s (%s): %s", page.id, page.url[:200], result.error[:500])
    return None


def _to_parse(pages: list[StoredPage], known: dict[int, Extracted]) -> tuple[list[StoredPage], dict[int, int]]:
    """The pages to parse, and the PDFs of the batch that are byte for byte one parsed with them (page id ->
    that page's id): a PDF is read once a batch."""
    todo: list[StoredPage] = []
    same_as: dict[int, int] = {}
    first_of: dict[str, StoredPage] = {}
    for page in pages:
        if page.id in known:
            continue
        if page.checksum and is_pdf(page.content_type):
            first = first_of.setdefault(page.checksum, page)
            if first is not page:
                same_as[page.id] = first.id
                continue
        todo.append(page)
    return todo, same_as


def _known_copies(pages: list[StoredPage]) -> dict[int, Extracted]:
    """The PDFs of the batch whose bytes an earlier page already had extracted (same checksum): what that page
    said, its links read back from its link rows, instead of a second read. A PDF's read is the costly one
    (pure Python, up to crawler.pdf.MAX_SECONDS), and such a page is a duplicate anyway (_record). HTML is
    parsed again: it is cheap, and its relative links depend on its own URL."""
    pdfs = [page for page in pages if page.checksum and is_pdf(page.content_type)]
    if not pdfs:
        return {}
    originals: dict[str, tuple] = {}
    rows = (
        Page.objects.filter(checksum__in={page.checksum for page in pdfs}, extracted_at__isnull=False)
        .exclude(text=None)
        .order_by("id")
        .values_list("checksum", "id", "url_id", "title", "description", "text", "extract_problem")
    )
    for checksum, *row in rows:
        originals.setdefault(checksum, tuple(row))
    out: dict[int, Extracted] = {}
    links_of: dict[int, list[tuple]] = {}
    for page in pdfs:
        original = originals.get(page.checksum)
        if original is None or original[0] == page.id:
            continue
        _pk, url_id, title, description, text, problem = original
        if url_id not in links_of:
            links_of[url_id] = list(
                Link.objects.filter(from_url_id=url_id)
                .order_by("id")
                .values_list("to_url__url", "element", "anchor_text", "nofollow")
            )
        links = [Found(url, element, anchor, nofollow) for url, element, anchor, nofollow in links_of[url_id]]
        out[page.id] = Extracted(
            title=title, description=description, links=links, base_url=page.url, anchors=None, text=text,
            problem=problem,
        )  # fmt: skip
    return out


def stored_text(ex: Extracted | None) -> str:
    """What a page says, as kept on its row for search snippets (search.selectors): its visible text and its
    description, whitespace collapsed, so that a search never parses a page again."""
    if ex is None:
        return ""
    return " ".join(" ".join(t for t in (ex.text, ex.description) if t).split())


def _links_of(ex: Extracted) -> list[tuple[Found, bool]]:
    """The page's links, each with whether it is past the page's bound of links followed (recorded, set aside)."""
    return [(link, False) for link in ex.links] + [(link, True) for link in ex.over_limit]


def _record_limits(parsed: list[tuple[StoredPage, Extracted | None]]) -> None:
    """A page over one of the parse's bounds (crawler.parse: bytes, attributes, nesting, links) says which on
    its URL, as what was wrong with the response (failure_kind, when nothing else was)."""
    for page, ex in parsed:
        if ex is not None and ex.limits:
            kind = ("parse:" + ",".join(ex.limits))[:32]
            log.warning("page %s (%s) is over the parse bounds: %s", page.id, page.url[:200], ", ".join(ex.limits))
            Url.objects.filter(id=page.url_id, failure_kind="").update(failure_kind=kind)


def read_stored(body: bytes, url: str, content_type: str) -> Extracted:
    """What a stored body says: an HTML page parsed (crawler.parse), a PDF read (crawler.pdf)."""
    if is_pdf(content_type):
        return extract_pdf(body, url)
    return extract(body, url, content_type=content_type or None)


NOT_INDEXED = IndexText("", "", "", "")  # SEARCH_INDEX off: an empty index (the statements keep their shape)


def _index_text(page: StoredPage, ex: Extracted | None) -> IndexText:
    """The page's fields for the full-text index (crawler.fulltext), with the anchor text of links to it."""
    if ex is None:
        return IndexText.of(title="", description="", headings="", anchors=page.inbound or "", body="")
    return IndexText.of(
        title=ex.title, description=ex.description, headings=ex.headings, anchors=page.inbound or "", body=ex.text
    )


def _record(
    depths: dict[int, int], link_rows: list[tuple], page_rows: list[tuple], index_rows: list[tuple], now: datetime
) -> set[int]:
    """The batch's writes after its new URLs, as one chain (crawlcore.db.chain: one statement on PostgreSQL):
    the exclusions lifted, the links, the pages' extraction, their full-text index and their duplicate mark.
    The servers of the URLs lifted.

    A URL is lifted when it was set aside only for how it was first found (too deep, nofollow:
    notfollowed.LIFTABLE) and is now found through a link that is followed: due now, at the new depth; one
    set aside for another reason, or no longer Init, is untouched. A link already known is left as it is. A
    page already extracted (a redelivered message) is not written again; a page whose body has the same
    checksum as an earlier page is a duplicate of the earliest one."""
    url, page = Url._meta.db_table, Page._meta.db_table
    liftable = ", ".join(f"'{reason}'" for reason in notfollowed.LIFTABLE)
    # `p.id + 0`, not `p.id`: for min(p.id) PostgreSQL walks the primary key from the smallest id and tests
    # each page's checksum until one matches, which for a new body (the page itself, the newest) is the whole
    # table: quadratic over a crawl, soon most of PostgreSQL's time. An expression
    # takes the rows page_checksum_idx finds (one or a few) instead.
    first = f"(SELECT min(p.id + 0) FROM {page} p WHERE p.checksum = {page}.checksum)"
    writes = [
        Update(
            "lifted",
            url,
            key="id",
            set={"exclusion_reason": Const("", "text"), "depth": "depth", "next_check_at": Const(now, "timestamptz")},
            where=Sql(f"{url}.exclusion_reason IN ({liftable}) AND {url}.state = '{State.INIT.value}'"),
            returning=("server_id",),
            source="lift",
        ),
        # A link already known is left out by its key (from, to) alone: the serial primary key is never probed.
        Insert(
            "linked",
            Link._meta.db_table,
            {c: c for c in LINK_COLUMNS},
            conflict="from_url_id, to_url_id",
            ignore_conflicts=True,
            source="links",
        ),
        Update(
            "extracted",
            page,
            key="id",
            set={
                "title": "title",
                "description": "description",
                "anchors": "anchors",
                "extract_problem": "extract_problem",
                "text": "text",
                "search_vector": SearchVector(),
                "extracted_at": Const(now, "timestamptz"),
                # A page whose body has the same checksum as an earlier page is a duplicate of the earliest one.
                "duplicate_of_id": Sql(f"CASE WHEN {page}.checksum <> '' THEN NULLIF({first}, {page}.id) END"),
            },
            where=Sql(f"{page}.extracted_at IS NULL"),
            returning=(),
            source="pages",
        ),
    ]
    inputs = {
        "lift": Input((("id", "bigint"), ("depth", "integer")), sorted(depths.items())),
        "links": Input(
            (
                ("from_url_id", "bigint"),
                ("to_url_id", "bigint"),
                ("anchor_text", "text"),
                ("element", "text"),
                ("nofollow", "boolean"),
                ("fragments", "text"),
            ),
            link_rows,
        ),
        "pages": Input(
            (
                ("id", "bigint"),
                ("title", "text"),
                ("description", "text"),
                ("anchors", "text"),
                ("extract_problem", "text"),
                ("text", "text"),
                ("ix_title", "text"),
                ("ix_heads", "text"),
                ("ix_anchors", "text"),
                ("ix_body", "text"),
            ),
            [(*page, *index[1:]) for page, index in zip(page_rows, index_rows, strict=True)],
        ),
    }
    out = chain(inputs, writes)
    return {server_id for (server_id,) in out["lifted"]}


def _names_nothing_here(link: Found, ex: Extracted) -> bool:
    """A link from a page to itself is no edge of the crawl's graph and is not stored, except when one of
    its #fragments names no element of the page: then it is a broken link a reader meets (the link reports
    read it like any other missing anchor)."""
    if not link.fragments:
        return False
    anchors = "\n".join(ex.anchors)
    return any(fragment_missing(fragment, anchors) for fragment, _ in link.fragments)


def _fragments(link: Found) -> str:
    # Tabs and line ends separate the fields; an anchor text has neither (whitespace collapsed), a fragment
    # may: those are dropped, no element id can match them anyway.
    if not link.fragments:
        return ""
    return "\n".join(f"{f}\t{text}" for f, text in link.fragments if "\t" not in f and "\n" not in f)


TEXT_FILL_BATCH = 500
TEXT_FILL_BUDGET_S = 20.0  # a run stops starting new pages past this (each is bounded by CRAWL_PARSE_TIMEOUT)
TEXT_FILL_CHUNK = 25


def pages_text_fill(*, limit: int = TEXT_FILL_BATCH, budget_s: float = TEXT_FILL_BUDGET_S) -> int:
    """Keep the text of up to `limit` pages extracted without it (NULL: before Page.text was kept, or a type
    that is not parsed, whose text is ""), those that are parsed read again in the parse's child within its
    bounds: the search's snippets then come from it. Run with the reconciler, a bounded batch each time
    (page_text_missing_idx finds them), so an upgrade is never one long pass over every page. Returns the
    pages written."""
    rows = list(
        Page.objects.filter(extracted_at__isnull=False, text=None)
        .order_by("id")
        .values_list("id", "body_z", "content_type", "url__url")[:limit]
    )
    if not rows:
        return 0
    parsed = [row for row in rows if is_pdf(row[2]) or is_html(row[2] or None)]
    unparsed = [row[0] for row in rows if not (is_pdf(row[2]) or is_html(row[2] or None))]
    Page.objects.filter(id__in=unparsed, text=None).update(text="")
    end = time.monotonic() + budget_s
    written = len(unparsed)
    for i in range(0, len(parsed), TEXT_FILL_CHUNK):
        if time.monotonic() > end:
            break
        stored = [
            StoredPage(pk, 0, body_z, content_type or "", "", url, 0, "", "", 0, False, False, None)
            for pk, body_z, content_type, url in parsed[i : i + TEXT_FILL_CHUNK]
        ]
        results = parse_bounded(stored, _read_page)
        with transaction.atomic():
            for page, result in zip(stored, results, strict=True):
                # A page that cannot be read within the bounds keeps an empty text: it is not tried again.
                text = stored_text(result.value if result.ok else None)
                Page.objects.filter(id=page.id, text=None).update(text=text)
        written += len(stored)
    return written
