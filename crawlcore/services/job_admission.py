"""Which links a job's pages lead it to (admission): a job's scope, depth, path patterns and page budget over
the links of each page it reached, whether the page was just extracted or was stored before (the walk over
stored pages). A job's URLs are the Url rows with a JobUrl row for it. A URL reached by two jobs is one row,
fetched once, and counts for both. Only a job's own pages lead it on: a link found on a page of job A is
followed for A when A's scope, depth, patterns and page budget allow it, whatever the default crawl or job B
would do.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.utils import timezone

from crawlcore.db.bulk import insert_ignore
from crawlcore.jobrules_of import JobRules
from crawlcore.models import Job, JobUrl, Link, Page, Url
from crawler import jobrules, notfollowed
from crawler.child import run_each
from crawler.lifecycle import State
from crawler.userregex import COMPILE_MEMORY_BYTES

from .job_budget import budget_take
from .urls import NewUrl, urls_known

log = logging.getLogger(__name__)

# Pages a walk over stored pages reads the links of in one call (job_walk_stored): the job's depth and page
# budget bound it first in every ordinary case.
WALK_MAX = 20_000
PATTERNS_HARD_STOP_AFTER_S = 0.5  # past a page's budget, its patterns' child is killed


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
        fetched = urls_fetched(joined)
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
    verdicts = path_verdicts(patterned, admission.rules) if patterned else {}
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


def path_verdicts(
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


def urls_fetched(url_ids: Iterable[int]) -> list[int]:
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
