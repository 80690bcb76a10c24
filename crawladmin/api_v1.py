"""The REST API /api/v1/ (Django REST framework): servers, monitors of every kind, alert channels with their
routing rules, crawl jobs with their actions and runs, and search over the stored pages (read only). The
other objects (maintenance, mutes, status pages, incidents, dead links, uptime) are in crawladmin.api_v1_more.

- Who: `Authorization: Bearer <token>` (a user's token: `manage.py api_token USER` or the admin; only its
  hash is kept) or a reader's session. A viewer reads; an operator (or a superuser) writes. A reader limited
  to server groups (crawlcore.access) sees and writes only the objects of those groups, and no channels (they
  are not grouped). A server's address, `trusted` and `owner_email` are a superuser's to set.
- What: each object in its one form (crawladmin.serializers), the form `manage.py apply` reads and
  `export_config` writes; writes go through the file's plan (crawladmin.configfile), so the file, the API and
  the admin check and write alike. A key left out keeps its value.
- Paging and errors: crawladmin.api_v1_base. The OpenAPI schema: /api/v1/schema; its pages: /api/v1/docs.
"""

from __future__ import annotations

import zoneinfo

from django.conf import settings
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from alerts.models import Channel
from crawladmin.api_v1_base import (
    PAGE_PARAMETERS,
    Invalid,
    apply_one,
    body_of,
    check_group,
    groups_of,
    in_groups,
    list_schema,
    listed,
    page_of,
    writer_context,
)
from crawladmin.configfile.keys import CHANNEL_KEYS, MONITOR_KEYS, SERVER_KEYS
from crawladmin.configfile.plan import _origin
from crawladmin.serializers import (
    ChannelSerializer,
    JobDetailSerializer,
    JobRunSerializer,
    JobSerializer,
    MonitorSerializer,
    ServerSerializer,
)
from crawlcore import roles
from crawlcore.models import Job, JobRun, Server
from crawlcore.selectors_health import servers_health
from crawlcore.selectors_jobs import job_definition
from crawlcore.services.health import HealthError, health_pause, health_resume
from crawlcore.services.job_definitions import job_delete
from crawlcore.services.job_life import JobError, job_pause, job_resume, job_start, job_stop
from crawler.hosthealth import until_parse
from crawler.jobrules import NAME_RE, job_spec_check
from monitoring.models import ServerMonitor
from monitoring.selectors import servers_shown
from search.selectors import MAX_LIMIT, Filters, SearchError, search_pages


# -- jobs --------------------------------------------------------------------------------------------------
def _job(request, name: str) -> Job:
    # A name no job can have (a NUL, which PostgreSQL refuses in a query) is simply not found.
    job = Job.objects.filter(name=name).first() if NAME_RE.fullmatch(name) else None
    allowed = groups_of(request)
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
    apply_one("jobs", spec, request)  # the role rules as `apply` has them: groups, seeds
    return "saved", Job.objects.get(name=spec["name"])


class JobList(APIView):
    """GET: the jobs with their progress. POST: a new job (the keys of the YAML form)."""

    role_object = "job"

    @list_schema("jobs", JobSerializer)
    def get(self, request):
        return listed(request, in_groups(request, Job.objects.order_by("name"), "group"), "jobs", JobSerializer)

    @extend_schema(request=JobSerializer, responses={201: JobDetailSerializer})
    def post(self, request):
        data = body_of(request)
        name = data.get("name")
        existing = Job.objects.filter(name=name).first() if isinstance(name, str) and NAME_RE.fullmatch(name) else None
        if existing is not None:
            # Said only to whom may read it: to anyone else a name in use tells nothing of another group.
            if roles.may(request.user, "read", "job", group=existing.group):
                raise Invalid({"name": f"a job named {data.get('name')!r} exists: PUT or PATCH it"})
            raise Invalid({"name": f"the name {data.get('name')!r} cannot be used: choose another"})
        _, job = _job_write(request, data)
        return Response(JobDetailSerializer(job).data, status=status.HTTP_201_CREATED)


