"""Crawl jobs: which links a job's pages lead it to (admission), and the job's life (start, pause, resume,
stop, finish, the periodic tick of schedules and windows).

A job's URLs are the Url rows with a JobUrl row for it. A URL reached by two jobs is one row, fetched once,
and counts for both. Only a job's own pages lead it on: a link found on a page of job A is followed for A
when A's scope, depth, patterns and page budget allow it, whatever the default crawl or job B would do.

A job that is not running holds no slot and fetches nothing: its queued URLs (Init, due, not leased) are set
aside with the reason (`job paused`, `job stopped`, `job outside its window`) unless another running job
also reached them, and taken back when it runs again. The hot paths (claim, dispatch) therefore need no
knowledge of jobs: a set-aside URL is simply never due.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, F, Max, OuterRef
from django.utils import timezone

from crawlcore.db.bulk import insert_ignore
from crawlcore.models import Job, JobRun, JobUrl, Link, Page, Url
from crawlcore.selectors_jobs import job_counts, job_stalled
from crawler import jobrules, notfollowed
from crawler.child import run_each
from crawler.jobrules import PathRules
from crawler.lifecycle import State
from crawler.scope import Scope, registered_domain
from crawler.urlnorm import server_key
from crawler.userregex import COMPILE_MEMORY_BYTES

from .load_dispatch import servers_dispatch_with_due_work
from .urls import NewUrl, urls_insert, urls_known

log = logging.getLogger(__name__)

# Pages a walk over stored pages reads the links of in one call (job_walk_stored): the job's depth and page
# budget bound it first in every ordinary case.
WALK_MAX = 20_000

# The events of a job's run, each told once a run, in the transaction of the write that decides it. The
# alerts app (above the crawl core) registers the hook that writes them to the outbox (alerts.apps).
STARTED, FINISHED, STALLED, BUDGET_REACHED = "job.started", "job.finished", "job.stalled", "job.budget_reached"
EventHook = Callable[[str, Job, JobRun, dict], None]
_event_hooks: list[EventHook] = []


def on_job_event(hook: EventHook) -> None:
    if hook not in _event_hooks:
        _event_hooks.append(hook)


def _tell(kind: str, *, job: Job, run: JobRun, facts: dict | None = None) -> None:
    """Hand an event of the run to the hooks, in the caller's transaction. A hook's failure rolls back the
    write that decided the event, so it is told with it or not at all."""
    for hook in _event_hooks:
        hook(kind, job, run, facts or {})

# The reasons a job sets its queued URLs aside for while it does not run: taken back when it runs again.
HELD = (jobrules.JOB_PAUSED, jobrules.JOB_STOPPED, jobrules.OUTSIDE_WINDOW)
BUDGET_TRIES = 8
PATTERNS_HARD_STOP_AFTER_S = 0.5  # past a page's budget, its patterns' child is killed


class JobError(ValueError):
    """An action that does not apply to the job as it is (start a running job, resume a stopped one)."""


@dataclass(frozen=True)
class JobRules:
    """One job's rules as extraction applies them, read once a batch."""

    id: int
    state: str
    scope: str
    roots: frozenset[str]
    max_depth: int
    max_pages: int | None
    paths: PathRules
    windows: tuple[str, ...]
    time_zone: str

    @classmethod
    def of(cls, job: Job) -> JobRules:
        hosts = {server_key(seed).host for seed in job.seeds}
        roots = frozenset(h if job.scope == "host" else registered_domain(h) for h in hosts)
        max_depth = settings.CRAWL_MAX_DEPTH if job.max_depth is None else job.max_depth
        return cls(job.id, job.state, job.scope, roots, max_depth, job.max_pages,
                   PathRules(tuple(job.include), tuple(job.exclude)), tuple(job.windows), job.time_zone)  # fmt: skip

    def in_scope(self, host: str) -> bool:
        if self.scope == "any":
            return True
        host = host.lower()
        return (host if self.scope == "host" else registered_domain(host)) in self.roots

    def reason(self, url: str, depth: int) -> str:
        """Why the job does not take this URL in ("" when it may), its patterns (`paths`, judged a page at a
        time: _path_verdicts), state and budget aside."""
        if not self.in_scope(server_key(url).host):
            return "out of scope"
        if depth > self.max_depth:
            return "too deep"
        return ""

    def held_reason(self, now: datetime) -> str:
        """Why the job's new URLs wait ("" when they are due now)."""
        if self.state == Job.PAUSED:
            return jobrules.JOB_PAUSED
        if self.state != Job.RUNNING:
            return jobrules.JOB_STOPPED
        if not jobrules.in_windows(self.windows, now.astimezone(ZoneInfo(self.time_zone))):
            return jobrules.OUTSIDE_WINDOW
        return ""


