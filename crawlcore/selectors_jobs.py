"""Reads of crawl jobs: a job's progress (done, queued, failed, the ETA from the recent rate) and, per server,
why its queued URLs are not moving, in plain words. One home for what the job command, the admin and the
API show."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Avg, Count, Exists, Max, Min, OuterRef, Q, Subquery
from django.utils import timezone

from crawler import jobrules
from crawler.hosthealth import Summary
from crawler.lifecycle import State

from .jobrules_of import JobRules
from .models import Job, JobRun, JobUrl, Page, Server, ServerLease, StatusCheck, Url
from .selectors_health import servers_health_summaries

HELD = (jobrules.JOB_PAUSED, jobrules.JOB_STOPPED, jobrules.OUTSIDE_WINDOW)
FAILED = (State.NO_RESPONSE_1.value, State.NO_RESPONSE_2.value, State.DEAD.value)
RATE_WINDOW = timedelta(minutes=5)
MAX_STALLED = 100

# The plain words of "why it is not moving".
PAUSED = "paused"
STOPPED = "stopped"
OUTSIDE_WINDOW = "outside its time window"
POLITENESS_WAIT = "politeness wait"
NO_FREE_SLOT = "no free slot"
NO_DUE_URLS = "no due URLs"


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
    """{done, queued, failed, excluded, fetching, rate_per_minute, eta_seconds, eta_basis, budget_left, …}.

    The rate is this run's own: its last pages done (up to RATE_SAMPLE, within RATE_WINDOW of the run's
    time let run, its pauses left out), spread over the time from the first of them to now. A job that
    waits (a politeness turn, a slot) thus sees its rate fall and its ETA grow only by the time it waited,
    never by a previous run's pages; while paused the ETA is not given. With fewer than RATE_MIN_PAGES of
    this run done the ETA is not given either, and `eta_basis` says why in words."""
    now = now or timezone.now()
    c = job_counts(job_id=job.id, now=now)
    run = JobRun.objects.filter(job_id=job.id).order_by("-started_at").first()
    live = run is not None and run.ended_at is None
    rate, sample, span = 0.0, 0, 0.0
    if live:
        rate, sample, span = _run_rate(job, run, now)
    eta, basis = _eta(c, live=live, paused=job.state == Job.PAUSED, rate=rate, sample=sample, span=span)
    budget = job.max_pages
    return {
        "done": c["done"],
        "queued": c["queued"],
        "failed": c["failed"],
        "excluded": c["excluded"],
        "fetching": c["fetching"],
        "known": c["done"] + c["queued"],
        "max_pages": budget,
        "admitted": job.admitted,
        "rate_per_minute": round(rate * 60, 1),
        "eta_seconds": eta,
        "eta_basis": basis,
        "run_done": (c["done"] - run.done_at_start) if live else None,
        "set_aside": run.set_aside if run is not None else 0,
    }


def _eta(c: dict, *, live: bool, paused: bool, rate: float, sample: int, span: float) -> tuple[int | None, str]:
    """The ETA in seconds (None: not given) and what it rests on, in words."""
    if c["queued"] == 0 and live and c["unextracted"]:
        # Everything known is fetched, but pages whose links are not read yet may queue more: no ETA yet.
        n = c["unextracted"]
        return None, f"nothing queued; {n} fetched page{'' if n == 1 else 's'} still to be read for links"
    if c["queued"] == 0:
        return 0, "nothing queued"
    if not live:
        return None, "not running"
    if paused:
        return None, "paused"
    if sample < RATE_MIN_PAGES:
        return None, f"too little to go on: {sample} page{'' if sample == 1 else 's'} done in this run"
    eta = round(c["queued"] / rate) if rate > 0 else None
    return eta, f"{sample} pages of this run in its last {_span_words(span)} (pauses left out)"


RATE_SAMPLE = 200  # the last pages of the run the rate is taken over
RATE_MIN_PAGES = 5  # fewer done in the run: no ETA


def _run_rate(job: Job, run: JobRun, now: datetime) -> tuple[float, int, float]:
    """(pages a second, pages in the sample, seconds the sample spans) for the open run: its last pages done
    since it started or was last resumed, within RATE_WINDOW, over the time from the first to the last of
    them. Time spent waiting after the last page does not count, so the ETA does not grow while the job
    waits (the page says since when nothing was done)."""
    since = max(t for t in (run.started_at, run.resumed_at, now - RATE_WINDOW) if t is not None)
    times = list(
        _job_urls(job.id)
        .filter(last_checked_at__gte=since)
        .exclude(state=State.INIT.value)
        .order_by("-last_checked_at")
        .values_list("last_checked_at", flat=True)[:RATE_SAMPLE]
    )
    if len(times) < 2:
        return 0.0, len(times), 0.0
    span = max(1.0, (times[0] - times[-1]).total_seconds())
    return (len(times) - 1) / span, len(times), span


def _span_words(seconds: float) -> str:
    if seconds < 120:
        return f"{round(seconds)} s"
    return f"{round(seconds / 60)} min"


def _iso(t: datetime | None) -> str | None:
    return t.isoformat() if t is not None else None


def job_stalled(*, job: Job, now: datetime | None = None) -> list[dict]:
    """Per server with queued URLs of the job that are not being fetched now: {server, reason, until, health,
    source} (until: when the wait ends, where it is known; health: the server's state, and what holds it when
    its health does: crawlcore.selectors_health)."""
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
    health = servers_health_summaries(server_ids=list(servers), now=now)
    out = []
    for row in rows:
        server = servers.get(row["server_id"])
        if server is None or row["leased"]:
            continue  # being fetched now: it moves
        reason, until = _why(job, server, row, held_slots.get(server.id, 0), health[server.id], now)
        if reason:
            h = health[server.id]
            out.append({"server": server.origin, "reason": reason, "until": _iso(until), "health": h.state.value,
                        "source": h.source if h.held else ""})  # fmt: skip
    return out


def _why(
    job: Job, server: Server, row: dict, slots_held: int, health: Summary, now: datetime
) -> tuple[str, datetime | None]:
    if row["held"] and not row["due"]:
        if job.state == Job.PAUSED:
            return PAUSED, None
        if job.state in (Job.STOPPED, Job.IDLE):
            return STOPPED, None
        return OUTSIDE_WINDOW, job.window_opens(now)
    # Whatever holds the server itself (an operator, the monitor, robots.txt, a back-off, the schedule, an
    # exclusion) is its health's to say (crawlcore.selectors_health).
    if health.held:
        return health.reason, health.until
    if not row["due"]:
        return NO_DUE_URLS, row["next_due"]
    if server.next_request_at is not None and server.next_request_at > now:
        return POLITENESS_WAIT, server.next_request_at
    cap = server_concurrency_cap(server.id, server.max_concurrency, settings.CRAWL_SERVER_CONCURRENCY)
    if slots_held >= cap:
        return NO_FREE_SLOT, None
    return "", None


ERRORS_SHOWN = 20
RUNS_SHOWN = 10


def job_held(stalled: list[dict]) -> dict:
    """{servers, reason}: how many of the job's servers are not moving, and the commonest reason why."""
    reasons = Counter(s["reason"] for s in stalled)
    return {"servers": len(stalled), "reason": reasons.most_common(1)[0][0] if reasons else ""}


