"""A job's life as an operator drives it: start (its seeds in, its set-aside URLs back, a run opened), pause,
resume, stop, and the finish of a run that has nothing left; each one guarded write, so two operators acting
at once change the job once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from crawlcore.db.bulk import insert_ignore
from crawlcore.models import Job, JobRun, JobUrl, Url
from crawler import jobrules, notfollowed
from crawler.lifecycle import State
from crawler.scope import Scope
from crawler.urlnorm import server_key

from .job_admission import job_walk_stored, urls_fetched
from .job_budget import budget_take
from .job_events import STARTED, job_event_tell
from .job_hold import job_hold, job_unhold, job_url_ids
from .job_runs import job_done_failed, job_paused_time_close, job_run_end
from .load_dispatch import servers_dispatch_with_due_work
from .urls import NewUrl, urls_insert, urls_known


class JobError(ValueError):
    """An action that does not apply to the job as it is (start a running job, resume a stopped one)."""


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
    job_walk_stored(url_ids=urls_fetched(granted))
    return set(Url.objects.filter(id__in=job_url_ids(job.id), state=State.INIT.value, exclusion_reason="")
               .values_list("server_id", flat=True).distinct())  # fmt: skip


def _states(url_ids: Iterable[int]) -> dict[int, tuple[str, str]]:
    rows = Url.objects.filter(id__in=list(url_ids)).values_list("id", "state", "exclusion_reason")
    return {i: (state, reason) for i, state, reason in rows}


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
        done, failed = job_done_failed(job.id)
        Job.objects.filter(id=job.id).update(state=Job.RUNNING, updated_at=timezone.now())
        run = JobRun.objects.create(job=job, started_at=timezone.now(), trigger=trigger, done_at_start=done,
                                    failed_at_start=failed)  # fmt: skip
        job.state = Job.RUNNING
        job_event_tell(STARTED, job=job, run=run, facts={"trigger": trigger})
    servers = job_seeds_insert(job=job) | job_unhold(job_id=job.id)
    if not job.in_window(timezone.now()):
        job_hold(job_id=job.id, reason=jobrules.OUTSIDE_WINDOW)
    servers_dispatch_soon(servers)
    return run


def servers_dispatch_soon(server_ids: set[int]) -> None:
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


def job_resume(*, name: str) -> Job:
    """Go on with the paused run: the URLs set aside for the pause are due again."""
    with transaction.atomic():
        job = _transition(name, from_states=[Job.PAUSED], to=Job.RUNNING)
        job_paused_time_close(job.id)
        servers = job_unhold(job_id=job.id, reasons=[jobrules.JOB_PAUSED])
        if not job.in_window(timezone.now()):
            job_hold(job_id=job.id, reason=jobrules.OUTSIDE_WINDOW)
    servers_dispatch_soon(servers)
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