@dataclass
class Admission:
    """What a batch's job pages make of their links: the jobs each URL joins (with its depth for the job),
    and for a URL that no job of its page takes in, why."""

    joins: dict[str, dict[int, int]] = field(default_factory=dict)  # url -> {job id: depth}
    reasons: dict[str, str] = field(default_factory=dict)  # url -> why set aside
    parents: set[int] = field(default_factory=set)  # the job pages among the batch's parents
    rules: dict[int, JobRules] = field(default_factory=dict)
    joined: set[str] = field(default_factory=set)  # URLs due in the crawl already when the jobs reached them

    def applies(self, parent_id: int) -> bool:
        return parent_id in self.parents

    def candidate(self, new: NewUrl) -> NewUrl:
        """`new` (a link of a job page) with the jobs' verdict: followed when a job takes it in and runs."""
        reason = self.reasons.get(new.url, "")
        if new.exclusion_reason and new.exclusion_reason != "out of scope" and not reason:
            reason = new.exclusion_reason  # nofollow, too long: about the link, whichever job follows it
        return NewUrl(new.url, new.depth, new.redirect_hops, new.scope, exclusion_reason=reason,
                      resource=new.resource)  # fmt: skip

    def followed(self, url: str) -> bool:
        return url in self.joins and not self.reasons.get(url)

    def record(self, ids: dict[str, int], *, walk: bool = True) -> list[int]:
        """Write the JobUrl rows of the URLs taken in (after their insert): a running job's politeness then
        applies to the servers they are on (selectors_jobs.jobs_politeness), never written onto them. A URL
        a job reaches that was fetched and extracted already (by another crawl or job) is walked on at once
        (job_walk_stored), unless `walk` is off (the walk itself): the ids of the URLs newly joined that were
        fetched already."""
        rows = sorted({(job_id, ids[url], depth, url in self.joined) for url, jobs in self.joins.items()
                       if url in ids for job_id, depth in jobs.items()})  # fmt: skip
        if not rows:  # no job page in the batch (most batches): nothing to read or write
            return []
        url_ids = {r[1] for r in rows}
        have = set(JobUrl.objects.filter(job_id__in={r[0] for r in rows}, url_id__in=url_ids)
                   .values_list("job_id", "url_id"))  # fmt: skip
        insert_ignore(JobUrl._meta.db_table, ("job_id", "url_id", "depth", "joined"), rows)
        joined = {r[1] for r in rows if (r[0], r[1]) not in have}
        fetched = _fetched(joined)
        if walk and fetched:
            job_walk_stored(url_ids=fetched)
        return fetched


def jobs_admit(*, links: Sequence[tuple[int, str, int]], now: datetime | None = None) -> Admission:
    """Decide for each (parent URL id, URL, depth step) which of the parent's jobs take the URL in: a link
    is one step from its page, a redirect or a page's sitemap entry as given. Parents that belong to no job
    are left out (the default crawl's rules apply to them). One indexed read when no parent is a job page."""
    admission = Admission()
    parents = {p for p, _, _ in links}
    if not parents:
        return admission
    memberships: dict[int, list[tuple[int, int]]] = {}
    for url_id, job_id, depth in JobUrl.objects.filter(url_id__in=parents).values_list("url_id", "job_id", "depth"):
        memberships.setdefault(url_id, []).append((job_id, depth))
    if not memberships:
        return admission
    now = now or timezone.now()
    admission.parents = set(memberships)
    admission.rules = {j.id: JobRules.of(j) for j in Job.objects.filter(id__in={j for m in memberships.values()
                                                                               for j, _ in m})}  # fmt: skip
    first_reason: dict[str, str] = {}
    candidates: list[tuple[int, str, int, int]] = []  # (parent, url, job id, depth)
    patterned: dict[tuple[int, int], dict[str, None]] = {}  # (parent, job id) -> the URLs its patterns judge
    for parent, url, step in links:
        for job_id, parent_depth in memberships.get(parent, ()):
            rules = admission.rules.get(job_id)
            if rules is None:
                continue
            depth = parent_depth + step
            reason = rules.reason(url, depth)
            if reason:
                first_reason.setdefault(url, reason)
                continue
            if rules.paths:
                patterned.setdefault((parent, job_id), {})[url] = None
            candidates.append((parent, url, job_id, depth))
    verdicts = _path_verdicts(patterned, admission.rules) if patterned else {}
    for parent, url, job_id, depth in candidates:
        reason = verdicts.get((parent, job_id, url), "")
        if reason:
            first_reason.setdefault(url, reason)
            continue
        jobs = admission.joins.setdefault(url, {})
        jobs[job_id] = min(depth, jobs.get(job_id, depth))
    known = urls_known(list(admission.joins)) if admission.joins else None
    if known is not None:
        # Known and not set aside: the crawl had it due for its own sake before any of these jobs reached it.
        admission.joined = {u for u, i in known.ids.items() if i not in known.liftable}
    _budget(admission, known)
    parents_of: dict[str, set[int]] = {}
    for parent, url, _ in links:
        if parent in admission.parents:
            parents_of.setdefault(url, set()).add(parent)
    for url in parents_of:
        jobs = admission.joins.get(url)
        if not jobs:
            admission.reasons[url] = first_reason.get(url, jobrules.PAGE_LIMIT)
            continue
        held = [admission.rules[j].held_reason(now) for j in jobs]
        if all(held):
            admission.reasons[url] = held[0]
    return admission


