"""The REST API, /api/v1/ (Django REST framework): servers, monitors, alert channels and crawl jobs, with the
jobs' actions (start, pause, resume, stop), their progress and why they are not moving; search over the
stored pages (read only).

- Who: `Authorization: Bearer <token>` (a user's token: `manage.py api_token USER` or the admin; only its
  hash is kept) or a reader's session. A viewer reads; an operator (or a superuser) writes. A reader limited
  to server groups (crawlcore.access) sees and writes only the servers, monitors and jobs of those groups,
  and no channels (they are not grouped). A server's address, `trusted` and `owner_email` are a
  superuser's to set.
- What: each object in the form `manage.py apply` reads (crawladmin.config), and checked by the same rules,
  so the file, the API and the admin agree.
- Errors: JSON `{"error", "detail", "fields"}` with 400 (bad input), 401 (no or a bad token), 403 (not
  allowed), 404 (no such object), 405; never a server error for a client's input.
- The OpenAPI schema: /api/v1/schema.
"""

from __future__ import annotations

import zoneinfo

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import APIView

from alerts.models import Channel
from crawladmin.config import CHANNEL_KEYS, MONITOR_KEYS, SERVER_KEYS, SUPERUSER_SERVER_KEYS, config_plan
from crawlcore import access
from crawlcore import roles as access_roles
from crawlcore.access import server_groups_of
from crawlcore.models import Job, Server
from crawlcore.selectors_health import server_health
from crawlcore.selectors_jobs import job_definition, job_detail, job_progress
from crawlcore.services.health import HealthError, health_pause, health_resume
from crawlcore.services.jobs import JobError, job_delete, job_pause, job_resume, job_start, job_stop
from crawler.hosthealth import until_parse
from crawler.jobrules import job_spec_check
from crawler.urlnorm import canonicalize, server_key
from monitoring.models import ServerMonitor
from search.selectors import MAX_LIMIT, Filters, SearchError, search_pages

MAX_PAGE = 1000


class Invalid(exceptions.ValidationError):
    def __init__(self, fields: dict[str, str]):
        super().__init__({k: [v] for k, v in fields.items()})


def _body(request) -> dict:
    if not isinstance(request.data, dict):
        raise Invalid({"non_field_errors": "the body must be a JSON object"})
    return dict(request.data)


def _page(request) -> tuple[int, int]:
    try:
        limit = int(request.query_params.get("limit", MAX_PAGE))
        offset = int(request.query_params.get("offset", 0))
    except ValueError:
        raise Invalid({"limit": "limit and offset must be whole numbers"}) from None
    if not (0 <= limit <= MAX_PAGE) or not (0 <= offset <= MAX_OFFSET):
        raise Invalid({"limit": f"limit from 0 to {MAX_PAGE}, offset from 0 to {MAX_OFFSET}"})
    return limit, offset


MAX_OFFSET = 10**12  # past any table's rows; a bigger number is a mistake (and SQLite cannot bind it)


def _groups(request) -> frozenset[str] | None:
    return server_groups_of(request.user)


def _check_group(request, group: str, *, action: str = "update", obj: str = "server") -> None:
    reason = access_roles.refusal(request.user, action, obj, group=group)
    if reason is not None:
        raise exceptions.PermissionDenied(reason)


# -- jobs --------------------------------------------------------------------------------------------------
def _job(request, name: str) -> Job:
    job = Job.objects.filter(name=name).first()
    allowed = _groups(request)
    if job is None or (allowed is not None and job.group not in allowed):
        raise exceptions.NotFound(f"no job named {name!r}")
    return job


def _job_write(request, data: dict, *, partial_of: Job | None = None) -> tuple[str, Job]:
    if partial_of is not None:
        data = {**job_definition(partial_of), **data}
    spec, problems = job_spec_check(data)
    if problems:
        raise Invalid(problems)
    if partial_of is not None and spec["name"] != partial_of.name:
        raise Invalid({"name": "a job is renamed by creating the new one and deleting the old"})
    _apply_one("jobs", spec, request)  # the role rules as `apply` has them: groups, seeds
    return "saved", Job.objects.get(name=spec["name"])


