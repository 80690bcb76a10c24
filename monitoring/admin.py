"""Admin: per-server monitoring settings and status, the status timeline, rollups, maintenance windows."""

from __future__ import annotations

from django.contrib import admin

from .models import HourlyRollup, MaintenanceWindow, ServerMonitor, StatusChange


@admin.register(ServerMonitor)
class ServerMonitorAdmin(admin.ModelAdmin):
    list_display = (
        "server",
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
    list_filter = ("enabled", "status", "last_category", "server__group", "server__crawler_num")
    search_fields = ("server__host", "health_url")
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
        "load_profile",
        "load_profile_at",
    )


@admin.register(StatusChange)
class StatusChangeAdmin(admin.ModelAdmin):
    list_display = ("server", "at", "from_status", "to_status", "reason")
    list_filter = ("to_status", "from_status")
    search_fields = ("server__host",)
    raw_id_fields = ("server", "status_check")
    date_hierarchy = "at"


@admin.register(HourlyRollup)
class HourlyRollupAdmin(admin.ModelAdmin):
    list_display = (
        "server",
        "hour",
        "normal",
        "delay",
        "disconnect",
        "error",
        "maintenance",
        "latency_min_ms",
        "latency_mean_ms",
        "latency_p95_ms",
        "latency_max_ms",
    )
    raw_id_fields = ("server",)
    date_hierarchy = "hour"


@admin.register(MaintenanceWindow)
class MaintenanceWindowAdmin(admin.ModelAdmin):
    list_display = ("server", "starts_at", "ends_at", "reason")
    raw_id_fields = ("server",)
