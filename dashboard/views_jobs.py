"""The crawl jobs on the dashboard: `/dashboard/jobs/` (every job the reader may see, live), a job's page
`/dashboard/jobs/<name>/` (its chart, ETA, servers, errors, runs and rules) and the operators' controls.

Every figure comes from crawlcore.selectors_jobs (job_summary, job_detail, job_chart), the same reads the
API and `manage.py job show` give; every control calls the job services (crawlcore.services.job_life and
job_definitions, and the host-health service for a server's pause), the same the admin, the API and the CLI
call, and is written to the admin's history (LogEntry) with who did it. A job of a group the reader may not
see is a 404, as a job that does not exist is. Scraped text (URLs, reasons) reaches the page through
autoescaping, and the live figures through the scripts' textContent.
"""

from __future__ import annotations

import copy
import json
from datetime import datetime, timedelta

from django.contrib import messages
from django.contrib.admin.models import CHANGE, LogEntry
from django.core.exceptions import BadRequest
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.views.decorators.http import require_POST

from crawlcore import access, roles
from crawlcore.models import Job, JobUrl, Server
from crawlcore.selectors_jobs import job_chart, job_definition, job_detail, job_summary
from crawlcore.services.job_definitions import job_save
from crawlcore.services.job_life import JobError, job_pause, job_resume, job_start, job_stop
from crawler.jobrules import job_spec_check

from . import selectors_grid
from .cache import cached
from .view_access import dashboard_view

SORTS = ("name", "state", "done", "rate", "eta", "held")
ACTIONS = {"start": job_start, "pause": job_pause, "resume": job_resume, "stop": job_stop}
MAX_PAUSE_MINUTES = 30 * 24 * 60


def _visible(user):
    """The jobs of the reader's server groups (all, for a reader not limited to groups)."""
    return access.rows_visible(user, Job.objects.order_by("name"), ["group"])


def _job(request: HttpRequest, name: str) -> Job:
    """The job, if the reader may see it: another group's job is the same 404 as no job."""
    job = _visible(request.user).filter(name=name).first()
    if job is None:
        raise Http404("no such job")
    return job


def may_control(user, job: Job) -> bool:
    """Start, pause, resume, stop and edit: the roles' rule (crawlcore.roles), as in the admin and the API."""
    return roles.may(user, "run", "job", group=job.group) and roles.may(user, "update", "job", group=job.group)


def _sort_key(sort: str):
    def key(row: dict):
        p = row["progress"]
        eta = p["eta_seconds"]
        return {
            "name": (row["name"],),
            "state": (row["state"], row["name"]),
            "done": (-p["done"], row["name"]),
            "rate": (-p["rate_per_minute"], row["name"]),
            "eta": (eta is None, eta or 0, row["name"]),
            "held": (-row["held"]["servers"], row["name"]),
        }[sort]

    return key


def _rows(request: HttpRequest) -> tuple[list[dict], str]:
    """The jobs the reader may see, sorted: the same for every reader of one scope, so kept SHARED_VIEW_TTL
    seconds per process (each row counts the job's URLs; twenty open lists cost one count a few seconds)."""
    sort = request.GET.get("sort", "name")
    if sort not in SORTS:
        raise BadRequest(f"sort must be one of {', '.join(SORTS)}")
    scope = access.server_groups_of(request.user)

    def compute() -> list[dict]:
        now = timezone.now()
        return sorted((job_summary(job=j, now=now) for j in _visible(request.user)), key=_sort_key(sort))

    key = json.dumps(["jobs", sort, None if scope is None else sorted(scope)])
    return copy.deepcopy(cached(key, selectors_grid.SHARED_VIEW_TTL, compute)), sort