def _path_verdicts(
    patterned: dict[tuple[int, int], dict[str, None]], rules: dict[int, JobRules]
) -> dict[tuple[int, int, str], str]:
    """The jobs' patterns over each page's links ((parent, job id) -> its URLs): (parent, job id, URL) -> ""
    or why not. Each page's links are judged within one budget (crawler.jobrules.PAGE_BUDGET_S), in a child
    process stopped a little after it (crawler.child.run_each), the patterns compiled there: a search stuck
    inside the matcher ends there too, and the links of its page are set aside, never followed blindly."""
    items = [(key, list(urls)) for key, urls in patterned.items()]
    results = run_each(
        lambda item: rules[item[0][1]].paths.reasons(item[1]),
        items,
        deadline_s=jobrules.PAGE_BUDGET_S + PATTERNS_HARD_STOP_AFTER_S,
        memory_bytes=COMPILE_MEMORY_BYTES,
    )
    out: dict[tuple[int, int, str], str] = {}
    for ((parent, job_id), urls), result in zip(items, results, strict=True):
        if not result.ok:
            log.warning("job %s: the patterns over the links of page %s stopped (%s)", job_id, parent, result.error)
        verdicts = result.value if result.ok else [jobrules.EXCLUDED_BY_PATTERN] * len(urls)
        for url, verdict in zip(urls, verdicts, strict=True):
            out[(parent, job_id, url)] = verdict
    return out


def _budget(admission: Admission, found=None) -> None:
    """Drop the joins beyond each job's max_pages. A URL the job reached already costs nothing; the new
    ones take what is left of the budget with one guarded update, shallowest first. `found`: the lookup of
    the joins' URLs made already."""
    capped = {j for j, r in admission.rules.items() if r.max_pages is not None}
    if not capped or not admission.joins:
        return
    urls = list(admission.joins)
    known = (found or urls_known(urls)).ids
    have = set(
        JobUrl.objects.filter(job_id__in=capped, url_id__in=list(known.values())).values_list("job_id", "url_id")
    )
    for job_id in sorted(capped):
        wanted = sorted(
            ((jobs[job_id], url) for url, jobs in admission.joins.items()
             if job_id in jobs and (job_id, known.get(url)) not in have),
        )  # fmt: skip
        granted = budget_take(job_id=job_id, want=len(wanted), max_pages=admission.rules[job_id].max_pages or 0)
        for _, url in wanted[granted:]:
            del admission.joins[url][job_id]
            if not admission.joins[url]:
                del admission.joins[url]


def budget_take(*, job_id: int, want: int, max_pages: int) -> int:
    """Take up to `want` of the job's page budget: how many were granted. A guarded compare-and-set on the
    job's count, so two extract workers can never take more than the budget between them."""
    for _ in range(BUDGET_TRIES):
        admitted = Job.objects.filter(id=job_id).values_list("admitted", flat=True).first()
        if admitted is None:
            return 0
        n = min(want, max_pages - admitted)
        if n <= 0:
            return 0
        if Job.objects.filter(id=job_id, admitted=admitted).update(admitted=admitted + n):
            if admitted + n >= max_pages:
                _budget_reached(job_id, max_pages)
            return n
        # Nothing updated: another worker took some of the budget meanwhile; read it again.
    return 0


