"""The REST API /api/v1/, continued: recurring maintenance and one-off maintenance windows, mutes, status pages,
incidents with their updates, and the read-only reports (dead links, monthly uptime); `/api/v1/` itself, the
index of the resources. Who may do what, paging and errors as in crawladmin.api_v1."""

from __future__ import annotations

from itertools import islice

from django.core.exceptions import ValidationError
from django.db import transaction
from django.urls import reverse
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from alerts.models import MaintenanceSchedule, Mute
from crawladmin.api_v1_base import (
    MAX_PAGE,
    Invalid,
    apply_one,
    body_of,
    check_group,
    groups_of,
    in_groups,
    list_schema,
    listed,
    page_of,
)
from crawladmin.configfile.keys import MAINTENANCE_KEYS, MUTE_KEYS, STATUS_PAGE_KEYS
from crawladmin.configfile.plan import _origin
from crawladmin.configfile.plan_maintenance import _maintenance_of
from crawladmin.configfile.plan_mutes import _mute_of
from crawladmin.serializers import (
    IncidentCreateSerializer,
    IncidentSerializer,
    IncidentUpdateSerializer,
    MaintenanceSerializer,
    MaintenanceWindowSerializer,
    MuteSerializer,
    StatusPageSerializer,
)
from crawlcore.models import Server
from dashboard.models import StatusPage
from monitoring.models import Incident, MaintenanceWindow
from monitoring.report import ReportError, uptime_report
from monitoring.selectors_evidence import incidents_evidence
from monitoring.services.incidents import IncidentError, incident_update_add
from reports.selectors import dead_links_export_rows, link_breaks_open


def _messages(exc: ValidationError) -> dict[str, str]:
    if hasattr(exc, "error_dict"):
        return {k: " ".join(m for e in v for m in e.messages) for k, v in exc.error_dict.items()}
    return {"non_field_errors": " ".join(exc.messages)}


def _saved(obj) -> None:
    """Check the object by its model's rules (the admin's) and save it; a problem is a 400 naming its field."""
    try:
        obj.clean_fields()
        obj.clean()
    except ValidationError as exc:
        raise Invalid(_messages(exc)) from None
    obj.save()


def _server_named(request, value: object) -> Server:
    origin = _origin(value)
    server = Server.objects.filter(scheme=origin[0], host=origin[1], port=origin[2]).first() if origin else None
    allowed = groups_of(request)
    if server is None or (allowed is not None and server.group not in allowed):
        raise Invalid({"server": "the URL of a server that exists"})
    return server


def _target_group(request, data: dict, obj: str) -> None:
    """A maintenance schedule or a mute is for one server or one group: the role rules for that group."""
    if data.get("server") is not None:
        check_group(request, _server_named(request, data["server"]).group, action="create", obj=obj)
    else:
        check_group(request, str(data.get("group") or ""), action="create", obj=obj)


def _one(request, qs, pk, what: str, *paths: str):
    found = in_groups(request, qs, *paths).filter(pk=pk).first()
    if found is None:
        raise exceptions.NotFound(f"no {what} {pk}")
    return found


# -- recurring maintenance -----------------------------------------------------------------------------------
MAINT_PATHS = ("server__group", "group")


class MaintenanceList(APIView):
    """Recurring maintenance windows: a 5-field cron expression (UTC) or `sun 02:00`, and a duration."""

    role_object = "maintenance"

    @list_schema("maintenance", MaintenanceSerializer)
    def get(self, request):
        qs = in_groups(request, MaintenanceSchedule.objects.select_related("server").order_by("id"), *MAINT_PATHS)
        return listed(request, qs, "maintenance", MaintenanceSerializer)

    @extend_schema(request=MaintenanceSerializer, responses={201: MaintenanceSerializer})
    def post(self, request):
        data = {k: v for k, v in body_of(request).items() if k in MAINTENANCE_KEYS}
        _target_group(request, data, "maintenance")
        origin = _origin(data.get("server")) if data.get("server") is not None else None
        if _maintenance_of(origin, str(data.get("group") or ""), str(data.get("schedule"))) is not None:
            raise Invalid({"schedule": "this schedule exists for this server or group: PATCH it"})
        apply_one("maintenance", data, request)
        made = _maintenance_of(origin, str(data.get("group") or ""), str(data["schedule"]))
        return Response(MaintenanceSerializer(made).data, status=status.HTTP_201_CREATED)