@dashboard_view
def jobs(request: HttpRequest) -> HttpResponse:
    rows, sort = _rows(request)
    for row in rows:
        _times(row.get("last_run") or {}, "started_at", "ended_at")
    return render(request, "dashboard/jobs.html", {
        "rows": rows, "sort": sort, "sorts": SORTS, "as_of": timezone.now(),
        "refresh_seconds": selectors_grid.grid_refresh_seconds(),
    })  # fmt: skip


@dashboard_view
def jobs_json(request: HttpRequest) -> HttpResponse:
    """What the jobs list polls: the same rows as data."""
    rows, _ = _rows(request)
    body = {"generated_at": timezone.now().isoformat(), "jobs": rows}
    return HttpResponse(json.dumps(body), content_type="application/json")


def _times(d: dict, *keys: str) -> dict:
    """ISO strings of a selector's dict as datetimes, for the pages' one time format ({% when %})."""
    for k in keys:
        if isinstance(d.get(k), str):
            d[k] = parse_datetime(d[k])
    return d


def _job_context(request: HttpRequest, job: Job) -> dict:
    detail = job_detail(job=job)
    chart = job_chart(job=job)
    for r in detail["runs"]:
        _times(r, "started_at", "ended_at")
    for e in detail["errors"]:
        _times(e, "at")
    for s in detail["servers"]:
        _times(s, "until")
    return {
        "job": job, "d": detail, "p": detail["progress"], "chart": json.dumps(chart),
        "controls": may_control(request.user, job),
        "rules": _rules_text(detail),
        "refresh_seconds": selectors_grid.grid_refresh_seconds(),
    }  # fmt: skip


@dashboard_view
def job(request: HttpRequest, name: str) -> HttpResponse:
    return render(request, "dashboard/job.html", _job_context(request, _job(request, name)))


@dashboard_view
def job_json(request: HttpRequest, name: str) -> HttpResponse:
    """What the job page polls: the job as the API gives it, and its chart."""
    job = _job(request, name)
    body = {"generated_at": timezone.now().isoformat(), "job": job_detail(job=job), "chart": job_chart(job=job)}
    return HttpResponse(json.dumps(body), content_type="application/json")


def _rules_text(d: dict) -> list[str]:
    """The job's rules in plain words, one a line."""
    lines = [f"Seeds: {', '.join(d['seeds'])}", f"Scope: {d['scope']}"]
    lines.append(f"Depth: {d['max_depth'] if d['max_depth'] is not None else 'the crawl default'} links from a seed")
    lines.append(f"Page budget: {d['max_pages'] if d['max_pages'] is not None else 'none'}")
    lines.append("Include: " + (", ".join(d["include"]) if d["include"] else "every path"))
    lines.append("Exclude: " + (", ".join(d["exclude"]) if d["exclude"] else "nothing"))
    if d["delay"] is not None or d["concurrency"] is not None:
        lines.append(f"Politeness: {d['delay'] if d['delay'] is not None else 'default'} s between requests, "
                     f"{d['concurrency'] or 'default'} in flight at most")  # fmt: skip
    lines.append("Time windows: " + (", ".join(d["windows"]) + f" ({d['time_zone']})" if d["windows"] else "always"))
    if d["schedule"]:
        lines.append(f"Schedule: {d['schedule']} ({d['time_zone']})")
    if d["revisit_after"]:
        lines.append(f"Revisit after: {d['revisit_after']} s")
    if not d["enabled"]:
        lines.append("Disabled")
    return lines


def _logged(request: HttpRequest, job: Job, message: str) -> None:
    """The action in the admin's history of the job, with who did it."""
    LogEntry.objects.log_actions(
        user_id=request.user.pk, queryset=Job.objects.filter(pk=job.pk), action_flag=CHANGE,
        change_message=f"{message} (dashboard)", single_object=True,
    )  # fmt: skip