def _fetched(url_ids: Iterable[int]) -> list[int]:
    """Of these URLs, those fetched already (no longer Init): their pages will not be extracted again."""
    ids = list(url_ids)
    if not ids:
        return []
    return sorted(Url.objects.filter(id__in=ids).exclude(state=State.INIT.value).values_list("id", flat=True))


def job_walk_stored(*, url_ids: Iterable[int], max_pages: int = WALK_MAX) -> int:
    """Lead the jobs on from pages they reach that were fetched and extracted before (by another crawl, or
    another job): their links are in the database, and the pages will not be extracted again, so their
    links are admitted now as an extraction would (the jobs' scope, depth, patterns and budget), breadth
    first through the stored pages the jobs take in. Returns the pages whose links were read."""
    frontier, seen, walked = set(url_ids), set(), 0
    check_resources = settings.CRAWL_CHECK_RESOURCES
    now = timezone.now()
    while frontier and walked < max_pages:
        seen |= frontier
        ready = list(Page.objects.filter(url_id__in=frontier, extracted_at__isnull=False)
                     .values_list("url_id", flat=True)[: max_pages - walked])  # fmt: skip
        if not ready:
            break
        walked += len(ready)
        links = Link.objects.filter(from_url_id__in=ready)
        if not check_resources:
            links = links.filter(to_url__resource=False)
        rows = list(links.values_list("from_url_id", "to_url__url", "to_url_id"))
        admission = jobs_admit(links=[(parent, url, 1) for parent, url, _ in rows], now=now)
        ids = {url: pk for _, url, pk in rows}
        fetched = admission.record(ids, walk=False)
        # Taken in now, a URL the other crawl set aside for how it found it (too deep …) is due for the job.
        followed = [ids[url] for url in admission.joins if admission.followed(url) and url in ids]
        Url.objects.filter(id__in=followed, state=State.INIT.value, exclusion_reason__in=notfollowed.LIFTABLE).update(
            exclusion_reason="", next_check_at=now
        )
        frontier = set(fetched) - seen
    if frontier and walked >= max_pages:
        log.warning("walk over stored pages stopped at %d pages; %d more not walked", walked, len(frontier))
    return walked


def _budget_reached(job_id: int, max_pages: int) -> None:
    """The take that used the budget up tells it, once a run."""
    run = _open_run(job_id)
    if run is None:
        return
    with transaction.atomic():
        if JobRun.objects.filter(id=run.id, budget_reached_at__isnull=True).update(budget_reached_at=timezone.now()):
            _tell(BUDGET_REACHED, job=Job.objects.get(id=job_id), run=run, facts={"max_pages": max_pages})


# -- the job's life --------------------------------------------------------------------------------------
def _job_urls(job_id: int):
    return JobUrl.objects.filter(job_id=job_id).values("url_id")


def job_hold(*, job_id: int, reason: str) -> int:
    """Set the job's queued URLs aside for `reason`, but those another running job reached too and those the
    crawl had due before the job reached them (JobUrl.joined: the default crawl's, which no job would take
    back). Returns how many. A URL a load batch holds (leased) is set aside as well: the batch sees it before
    its request and hands it back unfetched (crawlcore.services.load), so a pause stops the job's requests
    within seconds."""
    others = JobUrl.objects.filter(url_id=OuterRef("pk"), job__state=Job.RUNNING).exclude(job_id=job_id)
    own = JobUrl.objects.filter(job_id=job_id, joined=False).values("url_id")
    return (
        Url.objects.filter(id__in=own, state=State.INIT.value, exclusion_reason="")
        .exclude(Exists(others))
        .update(exclusion_reason=reason, next_check_at=None)
    )


def job_unhold(*, job_id: int, reasons: Sequence[str] = HELD) -> set[int]:
    """Make the job's set-aside URLs due again; the servers they are on."""
    qs = Url.objects.filter(id__in=_job_urls(job_id), state=State.INIT.value, exclusion_reason__in=list(reasons))
    servers = set(qs.values_list("server_id", flat=True).distinct())
    qs.update(exclusion_reason="", next_check_at=timezone.now())
    return servers


