"""Rendering pages built by JavaScript: which pages go to the render agent (asked by the extract agent
after each batch), and the render agent's work on one page.

The page is fetched again in headless Chromium (crawler.render) through the frontier: the render agent
opens a visit of the page's server like any agent that sends requests (crawlcore.services.visit: one of the
server's slots, its politeness turn, its robots.txt, its host state), and every request the browser makes
is answered by our own fetcher under the private-address guard:

- the page's own document: robots.txt, the server's turn, a status check like any request of the visit;
- other requests to the page's server: robots.txt for documents (frames), the server's turn, the guard;
- requests to other servers: the guard of a host nobody vouched for; a document (frame) of another
  server is refused (its robots.txt is not known to this visit), and so is any navigation away from the page;
- only GET and HEAD: a page's script never makes the crawler write to a server;
- no images, media, fonts or stylesheets: a page's links and text do not depend on them.

The rendered DOM is stored beside the raw body (Page.dom_z) and the page is handed to the extract agent
again, which reads the DOM in place of the body: its links, text and title enter the same extract path.
Whether the DOM gave more than the raw body is a sample of the host's decision (crawler.render_need).
"""

from __future__ import annotations

import logging
import threading
import zlib
from dataclasses import dataclass, field
from datetime import datetime
from urllib.parse import urlsplit

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from crawlcore.models import Job, JobUrl, Page, Server
from crawler import render_need
from crawler.http import FetchResult
from crawler.lifecycle import Agent
from crawler.parse import extract, is_html
from crawler.render import Answer, RenderBounds, RenderFailed, RenderPool, SubRequest
from crawler.robots import RobotsRules
from crawler.urlnorm import UrlError, canonicalize

from ..queues import Queue
from ..selectors import pages_to_render
from .queue import enqueue_extract_on_commit, queue_backlog
from .visit import ServerVisit, address_check_for, thread_fetcher, untrusted_address_check

log = logging.getLogger(__name__)

RENDER_TASK = "tasks.render.render_page"
DECISION = render_need.HostDecision()
ALLOWED_METHODS = frozenset({"GET", "HEAD"})
# What a page's links, text and title never depend on: not fetched at all (no request, no cost). Images and
# the rest are checked by the load agent as the DOM's resources, like those of any page.
NOT_NEEDED = frozenset({"image", "media", "font", "stylesheet", "manifest", "texttrack", "ping", "beacon", "other"})


# -- which pages are rendered (the extract agent asks) ----------------------------------------------------


def page_render_mode(*, job_modes: list[str]) -> str:
    """auto, always or never for a page: its jobs' `render` keys (the most rendering of them), or
    CRAWL_RENDER for a page no job reached or whose jobs leave it to the setting."""
    modes = {mode or settings.CRAWL_RENDER for mode in job_modes} or {settings.CRAWL_RENDER}
    for mode in ("always", "auto"):
        if mode in modes:
            return mode
    return "never"


@dataclass(frozen=True)
class ExtractedPage:
    """What the extract agent hands over of a page it parsed from its raw body."""

    page_id: int
    url_id: int
    body: bytes
    content_type: str
    text: str
    links: list[str] = field(default_factory=list)
    of_job: bool = False  # a crawl job reached its URL: the jobs' `render` keys count