def _patterns(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _bad(request: HttpRequest, job: Job, message: str) -> HttpResponse:
    """Bad input: the job's page again, the problem said in one line, status 400."""
    context = _job_context(request, job)
    context["problem"] = message
    return render(request, "dashboard/job.html", context, status=400)


@require_POST
@dashboard_view
def job_action(request: HttpRequest, name: str) -> HttpResponse:
    """An operator's control (CSRF-checked by the middleware, rights here): start, pause, resume, stop (with
    `confirm=yes`), patterns (include/exclude, one a line), server_pause (server, minutes)."""
    job = _job(request, name)
    roles.check(request.user, "run", "job", group=job.group)
    action = request.POST.get("action", "")
    here = reverse("dashboard:job", args=[job.name])
    if action in ACTIONS:
        if action == "stop" and request.POST.get("confirm") != "yes":
            return _bad(request, job, "stopping ends the run: confirm it")
        try:
            ACTIONS[action](name=job.name)
        except JobError as exc:
            return _bad(request, job, str(exc))
        _logged(request, job, f"{action} job {job.name}")
        messages.success(request, f"job {job.name}: {action} done")
        return HttpResponseRedirect(here)
    if action == "patterns":
        return _patterns_save(request, job, here)
    if action == "server_pause":
        return _server_pause(request, job, here)
    return _bad(request, job, f"unknown action {action[:40]!r}")


def _patterns_save(request: HttpRequest, job: Job, here: str) -> HttpResponse:
    roles.check(request.user, "update", "job", group=job.group)
    include, exclude = _patterns(request.POST.get("include", "")), _patterns(request.POST.get("exclude", ""))
    spec, problems = job_spec_check({**job_definition(job), "include": include, "exclude": exclude})
    if problems:
        return _bad(request, job, "; ".join(f"{k}: {v}" for k, v in problems.items()))
    before = job_progress_set_aside(job)
    outcome, saved = job_save(spec=spec)
    if outcome == "unchanged":
        messages.info(request, "the patterns are as they were")
        return HttpResponseRedirect(here)
    set_aside = job_progress_set_aside(saved) - before
    _logged(request, job, f"patterns of job {job.name}: include {include}, exclude {exclude}")
    messages.success(request, f"patterns saved; {set_aside} queued URL{'' if set_aside == 1 else 's'} set aside")
    return HttpResponseRedirect(here)


def job_progress_set_aside(job: Job) -> int:
    run = job.runs.filter(ended_at__isnull=True).order_by("-started_at").first()
    return run.set_aside if run is not None else 0


def _server_pause(request: HttpRequest, job: Job, here: str) -> HttpResponse:
    raw, minutes = request.POST.get("server", ""), request.POST.get("minutes", "")
    if not (raw.isascii() and raw.isdigit() and len(raw) < 19):
        return _bad(request, job, "choose one of the job's servers")
    server = Server.objects.filter(id=int(raw)).first()
    if server is None or not JobUrl.objects.filter(job_id=job.id, url__server_id=server.id).exists():
        return _bad(request, job, "that server is not one of the job's")
    roles.check(request.user, "run", "server", group=server.group)
    if not (minutes.isascii() and minutes.isdigit() and len(minutes) < 7 and 0 < int(minutes) <= MAX_PAUSE_MINUTES):
        return _bad(request, job, f"minutes must be a whole number from 1 to {MAX_PAUSE_MINUTES}")
    until = timezone.now() + timedelta(minutes=int(minutes))
    server_pause_until(server=server, until=until, by=request.user.get_username(), note=f"job {job.name}")
    _logged(request, job, f"paused server {server.origin} of job {job.name} until {until.isoformat()}")
    messages.success(request, f"{server.origin} paused until {timezone.localtime(until):%Y-%m-%d %H:%M:%S %Z}")
    return HttpResponseRedirect(here)


def server_pause_until(*, server: Server, until: datetime, by: str, note: str) -> None:
    """The operator's pause of a server, through the host-health service (one home for every hold)."""
    from crawlcore.services.health import health_pause

    health_pause(server_ids=[server.id], by=by, until=until, note=note)