def job_servers(*, job: Job, stalled: list[dict], now: datetime) -> list[dict]:
    """Per server of the job (most queued first, at most MAX_STALLED): its pages done and queued, its mean
    response time in the run, and why it waits (stalled), where it does."""
    rows = list(
        _job_urls(job.id)
        .values("server_id")
        .annotate(
            done=Count("id", filter=~Q(state=State.INIT.value)),
            queued=Count("id", filter=_queued()),
            failed=Count("id", filter=Q(state__in=FAILED)),
        )
        .order_by("-queued", "server_id")[:MAX_STALLED]
    )
    servers = Server.objects.in_bulk([r["server_id"] for r in rows])
    run = JobRun.objects.filter(job_id=job.id).order_by("-started_at").first()
    since = run.started_at if run is not None else now - RATE_WINDOW
    latency = dict(
        StatusCheck.objects.filter(server_id__in=list(servers), checked_at__gte=since, latency_ms__gt=0)
        .exclude(category__in=StatusCheck.NOT_SERVER_ANSWERS)
        .values("server_id")
        .annotate(ms=Avg("latency_ms"))
        .values_list("server_id", "ms")
    )
    waiting = {s["server"]: s for s in stalled}
    health = servers_health_summaries(server_ids=list(servers), now=now)
    out = []
    for r in rows:
        server = servers.get(r["server_id"])
        if server is None:
            continue
        wait = waiting.get(server.origin, {})
        ms = latency.get(server.id)
        h = health[server.id].as_dict()
        # The server's own state is its health's (crawlcore.selectors_health); the reason and until are its
        # health's when it is held, else why this job's URLs there wait, if they do.
        held = health[server.id].held
        out.append({
            "server_id": server.id, "server": server.origin, "group": server.group,
            "done": r["done"], "queued": r["queued"], "failed": r["failed"],
            "response_ms": round(ms) if ms is not None else None,
            "state": h["state"], "source": h["source"] if held else "",
            "reason": h["reason"] if held else wait.get("reason", ""),
            "until": h["until"] if held else wait.get("until"),
        })  # fmt: skip
    return out


def job_errors(*, job: Job, limit: int = ERRORS_SHOWN) -> list[dict]:
    """The job's last failed URLs (no answer, Dead, or an error status), newest first."""
    rows = (
        _job_urls(job.id)
        .filter(Q(state__in=FAILED) | Q(last_status__gte=400))
        .exclude(last_checked_at__isnull=True)
        .order_by("-last_checked_at")
        .values("url", "state", "last_status", "failure_kind", "last_checked_at")[:limit]
    )
    return [
        {"url": r["url"], "state": r["state"], "status": r["last_status"], "failure": r["failure_kind"],
         "at": _iso(r["last_checked_at"])}  # fmt: skip
        for r in rows
    ]