def pages_render_flag(*, pages: list[ExtractedPage]) -> dict[int, str]:
    """The pages of an extract batch (parsed from their raw bodies) that go to the render agent, with why;
    their reason stored and their render messages sent after commit. A page already rendered never comes
    here (the extract agent read its DOM)."""
    pages = [p for p in pages if is_html(p.content_type or None)]
    if not pages or not settings.CRAWL_RENDER_CHROMIUM:
        return {}
    if settings.CRAWL_RENDER == "never" and not Job.objects.filter(render__in=("auto", "always")).exists():
        return {}  # nothing renders: not even a query more for the batch
    job_modes: dict[int, list[str]] = {}
    of_jobs = [p.url_id for p in pages if p.of_job]
    if of_jobs:  # none of the batch's pages a job's: the job table is not read
        for url_id, mode in JobUrl.objects.filter(url_id__in=of_jobs).values_list("url_id", "job__render"):
            job_modes.setdefault(url_id, []).append(mode)
    servers = dict(
        Page.objects.filter(id__in=[p.page_id for p in pages]).values_list("id", "url__server_id")
    )
    decisions = {
        s.id: s for s in Server.objects.filter(id__in=set(servers.values())).only("render_decision", "render_skipped")
    }
    flagged: dict[int, str] = {}
    skipped: dict[int, int] = {}
    seen: dict[int, int] = {}
    for page in pages:
        mode = page_render_mode(job_modes=job_modes.get(page.url_id, []))
        if mode == "never":
            continue
        if mode == "always":
            flagged[page.page_id] = render_need.ALWAYS
            continue
        server = decisions.get(servers.get(page.page_id, -1))
        if server is None:
            continue
        seen[server.id] = seen.get(server.id, 0) + 1
        reason = render_need.render_reason(page.body, text=page.text, links=page.links)
        wants = DECISION.wants(
            decision=server.render_decision, flagged=bool(reason), seen_since=server.render_skipped
        )
        if wants:
            flagged[page.page_id] = reason or render_need.HOST
        elif reason:
            skipped[server.id] = skipped.get(server.id, 0) + 1
    for server_id, n in seen.items():
        Server.objects.filter(id=server_id).update(
            render_seen=F("render_seen") + n, render_skipped=F("render_skipped") + skipped.get(server_id, 0)
        )
    now = timezone.now()
    for page_id, reason in flagged.items():
        # Guarded: a page rendered already (a redelivered batch) is not sent again.
        if Page.objects.filter(id=page_id, rendered_at__isnull=True).update(
            render_reason=reason, render_problem="", render_attempts=0, render_dispatched_at=now
        ):
            enqueue_render_on_commit(page_id=page_id)
    return flagged


def pages_render_redispatch(*, stale: datetime, now: datetime) -> int:
    """Send again the render messages of flagged pages not rendered whose message was sent before `stale`
    (lost with a worker or the broker); a page whose render is under way or retrying moves its mark on."""
    if queue_backlog(Queue.RENDER.value):
        return 0
    lost = list(
        pages_to_render()
        .filter(Q(render_dispatched_at__isnull=True) | Q(render_dispatched_at__lt=stale))
        .values_list("id", flat=True)[:1000]
    )
    for page_id in lost:
        Page.objects.filter(id=page_id).update(render_dispatched_at=now)
        enqueue_render_on_commit(page_id=page_id)
    return len(lost)


def enqueue_render_on_commit(*, page_id: int, countdown: float | None = None) -> None:
    transaction.on_commit(
        lambda: current_app.send_task(RENDER_TASK, args=[page_id], queue=Queue.RENDER.value, countdown=countdown)
    )


# -- the render agent's work ----------------------------------------------------------------------------

_pool: RenderPool | None = None
_pool_lock = threading.Lock()


def render_pool() -> RenderPool:
    """The process's browsers (CRAWL_RENDER_BROWSERS of them), started on first use."""
    global _pool
    with _pool_lock:
        if _pool is None:
            bounds = RenderBounds(
                page_seconds=settings.CRAWL_RENDER_PAGE_SECONDS,
                pages_per_browser=settings.CRAWL_RENDER_PAGES_PER_BROWSER,
                browser_memory_mb=settings.CRAWL_RENDER_BROWSER_MEMORY_MB,
                browsers=settings.CRAWL_RENDER_BROWSERS,
                settle_ms=settings.CRAWL_RENDER_SETTLE_MS,
            )
            _pool = RenderPool(settings.CRAWL_RENDER_CHROMIUM, bounds, user_agent=settings.CRAWL_USER_AGENT)
        return _pool


def render_pool_close() -> None:
    global _pool
    with _pool_lock:
        if _pool is not None:
            _pool.close()
            _pool = None


@dataclass
class RenderOutcome:
    done: bool  # rendered, or given up for good: nothing more to do for this page
    retry: bool = False  # try again later (the server was busy, or a first failure)
    reason: str = ""