class JobList(APIView):
    """GET: the jobs with their progress. POST: a new job (the keys of the YAML form)."""

    def get(self, request):
        limit, offset = _page(request)
        qs = Job.objects.order_by("name")
        if (allowed := _groups(request)) is not None:
            qs = qs.filter(group__in=allowed)
        page = qs[offset : offset + limit]
        jobs = [{**job_definition(j), "state": j.state, "progress": job_progress(job=j)} for j in page]
        return Response({"count": qs.count(), "limit": limit, "offset": offset, "jobs": jobs})

    role_object = "job"

    def post(self, request):
        data = _body(request)
        existing = Job.objects.filter(name=data.get("name")).first() if isinstance(data.get("name"), str) else None
        if existing is not None:
            # Said only to whom may read it: to anyone else a name in use tells nothing of another group.
            if access_roles.may(request.user, "read", "job", group=existing.group):
                raise Invalid({"name": f"a job named {data.get('name')!r} exists: PUT or PATCH it"})
            raise Invalid({"name": f"the name {data.get('name')!r} cannot be used: choose another"})
        _, job = _job_write(request, data)
        return Response(job_detail(job=job), status=status.HTTP_201_CREATED)


class JobDetail(APIView):
    """GET: the job, its `progress` {done, queued, failed, eta_seconds}, `stalled` [{server, reason, until}]
    and its last runs. PUT: replace its keys; PATCH: change some; DELETE: remove it (its URLs stay)."""

    role_object = "job"

    def get(self, request, name: str):
        return Response(job_detail(job=_job(request, name)))

    def put(self, request, name: str):
        job = _job(request, name)
        data = {**_body(request), "name": name}
        _, job = _job_write(request, data)
        return Response(job_detail(job=job))

    def patch(self, request, name: str):
        job = _job(request, name)
        _, job = _job_write(request, {**_body(request), "name": name}, partial_of=job)
        return Response(job_detail(job=job))

    def delete(self, request, name: str):
        job = _job(request, name)
        _check_group(request, job.group, action="delete", obj="job")
        job_delete(name=job.name)
        return Response(status=status.HTTP_204_NO_CONTENT)


ACTIONS = {"start": job_start, "pause": job_pause, "resume": job_resume, "stop": job_stop}


class JobAction(APIView):
    """POST /api/v1/jobs/NAME/start|pause|resume|stop/: 409-free: an action that does not apply is a 400."""

    role_object, post_action = "job", "run"

    def post(self, request, name: str, action: str):
        job = _job(request, name)
        if action not in ACTIONS:
            raise exceptions.NotFound(f"no action {action!r} (start, pause, resume, stop)")
        try:
            ACTIONS[action](name=job.name)
        except JobError as exc:
            raise Invalid({"non_field_errors": str(exc)}) from None
        job.refresh_from_db()
        return Response(job_detail(job=job))


# -- servers, monitors, channels ----------------------------------------------------------------------------
def _server_values(s: Server) -> dict:
    return {"id": s.id, "url": s.origin, "group": s.group, "enabled": s.enabled, "crawler_num": s.crawler_num,
            "trusted": s.trusted, "owner_name": s.owner_name, "owner_email": s.owner_email,
            "min_delay": s.min_delay, "max_concurrency": s.max_concurrency,
            "excluded_reason": s.excluded_reason}  # fmt: skip


def _apply_one(section: str, item: dict, request) -> None:
    """One object written as `manage.py apply` writes it, under the same role rules for the request's user."""
    with transaction.atomic():
        plan = config_plan({section: [item]}, {}, actor=request.user)
        if plan.refused:
            raise exceptions.PermissionDenied(plan.refused)
        if plan.problems:
            raise Invalid(plan.fields)
        for planned in plan.items:
            planned.write(False)


def _server(request, pk: int) -> Server:
    server = Server.objects.filter(id=pk).first()
    allowed = _groups(request)
    if server is None or (allowed is not None and server.group not in allowed):
        raise exceptions.NotFound(f"no server {pk}")
    return server


def _superuser_fields(request, given: dict, current: dict | None) -> None:
    """A server's address, trust and owner's address are a superuser's to set (the admin's rule,
    crawlcore.access.SUPERUSER_SERVER_FIELDS; here the address is the one key `url`)."""
    for key in SUPERUSER_SERVER_KEYS:
        field = "host" if key == "url" else key
        if access.may_edit_server_field(request.user, field):
            continue
        if key in given and (current is None or given[key] != current.get(key)):
            raise exceptions.PermissionDenied(f"{key}: only a superuser sets it")


