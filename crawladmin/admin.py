"""Admin registration: a plain, working view of the crawl's tables (the operator UI issue builds on it)."""

from __future__ import annotations

from django.contrib import admin

from .models import Link, Page, Server, StatusCheck, Url, UrlEvent


@admin.register(Server)
class ServerAdmin(admin.ModelAdmin):
    list_display = ("origin", "ip", "group", "crawler_num", "enabled", "excluded_reason", "crawl_delay", "robots_kind")
    list_filter = ("enabled", "group", "crawler_num", "robots_kind")
    search_fields = ("host",)
    readonly_fields = ("robots_txt", "robots_fetched_at", "next_request_at", "dispatched_at")


class UrlEventInline(admin.TabularInline):
    model = UrlEvent
    extra = 0
    can_delete = False
    readonly_fields = ("at", "from_state", "to_state", "agent", "crawler_num", "http_status", "latency_ms", "reason")


@admin.register(Url)
class UrlAdmin(admin.ModelAdmin):
    list_display = ("url", "state", "last_status", "failure_kind", "depth", "exclusion_reason", "last_checked_at")
    list_filter = ("state", "last_status", "failure_kind", "exclusion_reason")
    search_fields = ("url",)
    list_select_related = ("server",)
    raw_id_fields = ("server",)
    inlines = [UrlEventInline]
    readonly_fields = ("url_hash", "lease_owner", "lease_expires_at")


@admin.register(Page)
class PageAdmin(admin.ModelAdmin):
    list_display = ("url", "title", "content_type", "size", "fetched_at", "extracted_at", "duplicate_of")
    search_fields = ("title", "url__url")
    raw_id_fields = ("url", "duplicate_of")
    exclude = ("body_z",)


@admin.register(StatusCheck)
class StatusCheckAdmin(admin.ModelAdmin):
    list_display = ("requested_url", "checked_at", "status_code", "category", "failure_kind", "latency_ms", "agent")
    list_filter = ("category", "failure_kind", "agent", "crawler_num")
    raw_id_fields = ("url", "server")
    date_hierarchy = "checked_at"


@admin.register(Link)
class LinkAdmin(admin.ModelAdmin):
    list_display = ("from_url", "to_url")
    raw_id_fields = ("from_url", "to_url")