class MaintenanceDetail(APIView):
    role_object = "maintenance"

    @extend_schema(responses=MaintenanceSerializer)
    def get(self, request, pk: int):
        return Response(MaintenanceSerializer(_one(request, MaintenanceSchedule.objects, pk, "schedule",
                                                   *MAINT_PATHS)).data)  # fmt: skip

    @extend_schema(request=MaintenanceSerializer(partial=True), responses=MaintenanceSerializer)
    def patch(self, request, pk: int):
        sched = _one(request, MaintenanceSchedule.objects, pk, "schedule", *MAINT_PATHS)
        data = body_of(request)
        for key in ("schedule", "duration_minutes", "reason", "enabled"):
            if key in data:
                setattr(sched, key, data[key])
        _saved(sched)
        return Response(MaintenanceSerializer(sched).data)

    @extend_schema(responses={204: None})
    def delete(self, request, pk: int):
        _one(request, MaintenanceSchedule.objects, pk, "schedule", *MAINT_PATHS).delete()
        return Response(status=status.HTTP_204_NO_CONTENT)


# -- one-off maintenance windows -----------------------------------------------------------------------------
class WindowList(APIView):
    """Planned downtime of one server: checks inside it show as maintenance and stay out of uptime."""

    role_object = "maintenance"

    @list_schema("windows", MaintenanceWindowSerializer)
    def get(self, request):
        qs = in_groups(request, MaintenanceWindow.objects.select_related("server").order_by("-starts_at", "id"),
                       "server__group")  # fmt: skip
        return listed(request, qs, "windows", MaintenanceWindowSerializer)

    @extend_schema(request=MaintenanceWindowSerializer, responses={201: MaintenanceWindowSerializer})
    def post(self, request):
        form = MaintenanceWindowSerializer(data=body_of(request))
        if not form.is_valid():
            raise exceptions.ValidationError(form.errors)
        server = _server_named(request, request.data.get("server"))
        check_group(request, server.group, action="create", obj="maintenance")
        window = MaintenanceWindow(server=server, **{k: form.validated_data[k] for k in ("starts_at", "ends_at")},
                                   reason=form.validated_data.get("reason", ""))  # fmt: skip
        if window.ends_at <= window.starts_at:
            raise Invalid({"ends_at": "a window ends after it starts"})
        _saved(window)
        return Response(MaintenanceWindowSerializer(window).data, status=status.HTTP_201_CREATED)


class WindowDetail(APIView):
    role_object = "maintenance"

    @extend_schema(responses=MaintenanceWindowSerializer)
    def get(self, request, pk: int):
        return Response(MaintenanceWindowSerializer(_one(request, MaintenanceWindow.objects, pk, "window",
                                                         "server__group")).data)  # fmt: skip

    @extend_schema(responses={204: None})
    def delete(self, request, pk: int):
        _one(request, MaintenanceWindow.objects, pk, "window", "server__group").delete()
        return Response(status=status.HTTP_204_NO_CONTENT)


# -- mutes -------------------------------------------------------------------------------------------------
class MuteList(APIView):
    """Mutes that are on: no notifications for a server or a group until `until` (checks go on)."""

    role_object = "mute"

    @list_schema("mutes", MuteSerializer)
    def get(self, request):
        qs = Mute.objects.filter(until__gt=timezone.now()).select_related("server").order_by("until", "id")
        return listed(request, in_groups(request, qs, *MAINT_PATHS), "mutes", MuteSerializer)

    @extend_schema(request=MuteSerializer, responses={201: MuteSerializer})
    def post(self, request):
        data = {k: v for k, v in body_of(request).items() if k in MUTE_KEYS}
        _target_group(request, data, "mute")
        apply_one("mutes", data, request)
        origin = _origin(data.get("server")) if data.get("server") is not None else None
        made = _mute_of(origin, str(data.get("group") or ""), timezone.now())
        if made is None:  # muted until a time that has passed: written, and over already
            raise Invalid({"until": "a mute ends in the future"})
        return Response(MuteSerializer(made).data, status=status.HTTP_201_CREATED)


class MuteDetail(APIView):
    role_object = "mute"

    @extend_schema(responses=MuteSerializer)
    def get(self, request, pk: int):
        return Response(MuteSerializer(_one(request, Mute.objects, pk, "mute", *MAINT_PATHS)).data)

    @extend_schema(responses={204: None}, description="Ends the mute now.")
    def delete(self, request, pk: int):
        _one(request, Mute.objects, pk, "mute", *MAINT_PATHS).delete()
        return Response(status=status.HTTP_204_NO_CONTENT)


# -- status pages ------------------------------------------------------------------------------------------
def _page(request, slug: str) -> StatusPage:
    page = in_groups(request, StatusPage.objects, "group").filter(slug=slug).first()
    if page is None:
        raise exceptions.NotFound(f"no status page {slug!r}")
    return page


