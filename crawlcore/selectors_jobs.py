"""Reads of crawl jobs: a job's progress (done, queued, failed, the ETA from the recent rate) and, per server,
why its queued URLs are not moving, in plain words. One home for what the job command, the admin and the
API show."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db.models import Count, Min, Q
from django.utils import timezone

from crawler import jobrules
from crawler.lifecycle import State
from crawler.politeness import crawl_delay

from .models import Job, JobRun, JobUrl, Page, Server, ServerLease, Url

HELD = (jobrules.JOB_PAUSED, jobrules.JOB_STOPPED, jobrules.OUTSIDE_WINDOW)
FAILED = (State.NO_RESPONSE_1.value, State.NO_RESPONSE_2.value, State.DEAD.value)
RATE_WINDOW = timedelta(minutes=5)
MAX_STALLED = 100

# The plain words of "why it is not moving".
PAUSED = "paused"
STOPPED = "stopped"
OUTSIDE_WINDOW = "outside its time window"
POLITENESS_WAIT = "politeness wait"
RETRY_AFTER = "Retry-After / back-off"
ROBOTS_UNREACHABLE = "robots.txt unreachable"
NO_FREE_SLOT = "no free slot"
NO_DUE_URLS = "no due URLs"
SERVER_PAUSED = "server paused by the hourly schedule"
SERVER_OFF = "server disabled or excluded"


def _job_urls(job_id: int):
    return Url.objects.filter(id__in=JobUrl.objects.filter(job_id=job_id).values("url_id"))


def _queued() -> Q:
    return Q(state=State.INIT.value) & (Q(exclusion_reason="") | Q(exclusion_reason__in=HELD))


def job_counts(*, job_id: int, now: datetime | None = None) -> dict[str, int]:
    """done: fetched at least once; failed: of those, not answering (NoResponse, Dead); queued: waiting to be
    fetched (set aside while the job does not run included); excluded: set aside for good (patterns, depth,
    robots.txt …); fetching: leased now; recent: fetched within the rate window; unextracted: fetched pages
    whose links are not read yet."""
    now = now or timezone.now()
    urls = _job_urls(job_id)
    counts = urls.aggregate(
        done=Count("id", filter=~Q(state=State.INIT.value)),
        failed=Count("id", filter=Q(state__in=FAILED)),
        queued=Count("id", filter=_queued()),
        excluded=Count(
            "id", filter=Q(state=State.INIT.value) & ~Q(exclusion_reason="") & ~Q(exclusion_reason__in=HELD)
        ),
        fetching=Count("id", filter=~Q(lease_owner="") & Q(lease_expires_at__gte=now)),
        recent=Count("id", filter=Q(last_checked_at__gte=now - RATE_WINDOW) & ~Q(state=State.INIT.value)),
    )
    counts["unextracted"] = Page.objects.filter(url_id__in=urls.values("id"), extracted_at__isnull=True).count()
    return counts


def job_progress(*, job: Job, now: datetime | None = None) -> dict:
    """{done, queued, failed, excluded, eta_seconds}: the ETA is the queued URLs over the rate of the last
    RATE_WINDOW (or of the run, when it is younger); None while nothing moves."""
    now = now or timezone.now()
    c = job_counts(job_id=job.id, now=now)
    run = JobRun.objects.filter(job_id=job.id).order_by("-started_at").first()
    window = RATE_WINDOW.total_seconds()
    if run is not None and run.ended_at is None:
        window = max(1.0, min(window, (now - run.started_at).total_seconds()))
    rate = c["recent"] / window if c["recent"] else 0.0
    if c["queued"] == 0:
        eta: int | None = 0
    elif rate > 0 and job.state == Job.RUNNING:
        eta = round(c["queued"] / rate)
    else:
        eta = None
    return {
        "done": c["done"],
        "queued": c["queued"],
        "failed": c["failed"],
        "excluded": c["excluded"],
        "fetching": c["fetching"],
        "rate_per_minute": round(rate * 60, 1),
        "eta_seconds": eta,
    }


def _iso(t: datetime | None) -> str | None:
    return t.isoformat() if t is not None else None


def job_stalled(*, job: Job, now: datetime | None = None) -> list[dict]:
    """Per server with queued URLs of the job that are not being fetched now: {server, reason, until}
    (until: when the wait ends, where it is known)."""
    now = now or timezone.now()
    rows = list(
        _job_urls(job.id)
        .filter(_queued())
        .values("server_id")
        .annotate(
            due=Count("id", filter=Q(exclusion_reason="", next_check_at__lte=now)),
            held=Count("id", filter=Q(exclusion_reason__in=HELD)),
            leased=Count("id", filter=~Q(lease_owner="") & Q(lease_expires_at__gte=now)),
            next_due=Min("next_check_at", filter=Q(exclusion_reason="")),
        )
        .order_by("server_id")[:MAX_STALLED]
    )
    servers = Server.objects.in_bulk([r["server_id"] for r in rows])
    held_slots = dict(
        ServerLease.objects.filter(server_id__in=list(servers), expires_at__gte=now)
        .exclude(owner="")
        .values("server_id")
        .annotate(n=Count("id"))
        .values_list("server_id", "n")
    )
    out = []
    for row in rows:
        server = servers.get(row["server_id"])
        if server is None or row["leased"]:
            continue  # being fetched now: it moves
        reason, until = _why(job, server, row, held_slots.get(server.id, 0), now)
        if reason:
            out.append({"server": server.origin, "reason": reason, "until": _iso(until)})
    return out


def _why(job: Job, server: Server, row: dict, slots_held: int, now: datetime) -> tuple[str, datetime | None]:
    if row["held"] and not row["due"]:
        if job.state == Job.PAUSED:
            return PAUSED, None
        if job.state in (Job.STOPPED, Job.IDLE):
            return STOPPED, None
        return OUTSIDE_WINDOW, _window_opens(job, now)
    if not server.enabled or server.excluded_reason:
        return SERVER_OFF, None
    if server.paused_until is not None and server.paused_until > now:
        return SERVER_PAUSED, server.paused_until
    if server.robots_kind == "unreachable":
        return ROBOTS_UNREACHABLE, None
    if not row["due"]:
        return NO_DUE_URLS, row["next_due"]
    if server.next_request_at is not None and server.next_request_at > now:
        delay = crawl_delay(server.crawl_delay, default=settings.CRAWL_DEFAULT_DELAY, cap=settings.CRAWL_MAX_DELAY)
        delay = max(delay, server.min_delay or 0.0)
        wait = (server.next_request_at - now).total_seconds()
        return (POLITENESS_WAIT if wait <= delay + 1 else RETRY_AFTER), server.next_request_at
    cap = min(settings.CRAWL_SERVER_CONCURRENCY, server.max_concurrency or settings.CRAWL_SERVER_CONCURRENCY)
    if slots_held >= cap:
        return NO_FREE_SLOT, None
    return "", None


def _window_opens(job: Job, now: datetime) -> datetime | None:
    """The next minute at which one of the job's windows is open (within a day), for `until`."""
    tz = ZoneInfo(job.time_zone)
    local = now.astimezone(tz).replace(second=0, microsecond=0)
    for minutes in range(1, 24 * 60 + 1):
        t = local + timedelta(minutes=minutes)
        if jobrules.in_windows(job.windows, t):
            return t
    return None