def _run(r: JobRun, now: datetime) -> dict:
    return {
        "started_at": _iso(r.started_at),
        "ended_at": _iso(r.ended_at),
        "trigger": r.trigger,
        "pages": r.pages,  # written when the run ends (the open run's so far: progress.run_done)
        "failures": r.failures,
        "stop_reason": r.stop_reason,
        "seconds": round(r.active_seconds(now)),
        "set_aside": r.set_aside,
    }


def job_summary(*, job: Job, now: datetime | None = None) -> dict:
    """One job as the jobs list shows it: state, progress, rate and ETA, servers held and why, last run."""
    now = now or timezone.now()
    stalled = job_stalled(job=job, now=now)
    last = JobRun.objects.filter(job_id=job.id).order_by("-started_at").first()
    return {
        "name": job.name,
        "group": job.group,
        "enabled": job.enabled,
        "state": job.state,
        "progress": job_progress(job=job, now=now),
        "held": job_held(stalled),
        "last_run": _run(last, now) if last is not None else None,
    }


def job_detail(*, job: Job, now: datetime | None = None) -> dict:
    """The job as every reader shows it (the job command, the API, the job's page): its definition, state,
    progress with the ETA and what it rests on, stalls, servers held, servers, last errors and last runs."""
    now = now or timezone.now()
    runs = list(JobRun.objects.filter(job_id=job.id).order_by("-started_at")[:RUNS_SHOWN])
    stalled = job_stalled(job=job, now=now)
    return {
        **job_definition(job),
        "state": job.state,
        "next_run_at": _iso(job.next_run_at),
        "progress": job_progress(job=job, now=now),
        "stalled": stalled,
        "held": job_held(stalled),
        "servers": job_servers(job=job, stalled=stalled, now=now),
        "errors": job_errors(job=job),
        "runs": [_run(r, now) for r in runs],
    }


def job_chart(*, job: Job) -> dict:
    """The job page's chart: per run (newest first), its samples [seconds since its start, done, queued]."""
    runs = JobRun.objects.filter(job_id=job.id).order_by("-started_at")[:RUNS_SHOWN]
    return {"runs": [{"started_at": _iso(r.started_at), "samples": r.samples or []} for r in runs]}


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


def jobs_of_server(*, server: Server, groups: frozenset[str] | None = None) -> list[dict]:
    """The jobs whose scope takes in this server and that reached it ({name, state}), of the reader's groups
    (`groups`; None: all). The scope is asked first (no query), the job's URLs only for a job that may."""
    jobs = Job.objects.order_by("name")
    if groups is not None:
        jobs = jobs.filter(group__in=sorted(groups))
    out = []
    for job in jobs:
        if not JobRules.of(job).in_scope(server.host):
            continue
        if JobUrl.objects.filter(job_id=job.id, url__server_id=server.id).exists():
            out.append({"name": job.name, "state": job.state})
    return out


def jobs_states() -> list[dict]:
    """Every job's name and state, for the crawl page's links."""
    return [{"name": n, "state": s} for n, s in Job.objects.order_by("name").values_list("name", "state")]


def jobs_politeness(*, server_id: int) -> tuple[float | None, int | None]:
    """(delay, concurrency) the running jobs that reach this server ask of it while they run: the longest
    delay and the fewest requests in flight, None where none asks. Read where a request is paced, never
    written onto the server, so a job that ends or is deleted leaves the server as the operator set it."""
    holds = JobUrl.objects.filter(job_id=OuterRef("id"), url__server_id=server_id)
    # A job of a server group paces that group's servers only: its links may lead it to another group's
    # server, whose crawling is that group's operators' to slow.
    group = Server.objects.filter(id=server_id).values("group")
    found = (
        Job.objects.filter(state=Job.RUNNING)
        .filter(Q(group="") | Q(group=Subquery(group)))
        .filter(Q(delay__isnull=False) | Q(concurrency__isnull=False))
        .filter(Exists(holds))
        .aggregate(delay=Max("delay"), concurrency=Min("concurrency"))
    )
    return found["delay"], found["concurrency"]


def server_delay_floor(server) -> float:
    """The least seconds between two requests to this server: its operator's floor, or a running job's."""
    job_delay, _ = jobs_politeness(server_id=server.id)
    return max(server.min_delay or 0.0, job_delay or 0.0)


def server_concurrency_cap(server_id: int, own: int | None, default: int) -> int:
    """The requests in flight this server may have: the default, lowered by its operator's or a running job's."""
    _, job_cap = jobs_politeness(server_id=server_id)
    return min(default, own or default, job_cap or default)
