"""Admin: per-server monitoring settings and status, the status timeline, rollups, maintenance windows."""

from __future__ import annotations

from django.contrib import admin, messages
from django.urls import reverse
from django.utils.html import format_html

from crawlcore.admin import ReaderScopedAdmin, ServerAdmin, log_change
from crawlcore.admin_base import RoleInline
from crawlcore.models import Server
from crawler.status import Category, Status

from .check_stats import COUNT_FIELDS
from .models import HourlyRollup, Incident, IncidentUpdate, MaintenanceWindow, ServerMonitor, StatusChange
from .services.checks import monitors_check
from .services.incidents import incident_status_sync

CHECK_NOW_LIMIT = 20  # checks run in the request: at most this many servers, each bounded by the timeouts
STATUS_COLOURS = {
    Status.NORMAL: "#3a9d4f",
    Status.DELAY: "#e3a21a",
    Status.DISCONNECT: "#7b3fa0",
    Status.ERROR: "#c8352b",
    Status.MAINTENANCE: "#4a7ab5",
}


def _badge(status: str) -> str:
    colour = STATUS_COLOURS.get(status, "#999")
    style = f"background:{colour};color:#fff;padding:1px 7px;border-radius:8px"
    return format_html('<span style="{}">{}</span>', style, status)


class MonitorStatusFilter(admin.SimpleListFilter):
    title = "monitoring status"
    parameter_name = "monitor_status"

    def lookups(self, request, model_admin):
        statuses = [*(c.value for c in Category), Status.UNKNOWN.value]
        return [(s, s) for s in statuses] + [("none", "not monitored")]

    def queryset(self, request, queryset):
        value = self.value()
        if value == "none":
            return queryset.filter(monitor__isnull=True)
        if value:
            return queryset.filter(monitor__status=value)
        return queryset


class MonitoredServerAdmin(ServerAdmin):
    """The crawl core's server page, with what monitoring adds: each server's confirmed status, a filter
    on it, and "check now"."""

    list_display = ("origin", "status_badge", *ServerAdmin.list_display[1:])
    list_filter = (ServerAdmin.list_filter[0], MonitorStatusFilter, *ServerAdmin.list_filter[1:])
    list_select_related = ("monitor",)
    actions = [*ServerAdmin.actions[:3], "check_now", *ServerAdmin.actions[3:]]

    @admin.display(description="status", ordering="monitor__status")
    def status_badge(self, obj: Server) -> str:
        monitor = getattr(obj, "monitor", None)
        return _badge(monitor.status) if monitor is not None else "–"

    @admin.action(description="Check now (monitoring)", permissions=["run"])
    def check_now(self, request, queryset):
        ids = list(queryset.values_list("id", flat=True))
        if len(ids) > CHECK_NOW_LIMIT:
            self.message_user(
                request,
                f"Check at most {CHECK_NOW_LIMIT} servers at once (the checks run in this request).",
                messages.ERROR,
            )
            return
        # One check of each monitored server now, in this request, whether due or not.
        checked = monitors_check(server_ids=ids, claim=False)
        done = [c.target.server_id for c in checked]
        log_change(request, Server, done, "Checked now")
        summary = ", ".join(f"{c.target.url}: {c.category}" for c in checked)
        missing = len(ids) - len(done)
        note = f"; {missing} not monitored (or disabled), not checked" if missing else ""
        self.message_user(request, f"Checked {len(done)} server(s){note}. {summary}", messages.SUCCESS)


admin.site.unregister(Server)
admin.site.register(Server, MonitoredServerAdmin)


@admin.register(ServerMonitor)
class ServerMonitorAdmin(ReaderScopedAdmin):
    group_paths = ("server__group",)
    role_object = "monitor"  # its kind, nameserver and server a superuser's (crawlcore.roles)
    list_display = (
        "server",
        "name",
        "kind",
        "enabled",
        "status",
        "status_since",
        "last_category",
        "last_check_at",
        "interval_s",
        "delay_threshold_s",
        "accepted_codes",
        "next_check_at",
    )
    list_filter = ("enabled", "kind", "status", "last_category", "server__group", "server__crawler_num")
    search_fields = ("server__host", "health_url", "name")
    list_select_related = ("server",)
    raw_id_fields = ("server",)
    readonly_fields = (
        "status",
        "status_since",
        "candidate",
        "streak",
        "last_check_at",
        "last_category",
        "dispatched_at",
        "claim_token",
        "last_ping_at",
        "last_ping_kind",
        "ping_started_at",
        "last_ping_body",
    )


@admin.register(StatusChange)
class StatusChangeAdmin(ReaderScopedAdmin):
    group_paths = ("server__group",)
    list_display = ("server", "at", "from_status", "to_status", "reason")
    list_filter = ("to_status", "from_status")
    search_fields = ("server__host",)
    raw_id_fields = ("server", "status_check")
    date_hierarchy = "at"


@admin.register(HourlyRollup)
class HourlyRollupAdmin(ReaderScopedAdmin):
    group_paths = ("server__group",)
    list_display = (
        "server",
        "hour",
        *COUNT_FIELDS,
        "latency_min_ms",
        "latency_mean_ms",
        "latency_p95_ms",
        "latency_max_ms",
    )
    raw_id_fields = ("server",)
    date_hierarchy = "hour"


@admin.register(MaintenanceWindow)
class MaintenanceWindowAdmin(ReaderScopedAdmin):
    group_paths = ("server__group",)
    role_object = "maintenance"
    list_display = ("server", "starts_at", "ends_at", "reason")
    raw_id_fields = ("server",)


class IncidentUpdateInline(RoleInline, admin.TabularInline):
    role_object = "incident"
    model = IncidentUpdate
    extra = 1
    fields = ("status", "text", "at", "author")
    readonly_fields = ("author",)
    ordering = ("at", "id")


@admin.register(Incident)
class IncidentAdmin(ReaderScopedAdmin):
    """Incidents and their updates: an operator adds an update (investigating, identified, monitoring,
    resolved) with text; the incident takes the status of its latest update. Shown on the status pages."""

    group_paths = ("server__group",)
    role_object = "incident"
    list_display = ("title", "server", "status", "opened_at", "resolved_at")
    list_filter = ("status",)
    search_fields = ("title", "server__host")
    raw_id_fields = ("server", "status_change")
    readonly_fields = ("status", "resolved_at", "evidence")

    @admin.display(description="evidence")
    def evidence(self, obj: Incident) -> str:
        """The dashboard's incident page: what the server answered (kept by monitoring.services.evidence)."""
        if obj.pk is None:
            return "-"
        return format_html('<a href="{}">what it answered</a>', reverse("dashboard:incident", args=[obj.pk]))
    inlines = [IncidentUpdateInline]
    date_hierarchy = "opened_at"

    def save_formset(self, request, form, formset, change):
        updates = formset.save(commit=False)
        for update in updates:
            if not update.pk:
                update.author = request.user.get_username()
            update.save()
        for gone in formset.deleted_objects:
            gone.delete()
        formset.save_m2m()
        incident_status_sync(incident_id=form.instance.pk)