def job_seeds_insert(*, job: Job) -> set[int]:
    """The job's seeds as Init URLs (depth 0) and JobUrl rows, the servers they are on."""
    seeds = [NewUrl(u, depth=0, scope=Scope.for_seed(job.scope, server_key(u).host)) for u in job.seeds]
    # Not trusted, unlike the seeds of `crawl URL…` typed in a shell: a job may come from the API, and only a
    # superuser marks a server trusted (to be crawled on a private address).
    before = urls_known([s.url for s in seeds])
    due_before = {i for i, (state, reason) in _states(before.ids.values()).items()
                  if state == State.INIT.value and reason == ""}  # fmt: skip
    inserted = urls_insert(urls=seeds, known=before)
    ids = [inserted.ids[s.url] for s in seeds if s.url in inserted.ids]
    have = set(JobUrl.objects.filter(job_id=job.id, url_id__in=ids).values_list("url_id", flat=True))
    new = [i for i in ids if i not in have]
    if job.max_pages is not None:
        new = new[: budget_take(job_id=job.id, want=len(new), max_pages=job.max_pages)]
    granted = new
    insert_ignore(JobUrl._meta.db_table, ("job_id", "url_id", "depth", "joined"),
                  [(job.id, i, 0, i in due_before) for i in sorted(granted)])  # fmt: skip
    # A seed known already but set aside for how it was found elsewhere (too deep, a pattern) is the job's now.
    lift = Url.objects.filter(id__in=granted, state=State.INIT.value, exclusion_reason__in=notfollowed.LIFTABLE)
    lift.update(exclusion_reason="", next_check_at=timezone.now(), depth=0)
    # A seed another crawl fetched and extracted already leads the job on from its stored links.
    job_walk_stored(url_ids=_fetched(granted))
    return set(Url.objects.filter(id__in=_job_urls(job.id), state=State.INIT.value, exclusion_reason="")
               .values_list("server_id", flat=True).distinct())  # fmt: skip


def _states(url_ids: Iterable[int]) -> dict[int, tuple[str, str]]:
    rows = Url.objects.filter(id__in=list(url_ids)).values_list("id", "state", "exclusion_reason")
    return {i: (state, reason) for i, state, reason in rows}


def _counts(job_id: int) -> tuple[int, int]:
    c = job_counts(job_id=job_id)
    return c["done"], c["failed"]


def job_start(*, name: str, trigger: str = "manual") -> JobRun:
    """Start a run of the job: its seeds go in, its set-aside URLs come back, a JobRun is opened."""
    with transaction.atomic():
        job = Job.objects.select_for_update().filter(name=name).first()
        if job is None:
            raise JobError(f"no job named {name!r}")
        if not job.enabled:
            raise JobError(f"job {name!r} is disabled")
        if job.state in (Job.RUNNING, Job.PAUSED):
            raise JobError(f"job {name!r} is {job.state} already")
        done, failed = _counts(job.id)
        Job.objects.filter(id=job.id).update(state=Job.RUNNING, updated_at=timezone.now())
        run = JobRun.objects.create(job=job, started_at=timezone.now(), trigger=trigger, done_at_start=done,
                                    failed_at_start=failed)  # fmt: skip
        job.state = Job.RUNNING
        _tell(STARTED, job=job, run=run, facts={"trigger": trigger})
    servers = job_seeds_insert(job=job) | job_unhold(job_id=job.id)
    if not jobrules.in_windows(job.windows, timezone.now().astimezone(ZoneInfo(job.time_zone))):
        job_hold(job_id=job.id, reason=jobrules.OUTSIDE_WINDOW)
    _dispatch_soon(servers)
    return run


def _dispatch_soon(server_ids: set[int]) -> None:
    """Send the servers the job just gave due URLs, in a cluster. In the embedded mode the crawl command's
    runner dispatches at every step, and a dispatch sent from another process (`job resume` in a second
    shell, the dashboard) would go to that process's own in-memory broker, where no worker takes it, while
    stamping the servers dispatched, which keeps the runner from sending them for CRAWL_REDISPATCH_AFTER."""
    if not settings.CELERY_EMBEDDED:
        servers_dispatch_with_due_work(server_ids=server_ids)


def _transition(name: str, *, from_states: Sequence[str], to: str) -> Job:
    job = Job.objects.filter(name=name).first()
    if job is None:
        raise JobError(f"no job named {name!r}")
    # One guarded write: two operators pausing at once change it once.
    if not Job.objects.filter(id=job.id, state__in=list(from_states)).update(state=to, updated_at=timezone.now()):
        raise JobError(f"job {name!r} is {job.state}: cannot make it {to}")
    job.state = to
    return job


def _open_run(job_id: int) -> JobRun | None:
    return JobRun.objects.filter(job_id=job_id, ended_at__isnull=True).order_by("-started_at").first()