class StatusPageList(APIView):
    """Public status pages of server groups (/status/<slug>/): what they show is a superuser's to decide."""

    role_object = "status_page"

    @list_schema("status_pages", StatusPageSerializer)
    def get(self, request):
        qs = in_groups(request, StatusPage.objects.order_by("slug"), "group")
        return listed(request, qs, "status_pages", StatusPageSerializer)

    @extend_schema(request=StatusPageSerializer, responses={201: StatusPageSerializer})
    def post(self, request):
        data = {k: v for k, v in body_of(request).items() if k in STATUS_PAGE_KEYS}
        check_group(request, str(data.get("group") or ""), action="create", obj="status_page")
        if StatusPage.objects.filter(slug=str(data.get("slug"))).exists():
            raise Invalid({"slug": "a status page of this address exists: PATCH it"})
        apply_one("status_pages", data, request)
        return Response(StatusPageSerializer(StatusPage.objects.get(slug=data["slug"])).data,
                        status=status.HTTP_201_CREATED)  # fmt: skip


class StatusPageDetail(APIView):
    role_object = "status_page"

    @extend_schema(responses=StatusPageSerializer)
    def get(self, request, slug: str):
        return Response(StatusPageSerializer(_page(request, slug)).data)

    @extend_schema(request=StatusPageSerializer(partial=True), responses=StatusPageSerializer)
    def patch(self, request, slug: str):
        page = _page(request, slug)
        data = {k: v for k, v in body_of(request).items() if k in STATUS_PAGE_KEYS and k != "slug"}
        check_group(request, str(data.get("group", page.group)), action="update", obj="status_page")
        apply_one("status_pages", {**data, "slug": page.slug}, request)
        return Response(StatusPageSerializer(StatusPage.objects.get(slug=page.slug)).data)

    @extend_schema(responses={204: None})
    def delete(self, request, slug: str):
        _page(request, slug).delete()
        return Response(status=status.HTTP_204_NO_CONTENT)


# -- incidents ---------------------------------------------------------------------------------------------
def _incident(request, pk: int) -> Incident:
    return _one(request, Incident.objects.select_related("server"), pk, "incident", "server__group")


class IncidentList(APIView):
    """Incidents, newest first: opened by a confirmed outage (or here, by an operator), told by their updates.
    `?open=1`: only those not resolved. Opening one by hand is a superuser's; operators post updates."""

    role_object = "incident"

    @list_schema("incidents", IncidentSerializer, OpenApiParameter("open", bool))
    def get(self, request):
        qs = Incident.objects.select_related("server").prefetch_related("updates").order_by("-opened_at", "-id")
        if request.query_params.get("open") in ("1", "true"):
            qs = qs.filter(resolved_at__isnull=True)

        def rows(page: list[Incident]) -> list:
            # A page's evidence in one query, not one an incident.
            return IncidentSerializer(page, many=True, context={"evidence": incidents_evidence(page)}).data

        return listed(request, in_groups(request, qs, "server__group"), "incidents", IncidentSerializer, rows=rows)

    @extend_schema(request=IncidentCreateSerializer, responses={201: IncidentSerializer})
    def post(self, request):
        form = IncidentCreateSerializer(data=body_of(request))
        if not form.is_valid():
            raise exceptions.ValidationError(form.errors)
        server = _server_named(request, request.data.get("server"))
        values = form.validated_data
        with transaction.atomic():
            if Incident.objects.select_for_update().filter(server=server, resolved_at__isnull=True).exists():
                raise Invalid({"server": "this server has an open incident: post an update to it"})
            incident = Incident.objects.create(server=server, title=values["title"])
            try:
                incident_update_add(incident_id=incident.id, status=values.get("status", Incident.INVESTIGATING),
                                    text=values["text"], author=request.user.get_username())  # fmt: skip
            except IncidentError as exc:
                raise Invalid({"text": str(exc)}) from None
        incident.refresh_from_db()
        return Response(IncidentSerializer(incident).data, status=status.HTTP_201_CREATED)


class IncidentDetail(APIView):
    role_object = "incident"

    @extend_schema(responses=IncidentSerializer)
    def get(self, request, pk: int):
        return Response(IncidentSerializer(_incident(request, pk)).data)


class IncidentUpdates(APIView):
    """POST: an update in the operator's words; the incident takes its status (`resolved` closes it). It
    shows on the status pages of the server's group."""

    role_object, post_action = "incident", "update"

    @extend_schema(request=IncidentUpdateSerializer, responses={201: IncidentSerializer})
    def post(self, request, pk: int):
        incident = _incident(request, pk)
        check_group(request, incident.server.group, action="update", obj="incident")
        form = IncidentUpdateSerializer(data=body_of(request))
        if not form.is_valid():
            raise exceptions.ValidationError(form.errors)
        try:
            incident_update_add(incident_id=incident.id, status=form.validated_data["status"],
                                text=form.validated_data["text"], author=request.user.get_username())  # fmt: skip
        except IncidentError as exc:
            raise Invalid({"status": str(exc)}) from None
        incident.refresh_from_db()
        return Response(IncidentSerializer(incident).data, status=status.HTTP_201_CREATED)