class JobDetail(APIView):
    """GET: the job, its `progress` {done, queued, failed, eta_seconds}, `stalled` [{server, reason, until}]
    and its last runs. PUT: replace its keys; PATCH: change some; DELETE: remove it (its URLs stay)."""

    role_object = "job"

    @extend_schema(responses=JobDetailSerializer)
    def get(self, request, name: str):
        return Response(JobDetailSerializer(_job(request, name)).data)

    @extend_schema(request=JobSerializer, responses=JobDetailSerializer)
    def put(self, request, name: str):
        _job(request, name)
        _, job = _job_write(request, {**body_of(request), "name": name})
        return Response(JobDetailSerializer(job).data)

    @extend_schema(request=JobSerializer(partial=True), responses=JobDetailSerializer)
    def patch(self, request, name: str):
        job = _job(request, name)
        _, job = _job_write(request, {**body_of(request), "name": name}, partial_of=job)
        return Response(JobDetailSerializer(job).data)

    @extend_schema(responses={204: None})
    def delete(self, request, name: str):
        job = _job(request, name)
        check_group(request, job.group, action="delete", obj="job")
        job_delete(name=job.name)
        return Response(status=status.HTTP_204_NO_CONTENT)


ACTIONS = {"start": job_start, "pause": job_pause, "resume": job_resume, "stop": job_stop}


class JobAction(APIView):
    """POST /api/v1/jobs/NAME/start|pause|resume|stop/: an action that does not apply now is a 400."""

    role_object, post_action = "job", "run"

    @extend_schema(request=None, responses=JobDetailSerializer, operation_id="jobs_action",
                   parameters=[OpenApiParameter("action", str, OpenApiParameter.PATH, enum=list(ACTIONS))])  # fmt: skip
    def post(self, request, name: str, action: str):
        job = _job(request, name)
        if action not in ACTIONS:
            raise exceptions.NotFound(f"no action {action!r} (start, pause, resume, stop)")
        try:
            ACTIONS[action](name=job.name)
        except JobError as exc:
            raise Invalid({"non_field_errors": str(exc)}) from None
        job.refresh_from_db()
        return Response(JobDetailSerializer(job).data)


class JobRuns(APIView):
    """GET: the job's runs, newest first: when, what it fetched, how it ended."""

    role_object = "job"

    @list_schema("runs", JobRunSerializer)
    def get(self, request, name: str):
        job = _job(request, name)
        qs = JobRun.objects.filter(job=job).select_related("job").order_by("-started_at", "-id")
        return listed(request, qs, "runs", JobRunSerializer)


# -- servers -----------------------------------------------------------------------------------------------
def _server(request, pk: int) -> Server:
    server = Server.objects.filter(id=pk).first()
    allowed = groups_of(request)
    if server is None or (allowed is not None and server.group not in allowed):
        raise exceptions.NotFound(f"no server {pk}")
    return server


def _server_form(request, server: Server) -> dict:
    return ServerSerializer(server, context=writer_context(request, health=servers_health(server_ids=[server.id]))).data


class ServerList(APIView):
    role_object = "server"

    @list_schema("servers", ServerSerializer)
    def get(self, request):
        qs = in_groups(request, Server.objects.order_by("id"), "group")

        def rows(page: list[Server]) -> list:
            health = servers_health(server_ids=[s.id for s in page])
            return ServerSerializer(page, many=True, context=writer_context(request, health=health)).data

        return listed(request, qs, "servers", ServerSerializer, rows=rows)

    @extend_schema(request=ServerSerializer, responses={201: ServerSerializer})
    def post(self, request):
        data = {k: v for k, v in body_of(request).items() if k != "id"}
        check_group(request, str(data.get("group", "")), action="create")
        origin = _origin(data.get("url"))
        if origin is not None and Server.objects.filter(scheme=origin[0], host=origin[1], port=origin[2]).exists():
            raise Invalid({"url": "this server exists: PATCH it"})
        apply_one("servers", data, request)
        server = Server.objects.get(scheme=origin[0], host=origin[1], port=origin[2])
        return Response(_server_form(request, server), status=status.HTTP_201_CREATED)


class ServerDetail(APIView):
    role_object = "server"

    @extend_schema(responses=ServerSerializer)
    def get(self, request, pk: int):
        return Response(_server_form(request, _server(request, pk)))

    @extend_schema(request=ServerSerializer(partial=True), responses=ServerSerializer)
    def patch(self, request, pk: int):
        server = _server(request, pk)
        data = {k: v for k, v in body_of(request).items() if k in SERVER_KEYS}
        if "url" in data and _origin(data["url"]) != (server.scheme, server.host, server.port):
            raise Invalid({"url": "a server's address does not change: add the new server"})
        check_group(request, str(data.get("group", server.group)))
        apply_one("servers", {**data, "url": server.origin}, request)
        server.refresh_from_db()
        return Response(_server_form(request, server))

    @extend_schema(responses={204: None})
    def delete(self, request, pk: int):
        server = _server(request, pk)
        check_group(request, server.group, action="delete", obj="server")
        server.delete()
        return Response(status=status.HTTP_204_NO_CONTENT)