def job_detail(*, job: Job, now: datetime | None = None) -> dict:
    """The job as every reader shows it: its definition, state, progress, stalls and last runs."""
    now = now or timezone.now()
    runs = JobRun.objects.filter(job_id=job.id).order_by("-started_at")[:10]
    return {
        **job_definition(job),
        "state": job.state,
        "next_run_at": _iso(job.next_run_at),
        "progress": job_progress(job=job, now=now),
        "stalled": job_stalled(job=job, now=now),
        "runs": [
            {
                "started_at": _iso(r.started_at),
                "ended_at": _iso(r.ended_at),
                "trigger": r.trigger,
                "pages": r.pages,
                "failures": r.failures,
                "stop_reason": r.stop_reason,
            }
            for r in runs
        ],
    }


def job_definition(job: Job) -> dict:
    """The job's keys as the YAML file and the API write them."""
    return {
        "name": job.name,
        "group": job.group,
        "seeds": list(job.seeds),
        "scope": job.scope,
        "max_depth": job.max_depth,
        "max_pages": job.max_pages,
        "include": list(job.include),
        "exclude": list(job.exclude),
        "revisit_after": job.revisit_after,
        "delay": job.delay,
        "concurrency": job.concurrency,
        "windows": list(job.windows),
        "time_zone": job.time_zone,
        "schedule": job.schedule,
        "enabled": job.enabled,
        "render": job.render or None,
    }