# -- reports -----------------------------------------------------------------------------------------------
class DeadLinkSerializer(serializers.Serializer):
    """One row of the dead-links CSV (reports.selectors.EXPORT_COLUMNS, in that order)."""

    site = serializers.CharField()
    owner = serializers.CharField(allow_blank=True)
    source_url = serializers.CharField()
    anchor_text = serializers.CharField(allow_blank=True)
    element = serializers.CharField(allow_blank=True)
    target_url = serializers.CharField()
    status = serializers.IntegerField(allow_null=True)
    failure_kind = serializers.CharField(allow_blank=True)
    redirect_chain = serializers.CharField(allow_blank=True)
    first_broken_at = serializers.CharField(allow_blank=True)
    last_checked_at = serializers.CharField(allow_blank=True)


class DeadLinks(APIView):
    """The broken links as the dead-links CSV has them (its columns), of the servers the reader may see."""

    @list_schema("dead_links", DeadLinkSerializer, OpenApiParameter("group", str))
    def get(self, request):
        limit, offset = page_of(request)
        group = request.query_params.get("group", "")[:100]
        if group:
            check_group(request, group)
        filters = {"group": group, "groups": groups_of(request)}
        rows = list(islice(dead_links_export_rows(**filters), offset, offset + limit)) if limit else []
        return Response({"count": link_breaks_open(**filters).count(), "limit": limit, "offset": offset,
                         "dead_links": rows})  # fmt: skip


class UptimeRowSerializer(serializers.Serializer):
    server = serializers.CharField()
    group = serializers.CharField(allow_blank=True)
    month = serializers.CharField()
    uptime_percent = serializers.FloatField(allow_null=True)
    downtime_seconds = serializers.IntegerField()
    incidents = serializers.IntegerField()
    longest_incident_seconds = serializers.IntegerField()
    mean_latency_ms = serializers.FloatField(allow_null=True)
    p95_latency_ms = serializers.FloatField(allow_null=True)
    sla_target = serializers.FloatField(allow_null=True)
    sla_met = serializers.BooleanField(allow_null=True)


class UptimeAnswerSerializer(serializers.Serializer):
    month = serializers.CharField()
    rows = UptimeRowSerializer(many=True)


class Uptime(APIView):
    """`?month=YYYY-MM` (default: this month): each monitor's uptime, downtime, incidents, latency and SLA,
    as `manage.py uptime_report` has them."""

    @extend_schema(parameters=[OpenApiParameter("month", str, description="YYYY-MM"), OpenApiParameter("group", str)],
                   responses=UptimeAnswerSerializer)  # fmt: skip
    def get(self, request):
        group = request.query_params.get("group") or None
        if group:
            check_group(request, group)
        month = request.query_params.get("month") or None
        try:
            report = uptime_report(month=month, group=group, groups=groups_of(request))
        except ReportError as exc:
            raise Invalid({"month": str(exc)}) from None
        return Response({"month": report.month, "rows": report.rows})


# -- the index ---------------------------------------------------------------------------------------------
RESOURCES = {
    "servers": "api-v1-servers", "monitors": "api-v1-monitors", "channels": "api-v1-channels",
    "maintenance": "api-v1-maintenance", "maintenance_windows": "api-v1-windows", "mutes": "api-v1-mutes",
    "status_pages": "api-v1-status-pages", "incidents": "api-v1-incidents", "jobs": "api-v1-jobs",
    "dead_links": "api-v1-dead-links", "uptime": "api-v1-uptime", "search": "api-v1-search",
    "freshness": "api-v1-freshness",
}  # fmt: skip


class IndexSerializer(serializers.Serializer):
    resources = serializers.DictField(child=serializers.CharField())
    schema = serializers.CharField()
    docs = serializers.CharField()
    paging = serializers.CharField()


class Index(APIView):
    """What /api/v1/ holds: each resource's address, the schema and its documentation pages."""

    @extend_schema(responses=IndexSerializer)
    def get(self, request):
        return Response({
            "resources": {name: reverse(url) for name, url in RESOURCES.items()},
            "schema": reverse("api-v1-schema"),
            "docs": reverse("api-v1-docs"),
            "paging": f"?limit= (at most {MAX_PAGE}) and ?offset=; a list answers count, limit, offset and its rows",
        })  # fmt: skip