class PauseSerializer(serializers.Serializer):
    until = serializers.CharField(required=False, allow_blank=True, help_text='"2026-05-01T18:00" or "2h"; empty: '
                                  "until resumed")  # fmt: skip
    note = serializers.CharField(required=False, allow_blank=True)


SERVER_ACTIONS = ["pause", "resume"]


class ServerAction(APIView):
    """POST /api/v1/servers/ID/pause/ (`{"until": "2026-05-01T18:00" | "2h", "note": "…"}`, both optional:
    no `until` holds it until resumed) and /resume/: an operator holds the server's crawl or lets it go. The
    answer is the server with its `health`."""

    role_object, post_action = "server", "run"

    @extend_schema(
        request=PauseSerializer,
        responses=ServerSerializer,
        operation_id="servers_action",
        parameters=[OpenApiParameter("action", str, OpenApiParameter.PATH, enum=SERVER_ACTIONS)],
    )
    def post(self, request, pk: int, action: str):
        server = _server(request, pk)
        if action not in ("pause", "resume"):
            raise exceptions.NotFound(f"no action {action!r} (pause, resume)")
        check_group(request, server.group, action="run", obj="server")
        data = body_of(request)
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
        return Response(_server_form(request, server))


# -- monitors ----------------------------------------------------------------------------------------------
def _monitor(request, pk: int) -> ServerMonitor:
    m = ServerMonitor.objects.select_related("server").filter(server_id=pk).first()
    allowed = groups_of(request)
    if m is None or (allowed is not None and m.server.group not in allowed):
        raise exceptions.NotFound(f"no monitor of server {pk}")
    return m


def _shown(server_ids: list[int]) -> dict[int, str]:
    """What each server shows (monitoring.selectors.servers_shown: the grid's rule), by id."""
    return dict(servers_shown().filter(id__in=server_ids).values_list("id", "shown_status"))


def _monitor_form(request, m: ServerMonitor) -> dict:
    return MonitorSerializer(m, context=writer_context(request, shown=_shown([m.server_id]))).data


class MonitorList(APIView):
    """Monitors of every kind (HTTP, TCP, DNS, heartbeat), each with its kind's fields and `status`, what every
    page shows for it. POST: a monitor; a tcp://, dns:// or heartbeat:// server is made with it."""

    role_object = "monitor"

    @list_schema("monitors", MonitorSerializer)
    def get(self, request):
        qs = in_groups(request, ServerMonitor.objects.select_related("server").order_by("server_id"), "server__group")

        def rows(page: list[ServerMonitor]) -> list:
            context = writer_context(request, shown=_shown([m.server_id for m in page]))
            return MonitorSerializer(page, many=True, context=context).data

        return listed(request, qs, "monitors", MonitorSerializer, rows=rows)

    @extend_schema(request=MonitorSerializer, responses={201: MonitorSerializer})
    def post(self, request):
        data = {k: v for k, v in body_of(request).items() if k in MONITOR_KEYS}
        origin = _origin(data.get("server"))
        if origin is None:
            raise Invalid({"server": "the server's URL: https://…, tcp://host:port, dns://name or heartbeat://slug"})
        server = Server.objects.filter(scheme=origin[0], host=origin[1], port=origin[2]).first()
        check_group(request, server.group if server is not None else "", action="create", obj="monitor")
        if server is not None and ServerMonitor.objects.filter(server=server).exists():
            raise Invalid({"server": "this server has a monitor: PATCH it"})
        apply_one("monitors", data, request)
        server = Server.objects.get(scheme=origin[0], host=origin[1], port=origin[2])
        return Response(_monitor_form(request, _monitor(request, server.id)), status=status.HTTP_201_CREATED)