class _Handler:
    """Answers the browser's requests for one page, each through the guard (see the module's docstring)."""

    def __init__(self, visit: ServerVisit, rules: RobotsRules, *, page_url: str, url_id: int) -> None:
        self.visit = visit
        self.rules = rules
        self.page_url = page_url
        self.url_id = url_id
        self.count = 0
        self.main: FetchResult | None = None

    def __call__(self, sub: SubRequest) -> Answer | str:
        self.count += 1
        if self.count > settings.CRAWL_RENDER_REQUESTS:
            return "too many requests"
        if sub.method.upper() not in ALLOWED_METHODS:
            return "not GET"
        if sub.kind in NOT_NEEDED:
            return "not needed to render"
        try:
            url = canonicalize(sub.url)
        except UrlError as exc:
            return f"bad url: {exc.reason}"
        own = self.visit.server.serves(url)
        if sub.main:
            return self._main(url)
        if sub.navigation:
            if not own or sub.kind != "document" or sub.url == self.page_url:
                return "navigation refused"
            if self.rules is not None and not self.rules.allowed(url, self.visit.user_agent):
                return "robots.txt"
        if own:
            if not self.visit.wait_turn():
                return "politeness: no turn left"
            check = address_check_for(self.visit.server)
        else:
            check = untrusted_address_check()
        result = thread_fetcher().fetch(url, method=sub.method.upper(), address_check=check)
        return _answer(result)

    def _main(self, url: str) -> Answer | str:
        if url != self.page_url and not self.visit.server.serves(url):
            return "navigation refused"  # a redirect of the page's own document off its server
        if not self.rules.allowed(url, self.visit.user_agent):
            return "robots.txt"
        if not self.visit.wait_turn():
            return "politeness: no turn left"
        result = self.visit.fetch(url)
        self.visit.record(result, self.url_id if url == self.page_url else None)
        self.main = result
        return _answer(result)


def _answer(result: FetchResult) -> Answer | str:
    if result.status is None or result.incomplete:
        return f"no response: {result.detail}"[:120]
    return Answer(result.status, dict(result.headers), result.body)


def page_render(*, page_id: int, owner: str) -> RenderOutcome:
    """Render one page flagged by the extract agent, store its DOM and hand the page back to the extract
    agent. A page rendered already, or no longer HTML, is done; a busy server is tried again later; a failed
    render (no answer, a crashed or hung browser) is tried again CRAWL_RENDER_ATTEMPTS times in all, then
    the page keeps what its raw body gave, with the reason."""
    page = (
        Page.objects.filter(id=page_id, rendered_at__isnull=True)
        .select_related("url", "url__server")
        .only("id", "body_z", "content_type", "render_attempts", "url__id", "url__url", "url__server__id")
        .first()
    )
    if page is None or not page.url.server_id:
        return RenderOutcome(done=True)
    Page.objects.filter(id=page.id).update(render_dispatched_at=timezone.now())  # under way: not lost
    visit = ServerVisit.open(server_id=page.url.server_id, owner=owner, agent=Agent.RENDER)
    if visit is None:
        return RenderOutcome(done=False, retry=True, reason="server busy")
    try:
        rules = visit.robots()
        if isinstance(rules, FetchResult):
            return _failed(page, "robots.txt did not answer")
        if not rules.allowed(page.url.url, visit.user_agent):
            return _given_up(page, "robots.txt")
        handler = _Handler(visit, rules, page_url=page.url.url, url_id=page.url.id)
        try:
            rendered = render_pool().render(page.url.url, handler)
        except RenderFailed as exc:
            return _failed(page, exc.reason)
    finally:
        visit.close()
    if rendered.refused:
        log.info("render of %s: %d requests refused (%s)", page.url.url[:200], len(rendered.refused),
                 ", ".join(sorted({r for _, r in rendered.refused}))[:200])  # fmt: skip
    if rendered.main is None or not 200 <= rendered.main.status < 300:
        status = rendered.main.status if rendered.main is not None else None
        if status in (429, 503):  # the server asked for patience (its health holds it): later
            return _failed(page, f"document answered {status}")
        return _given_up(page, f"document answered {status}")
    _store(page, rendered.html, rendered.title)
    return RenderOutcome(done=True)