def job_pause(*, name: str) -> Job:
    """Pause the job: its queued URLs are set aside (those in a load batch's hands too), its run stays open
    and its clock stops (JobRun.paused_at) until job_resume."""
    with transaction.atomic():
        job = _transition(name, from_states=[Job.RUNNING], to=Job.PAUSED)
        JobRun.objects.filter(job_id=job.id, ended_at__isnull=True, paused_at__isnull=True).update(
            paused_at=timezone.now()
        )
        job_hold(job_id=job.id, reason=jobrules.JOB_PAUSED)
    return job


def _paused_time_close(job_id: int) -> None:
    run = _open_run(job_id)
    if run is not None and run.paused_at is not None:
        paused = (timezone.now() - run.paused_at).total_seconds()
        JobRun.objects.filter(id=run.id, paused_at=run.paused_at).update(
            paused_at=None, paused_seconds=run.paused_seconds + max(0.0, paused), resumed_at=timezone.now()
        )


def job_resume(*, name: str) -> Job:
    """Go on with the paused run: the URLs set aside for the pause are due again."""
    with transaction.atomic():
        job = _transition(name, from_states=[Job.PAUSED], to=Job.RUNNING)
        _paused_time_close(job.id)
        servers = job_unhold(job_id=job.id, reasons=[jobrules.JOB_PAUSED])
        if not jobrules.in_windows(job.windows, timezone.now().astimezone(ZoneInfo(job.time_zone))):
            job_hold(job_id=job.id, reason=jobrules.OUTSIDE_WINDOW)
    _dispatch_soon(servers)
    return job


def job_stop(*, name: str, reason: str = "stopped") -> Job:
    with transaction.atomic():
        job = _transition(name, from_states=[Job.RUNNING, Job.PAUSED], to=Job.STOPPED)
        job_hold(job_id=job.id, reason=jobrules.JOB_STOPPED)
        job_run_end(job_id=job.id, reason=reason)
    return job


def job_finish(*, job_id: int, reason: str) -> bool:
    """The job's run is over (nothing left, or the crawl's own limit): the run is closed, the job idle. A
    job ended by a limit of the crawl command keeps its queued URLs, set aside until its next start. A
    paused job is not finished: its run waits for job_resume (or job_stop)."""
    with transaction.atomic():
        if not Job.objects.filter(id=job_id, state=Job.RUNNING).update(state=Job.IDLE):
            return False
        job_hold(job_id=job_id, reason=jobrules.JOB_STOPPED)
        job_run_end(job_id=job_id, reason=reason)
    return True


def job_run_end(*, job_id: int, reason: str) -> None:
    """Close the job's open run with its figures, and tell job.finished (in the caller's transaction)."""
    run = _open_run(job_id)
    if run is None:
        return
    _paused_time_close(job_id)
    job_sample_record(job_id=job_id, force=True)
    run.refresh_from_db()
    done, failed = _counts(job_id)
    now = timezone.now()
    pages, failures = max(0, done - run.done_at_start), max(0, failed - run.failed_at_start)
    if JobRun.objects.filter(id=run.id, ended_at__isnull=True).update(
        ended_at=now, stop_reason=reason[:100], pages=pages, failures=failures
    ):
        run.ended_at, run.stop_reason, run.pages, run.failures = now, reason[:100], pages, failures
        job = Job.objects.get(id=job_id)
        _tell(FINISHED, job=job, run=run, facts={
            "pages": pages, "failures": failures, "seconds": round((now - run.started_at).total_seconds()),
            "stop_reason": reason[:100],
        })  # fmt: skip


SAMPLES_MAX = 400  # a run's chart points; past it, every other older one is dropped
SAMPLE_EVERY = 5.0  # seconds between two of a run's samples at least


def job_sample_record(*, job_id: int, now: datetime | None = None, force: bool = False) -> bool:
    """Add [seconds since the start, done, queued] to the open run's samples (the job page's chart), at most
    every SAMPLE_EVERY seconds unless `force` (the run's last). True when added."""
    now = now or timezone.now()
    run = _open_run(job_id)
    if run is None:
        return False
    t = round((now - run.started_at).total_seconds(), 1)
    samples = list(run.samples or [])
    if samples and not force and t - samples[-1][0] < SAMPLE_EVERY:
        return False
    c = job_counts(job_id=job_id, now=now)
    samples.append([t, c["done"] - run.done_at_start, c["queued"]])
    if len(samples) > SAMPLES_MAX:
        samples = samples[:-1][::2] + samples[-1:]
    JobRun.objects.filter(id=run.id).update(samples=samples)
    return True