class MonitorDetail(APIView):
    """A monitor, by its server's id."""

    role_object = "monitor"

    @extend_schema(responses=MonitorSerializer)
    def get(self, request, pk: int):
        return Response(_monitor_form(request, _monitor(request, pk)))

    @extend_schema(request=MonitorSerializer(partial=True), responses=MonitorSerializer)
    def patch(self, request, pk: int):
        m = _monitor(request, pk)
        data = {k: v for k, v in body_of(request).items() if k in MONITOR_KEYS and k != "server"}
        apply_one("monitors", {**data, "server": m.server.origin}, request)
        return Response(_monitor_form(request, _monitor(request, pk)))

    @extend_schema(responses={204: None})
    def delete(self, request, pk: int):
        m = _monitor(request, pk)
        check_group(request, m.server.group, action="delete", obj="monitor")
        m.delete()
        return Response(status=status.HTTP_204_NO_CONTENT)


# -- channels ----------------------------------------------------------------------------------------------
def _unlimited(request) -> None:
    """Channels are a superuser's whatever the method (crawlcore.roles): ReadOrOperate refused anyone else."""
    check_group(request, "", action="read", obj="channel")


def _channel(request, name: str) -> Channel:
    _unlimited(request)
    c = Channel.objects.filter(name=name).first()
    if c is None:
        raise exceptions.NotFound(f"no channel named {name!r}")
    return c


class ChannelList(APIView):
    """Channels with their routing rules. Their URLs hold secrets (webhook tokens): shown masked, written whole."""

    role_object = "channel"

    @list_schema("channels", ChannelSerializer)
    def get(self, request):
        _unlimited(request)
        return listed(request, Channel.objects.order_by("name"), "channels", ChannelSerializer)

    @extend_schema(request=ChannelSerializer, responses={201: ChannelSerializer})
    def post(self, request):
        _unlimited(request)
        data = {k: v for k, v in body_of(request).items() if k in CHANNEL_KEYS}
        if Channel.objects.filter(name=str(data.get("name"))).exists():
            raise Invalid({"name": "a channel of this name exists: PATCH it"})
        apply_one("channels", data, request)
        return Response(ChannelSerializer(Channel.objects.get(name=data["name"])).data, status=status.HTTP_201_CREATED)


class ChannelDetail(APIView):
    role_object = "channel"

    @extend_schema(responses=ChannelSerializer)
    def get(self, request, name: str):
        return Response(ChannelSerializer(_channel(request, name)).data)

    @extend_schema(request=ChannelSerializer(partial=True), responses=ChannelSerializer)
    def patch(self, request, name: str):
        c = _channel(request, name)
        data = {k: v for k, v in body_of(request).items() if k in CHANNEL_KEYS}
        apply_one("channels", {**data, "name": c.name}, request)
        return Response(ChannelSerializer(Channel.objects.get(name=c.name)).data)

    @extend_schema(responses={204: None})
    def delete(self, request, name: str):
        _channel(request, name).delete()
        return Response(status=status.HTTP_204_NO_CONTENT)


# -- search ------------------------------------------------------------------------------------------------
class HitSerializer(serializers.Serializer):
    url = serializers.CharField()
    title = serializers.CharField(allow_blank=True)
    score = serializers.FloatField()
    snippet = serializers.CharField(allow_blank=True)


class SearchAnswerSerializer(serializers.Serializer):
    query = serializers.CharField(allow_blank=True)
    results = HitSerializer(many=True)


class SearchView(APIView):
    """`GET /api/v1/search?q=WORDS[&site=&group=&type=pdf|html&limit=&offset=]`: the stored pages with every
    word, best first, as `manage.py search --json` prints them (search.selectors): the reader's groups only."""

    @extend_schema(
        parameters=[OpenApiParameter("q", str, required=True), OpenApiParameter("site", str),
                    OpenApiParameter("group", str), OpenApiParameter("type", str, enum=["pdf", "html"]),
                    *PAGE_PARAMETERS],
        responses=SearchAnswerSerializer,
    )  # fmt: skip
    def get(self, request):
        params = request.query_params
        limit, offset = page_of(request)
        group = params.get("group", "")
        if group:
            check_group(request, group, action="read")
        filters = Filters(site=params.get("site", "")[:300], group=group, content_type=params.get("type", "")[:100],
                          groups=groups_of(request))  # fmt: skip
        try:
            shown = min(limit, MAX_LIMIT) if "limit" in params and limit else 20
            hits = search_pages(query=params.get("q", ""), filters=filters, limit=shown, offset=offset)
        except SearchError as exc:
            raise Invalid({"q": str(exc)}) from None
        return Response({"query": params.get("q", ""), "results": [h.as_json() for h in hits]})