class ServerList(APIView):
    role_object = "server"

    def get(self, request):
        limit, offset = _page(request)
        qs = Server.objects.order_by("id")
        if (allowed := _groups(request)) is not None:
            qs = qs.filter(group__in=allowed)
        return Response({"count": qs.count(), "limit": limit, "offset": offset,
                         "servers": [_server_values(s) for s in qs[offset : offset + limit]]})  # fmt: skip

    def post(self, request):
        data = _body(request)
        _superuser_fields(request, data, None)
        _check_group(request, str(data.get("group", "")))
        _apply_one("servers", {k: v for k, v in data.items() if k != "id"}, request)
        server = _by_origin(str(data["url"]).rstrip("/"))
        return Response(_server_values(server), status=status.HTTP_201_CREATED)


def _by_origin(origin: str) -> Server:
    key = server_key(canonicalize(origin + "/"))
    return Server.objects.get(scheme=key.scheme, host=key.host, port=key.port)


class ServerDetail(APIView):
    role_object = "server"

    def get(self, request, pk: int):
        server = _server(request, pk)
        return Response({**_server_values(server), "health": server_health(server=server)})

    def patch(self, request, pk: int):
        server = _server(request, pk)
        current = _server_values(server)
        data = _body(request)
        _superuser_fields(request, data, current)
        merged = {k: v for k, v in {**current, **data}.items() if k in SERVER_KEYS}
        _check_group(request, str(merged.get("group", "")))
        if merged["url"] != current["url"]:
            raise Invalid({"url": "a server's address does not change: add the new server"})
        _apply_one("servers", merged, request)
        server.refresh_from_db()
        return Response(_server_values(server))

    def delete(self, request, pk: int):
        server = _server(request, pk)
        _check_group(request, server.group, action="delete", obj="server")
        server.delete()
        return Response(status=status.HTTP_204_NO_CONTENT)


class ServerAction(APIView):
    """POST /api/v1/servers/ID/pause/ (`{"until": "2026-05-01T18:00" | "2h", "note": "…"}`, both optional:
    no `until` holds it until resumed) and /resume/: an operator holds the server's crawl or lets it go. The
    answer is the server with its `health`."""

    def post(self, request, pk: int, action: str):
        server = _server(request, pk)
        if action not in ("pause", "resume"):
            raise exceptions.NotFound(f"no action {action!r} (pause, resume)")
        data = _body(request)
        by = request.user.get_username() or "api"
        now = timezone.now()
        if action == "pause":
            until = None
            if data.get("until") not in (None, ""):
                try:
                    until = until_parse(str(data["until"]), now, zoneinfo.ZoneInfo(settings.TIME_ZONE))
                except ValueError as exc:
                    raise Invalid({"until": str(exc)}) from None
            note = data.get("note", "")
            if not isinstance(note, str):
                raise Invalid({"note": "a few words of text"})
            try:
                health_pause(server_ids=[server.id], by=by, until=until, note=note, now=now)
            except HealthError as exc:
                raise Invalid({"until": str(exc)}) from None
        else:
            health_resume(server_ids=[server.id], by=by, now=now)
        return Response({**_server_values(server), "health": server_health(server=server)})


def _monitor_values(m: ServerMonitor) -> dict:
    return {"server": m.server.origin, "server_id": m.server_id, "kind": "http", "status": m.status,
            **{k: getattr(m, k) for k in MONITOR_KEYS if k not in ("server", "kind")}}  # fmt: skip


def _monitor(request, pk: int) -> ServerMonitor:
    m = ServerMonitor.objects.select_related("server").filter(server_id=pk).first()
    allowed = _groups(request)
    if m is None or (allowed is not None and m.server.group not in allowed):
        raise exceptions.NotFound(f"no monitor of server {pk}")
    return m


class MonitorList(APIView):
    role_object = "monitor"

    def get(self, request):
        limit, offset = _page(request)
        qs = ServerMonitor.objects.select_related("server").order_by("server_id")
        if (allowed := _groups(request)) is not None:
            qs = qs.filter(server__group__in=allowed)
        return Response({"count": qs.count(), "limit": limit, "offset": offset,
                         "monitors": [_monitor_values(m) for m in qs[offset : offset + limit]]})  # fmt: skip

    def post(self, request):
        data = _body(request)
        server = _by_origin_or_none(data.get("server"))
        if server is None:
            raise Invalid({"server": "the URL of a server that exists"})
        _check_group(request, server.group, action="create", obj="monitor")
        if ServerMonitor.objects.filter(server=server).exists():
            raise Invalid({"server": "this server has a monitor: PATCH it"})
        _apply_one("monitors", data, request)
        return Response(_monitor_values(_monitor(request, server.id)), status=status.HTTP_201_CREATED)