def jobs_sample(*, now: datetime | None = None) -> int:
    """A sample of every running or paused job's run; how many were taken."""
    ids = Job.objects.filter(state__in=[Job.RUNNING, Job.PAUSED]).values_list("id", flat=True)
    return sum(job_sample_record(job_id=i, now=now) for i in ids)


def job_stall_check(*, job: Job, now: datetime) -> bool:
    """Tell job.stalled once a run: running, inside its window, URLs queued, and no page done for
    JOBS_STALL_MINUTES (since the run started or was resumed). True when told now."""
    run = _open_run(job.id)
    if run is None or run.stalled_at is not None or run.paused_at is not None:
        return False
    quiet = timedelta(minutes=settings.JOBS_STALL_MINUTES)
    last = (
        Url.objects.filter(id__in=_job_urls(job.id), last_checked_at__gte=run.started_at)
        .exclude(state=State.INIT.value)
        .aggregate(last=Max("last_checked_at"))["last"]
    )
    since = max(t for t in (last, run.started_at, job.updated_at) if t is not None)
    if now - since < quiet or job_counts(job_id=job.id, now=now)["queued"] == 0:
        return False
    reasons = job_stalled(job=job, now=now)
    with transaction.atomic():
        if not JobRun.objects.filter(id=run.id, stalled_at__isnull=True).update(stalled_at=now):
            return False  # another tick told it
        run.stalled_at = now
        _tell(STALLED, job=job, run=run, facts={"since": since.isoformat(), "reasons": reasons})
    return True


def jobs_tick(*, now: datetime | None = None) -> dict[str, int]:
    """The jobs' periodic work (beat, and each step of a command crawl): start the scheduled ones that are
    due, hold or release the URLs of jobs at their windows' edges, close the runs that have nothing left."""
    now = now or timezone.now()
    out = {"started": 0, "finished": 0}
    revisits = Job.objects.filter(enabled=True, schedule="", revisit_after__isnull=False, state=Job.IDLE)
    for job in revisits:
        out["started"] += _guarded(job, "revisit", lambda job=job: _revisit_due(job, now))
    for job in Job.objects.filter(enabled=True).exclude(schedule="").exclude(state__in=[Job.RUNNING, Job.PAUSED]):
        out["started"] += _guarded(job, "schedule", lambda job=job: _schedule_due(job, now))
    jobs_sample(now=now)
    for job in Job.objects.filter(state=Job.RUNNING):
        out["finished"] += _guarded(job, "window", lambda job=job: _window_edge(job, now))
    return out


def _guarded(job: Job, step: str, fn) -> int:
    """One job's step of the tick: whatever goes wrong with this job (a schedule that never comes, a time
    zone gone from the system) is logged and moves it forward, and the other jobs' steps still run."""
    try:
        with transaction.atomic():
            return int(fn())
    except JobError as exc:
        log.info("%s of job %s skipped: %s", step, job.name, exc)
    except Exception:
        log.exception("%s of job %s failed; the other jobs go on", step, job.name)
    if step == "schedule":
        # Its next start unknown: asked again in a day, not at every tick.
        Job.objects.filter(id=job.id).update(next_run_at=timezone.now() + timedelta(days=1))
    return 0


def _revisit_due(job: Job, now: datetime) -> bool:
    last = JobRun.objects.filter(job_id=job.id).order_by("-started_at").values_list("ended_at", flat=True).first()
    if last is None or (now - last).total_seconds() < (job.revisit_after or 0):
        return False
    job_start(name=job.name, trigger="revisit")
    return True


def _schedule_due(job: Job, now: datetime) -> bool:
    tz = ZoneInfo(job.time_zone)
    if job.next_run_at is None:
        nxt = jobrules.schedule_next(job.schedule, now.astimezone(tz))
        Job.objects.filter(id=job.id, next_run_at__isnull=True).update(next_run_at=nxt)
        return False
    if job.next_run_at > now:
        return False
    nxt = jobrules.schedule_next(job.schedule, now.astimezone(tz))
    if not Job.objects.filter(id=job.id, next_run_at=job.next_run_at).update(next_run_at=nxt):
        return False  # another tick took this start
    try:
        job_start(name=job.name, trigger="schedule")
    except JobError as exc:
        log.info("scheduled start of %s skipped: %s (next %s)", job.name, exc, nxt)
        return False
    return True