def _store(page: Page, html: str, title: str) -> None:
    """The DOM beside the raw body, the page handed back to the extract agent, and the host's sample: did
    the DOM give links or text the raw body did not."""
    dom = html.encode("utf-8", "replace")
    raw = extract(page.body, page.url.url, content_type=page.content_type or None)
    ren = extract(dom, page.url.url, content_type="text/html; charset=utf-8")
    gain = render_need.render_gain(
        raw_links=set(raw.urls), dom_links=set(ren.urls), raw_text=raw.text, dom_text=ren.text
    )
    now = timezone.now()
    with transaction.atomic():
        stored = Page.objects.filter(id=page.id, rendered_at__isnull=True).update(
            dom_z=zlib.compress(dom, 6), rendered_at=now, render_problem="", extracted_at=None,
            extract_dispatched_at=now,
        )  # fmt: skip
        if not stored:
            return  # another render got there first
        server_render_sample(server_id=page.url.server_id, gained=gain)
        enqueue_extract_on_commit(page_ids=[page.id])


def server_render_sample(*, server_id: int, gained: bool) -> str:
    """Count a rendered page of the server and decide again (crawler.render_need.HostDecision)."""
    Server.objects.filter(id=server_id).update(
        render_samples=F("render_samples") + 1, render_gains=F("render_gains") + int(gained), render_skipped=0
    )
    server = Server.objects.only("render_decision", "render_seen", "render_samples", "render_gains").get(id=server_id)
    decision = DECISION.decide(
        current=server.render_decision, seen=server.render_seen, samples=server.render_samples,
        gains=server.render_gains,
    )  # fmt: skip
    if decision != server.render_decision:
        Server.objects.filter(id=server_id).update(render_decision=decision.value)
        log.info("server %s: rendering decision %r after %d samples (%d gained)", server_id, decision.value,
                 server.render_samples, server.render_gains)  # fmt: skip
    return decision.value


def _failed(page: Page, reason: str) -> RenderOutcome:
    attempts = page.render_attempts + 1
    if attempts >= settings.CRAWL_RENDER_ATTEMPTS:
        return _given_up(page, reason)
    Page.objects.filter(id=page.id).update(render_attempts=attempts, render_problem=reason[:200])
    return RenderOutcome(done=False, retry=True, reason=reason)


def _given_up(page: Page, reason: str) -> RenderOutcome:
    """The page is not rendered: it keeps what its raw body gave, and says why."""
    log.warning("render of %s given up: %s", page.url.url[:200], reason)
    Page.objects.filter(id=page.id).update(
        render_attempts=settings.CRAWL_RENDER_ATTEMPTS, render_problem=reason[:200] or "failed"
    )
    return RenderOutcome(done=True, reason=reason)


def page_render_give_up(*, page_id: int, reason: str) -> None:
    Page.objects.filter(id=page_id, rendered_at__isnull=True).update(
        render_attempts=settings.CRAWL_RENDER_ATTEMPTS, render_problem=reason[:200] or "failed"
    )


def answer_render(*, url: str, status: int | None, headers: dict[str, str], body: bytes, own_check) -> bytes | str:
    """The DOM a browser makes of an answer already fetched (a monitor's check): its document is that
    answer, no second request; the page's other requests are fetched under `own_check` on its own host
    and the private-address guard elsewhere (GET only, nothing a render does not need, no navigation).
    The DOM as UTF-8, or why it could not be rendered."""
    if status is None or not settings.CRAWL_RENDER_CHROMIUM:
        return "no browser" if status is not None else "no answer"
    host = urlsplit(url).hostname
    count = 0

    def handler(sub: SubRequest) -> Answer | str:
        nonlocal count
        count += 1
        if sub.main:
            return Answer(status, dict(headers), body)
        if count > settings.CRAWL_RENDER_REQUESTS:
            return "too many requests"
        if sub.navigation or sub.method.upper() not in ALLOWED_METHODS or sub.kind in NOT_NEEDED:
            return "not needed to render"
        check = own_check if urlsplit(sub.url).hostname == host else untrusted_address_check()
        return _answer(thread_fetcher().fetch(sub.url, method=sub.method.upper(), address_check=check))

    try:
        return render_pool().render(url, handler).html.encode("utf-8", "replace")
    except RenderFailed as exc:
        return exc.reason