def _by_origin_or_none(url: object) -> Server | None:
    if not isinstance(url, str):
        return None
    try:
        return _by_origin(url.rstrip("/"))
    except Exception:  # noqa: BLE001 - not a URL, or no such server: the caller says which field
        return None


class MonitorDetail(APIView):
    role_object = "monitor"

    def get(self, request, pk: int):
        return Response(_monitor_values(_monitor(request, pk)))

    def patch(self, request, pk: int):
        m = _monitor(request, pk)
        current = {k: v for k, v in _monitor_values(m).items() if k in MONITOR_KEYS}
        _apply_one("monitors", {**current, **{k: v for k, v in _body(request).items() if k != "server"}}, request)
        return Response(_monitor_values(_monitor(request, pk)))

    def delete(self, request, pk: int):
        m = _monitor(request, pk)
        _check_group(request, m.server.group, action="delete", obj="monitor")
        m.delete()
        return Response(status=status.HTTP_204_NO_CONTENT)


def _channel_values(c: Channel) -> dict:
    return {"name": c.name, "url": c.masked, "enabled": c.enabled, "owner_of": c.owner_of,
            "rules": [{"kinds": r.kinds, "group": r.group, "server": r.server.origin if r.server_id else None}
                      for r in c.rules.select_related("server")]}  # fmt: skip


def _unlimited(request) -> None:
    """Channels are a superuser's whatever the method (crawlcore.roles): ReadOrOperate refused anyone else."""
    _check_group(request, "", action="read", obj="channel")


def _channel(request, name: str) -> Channel:
    _unlimited(request)
    c = Channel.objects.filter(name=name).first()
    if c is None:
        raise exceptions.NotFound(f"no channel named {name!r}")
    return c


class ChannelList(APIView):
    """Channels' URLs hold secrets (webhook tokens): they are shown masked, and written whole."""

    role_object = "channel"

    def get(self, request):
        _unlimited(request)
        limit, offset = _page(request)
        qs = Channel.objects.order_by("name")
        return Response({"count": qs.count(), "limit": limit, "offset": offset,
                         "channels": [_channel_values(c) for c in qs[offset : offset + limit]]})  # fmt: skip

    def post(self, request):
        _unlimited(request)
        data = _body(request)
        if Channel.objects.filter(name=data.get("name")).exists():
            raise Invalid({"name": "a channel of this name exists: PATCH it"})
        _apply_one("channels", {k: v for k, v in data.items() if k in CHANNEL_KEYS}, request)
        return Response(_channel_values(Channel.objects.get(name=data["name"])), status=status.HTTP_201_CREATED)


class ChannelDetail(APIView):
    role_object = "channel"

    def get(self, request, name: str):
        return Response(_channel_values(_channel(request, name)))

    def patch(self, request, name: str):
        c = _channel(request, name)
        data = _body(request)
        current = {"name": c.name, "url": c.url, "enabled": c.enabled, "owner_of": c.owner_of,
                   "rules": [{k: v for k, v in r.items() if v} for r in _channel_values(c)["rules"]]}  # fmt: skip
        _apply_one("channels", {**current, **{k: v for k, v in data.items() if k in CHANNEL_KEYS}, "name": name},
                   request)
        return Response(_channel_values(Channel.objects.get(name=name)))

    def delete(self, request, name: str):
        _channel(request, name).delete()
        return Response(status=status.HTTP_204_NO_CONTENT)


# -- search ------------------------------------------------------------------------------------------------
class SearchView(APIView):
    """`GET /api/v1/search?q=WORDS[&site=&group=&type=pdf|html&limit=&offset=]`: the stored pages with every
    word, best first, as `manage.py search --json` prints them (search.selectors): the reader's groups only."""

    def get(self, request):
        params = request.query_params
        limit, offset = _page(request)
        group = params.get("group", "")
        if group:
            _check_group(request, group, action="read")
        filters = Filters(site=params.get("site", "")[:300], group=group, content_type=params.get("type", "")[:100],
                          groups=_groups(request))  # fmt: skip
        try:
            shown = min(limit, MAX_LIMIT) if "limit" in params and limit else 20
            hits = search_pages(query=params.get("q", ""), filters=filters, limit=shown, offset=offset)
        except SearchError as exc:
            raise Invalid({"q": str(exc)}) from None
        return Response({"query": params.get("q", ""), "results": [h.as_json() for h in hits]})