def _window_edge(job: Job, now: datetime) -> bool:
    inside = jobrules.in_windows(job.windows, now.astimezone(ZoneInfo(job.time_zone)))
    if inside:
        servers = job_unhold(job_id=job.id, reasons=[jobrules.OUTSIDE_WINDOW])
        _dispatch_soon(servers)
    else:
        job_hold(job_id=job.id, reason=jobrules.OUTSIDE_WINDOW)
    c = job_counts(job_id=job.id, now=now)
    if inside and c["queued"] == 0 and c["fetching"] == 0 and c["unextracted"] == 0:
        return job_finish(job_id=job.id, reason="done")
    if inside:
        job_stall_check(job=job, now=now)
    return False


# -- definitions (admin, API, config file) -------------------------------------------------------------
def job_save(*, spec: dict, dry_run: bool = False) -> tuple[str, Job | None]:
    """Create or update the job named spec["name"] from checked keys (crawler.jobrules.job_spec_check):
    ("created" | "changed" | "unchanged", the job). With `dry_run` nothing is written (the job: None when new).
    A running job whose patterns changed sets its queued URLs that no longer pass aside, with the reason."""
    if "render" in spec and spec["render"] is None:  # the definition's "no choice" (the setting's) is stored empty
        spec = {**spec, "render": ""}
    job = Job.objects.filter(name=spec["name"]).first()
    if job is None:
        if dry_run:
            return "created", None
        return "created", Job.objects.create(**spec)
    changed = {k: v for k, v in spec.items() if getattr(job, k) != v}
    if not changed:
        return "unchanged", job
    if dry_run:
        return "changed", job
    for key, value in changed.items():
        setattr(job, key, value)
    job.save()
    if {"include", "exclude", "max_depth", "scope"} & set(changed):
        job_rules_reapply(job=job)
    return "changed", job


def job_rules_reapply(*, job: Job, chunk: int = 1000) -> int:
    """Set aside the job's queued URLs that its rules (edited while it runs) no longer take in: the reason
    shows on the URL, and it is not fetched (one a load batch holds is handed back unfetched, as on a pause).
    URLs another running job reached too are left. How many; counted on the open run (JobRun.set_aside)."""
    rules = JobRules.of(job)
    others = JobUrl.objects.filter(url_id=OuterRef("url_id"), job__state=Job.RUNNING).exclude(job_id=job.id)
    queued = (
        # Those held while the job pauses (or waits for its window) too: else its resume would make them due.
        JobUrl.objects.filter(job_id=job.id, url__state=State.INIT.value, url__exclusion_reason__in=["", *HELD])
        .exclude(Exists(others))
        .order_by("url_id")
        .values_list("url_id", "url__url", "depth")
    )  # fmt: skip
    set_aside = 0
    last = 0
    while True:
        rows = list(queued.filter(url_id__gt=last)[:chunk])
        if not rows:
            if set_aside:
                JobRun.objects.filter(job_id=job.id, ended_at__isnull=True).update(set_aside=F("set_aside") + set_aside)
            return set_aside
        last = rows[-1][0]
        by_reason: dict[str, list[int]] = {}
        passed: dict[str, int] = {}
        for url_id, url, depth in rows:
            reason = rules.reason(url, depth)
            if reason:
                by_reason.setdefault(reason, []).append(url_id)
            elif rules.paths:
                passed[url] = url_id
        # The patterns over the chunk, as over a page's links: within one budget, in a bounded child.
        verdicts = _path_verdicts({(0, job.id): dict.fromkeys(passed)}, {job.id: rules}) if passed else {}
        for (_, _, url), reason in verdicts.items():
            if reason:
                by_reason.setdefault(reason, []).append(passed[url])
        for reason, ids in by_reason.items():
            set_aside += Url.objects.filter(id__in=ids, exclusion_reason__in=["", *HELD]).update(
                exclusion_reason=reason, next_check_at=None
            )


def job_delete(*, name: str) -> bool:
    """Remove the job, its runs and its record of URLs reached (the URLs themselves stay: they are the
    crawl's). Its queued URLs that no other job holds are set aside first."""
    job = Job.objects.filter(name=name).first()
    if job is None:
        return False
    job_hold(job_id=job.id, reason=jobrules.JOB_STOPPED)
    JobUrl.objects.filter(job_id=job.id).delete()
    job.delete()  # its politeness goes with it: read while it runs (selectors_jobs.jobs_politeness), never written
    return True
