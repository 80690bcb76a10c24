"""Admin registration: the crawl's tables, with the operators' tools.

Servers show their last check and latency, and carry bulk actions: enable / disable, pin to a crawler
number, crawl now, revive their Dead URLs. URLs carry re-queue, revive and exclude. The apps built on the
crawl core extend these pages from their own admin modules (monitoring: the status and "check now";
ranking: each page's rank), so nothing here imports them. Every action calls a service of
crawlcore.services.operator (no business logic here), needs the change permission (the "operator" group
has it, "viewer" has view only), and is recorded in the admin's log.

Filters on the big tables offer fixed choices rather than Django's distinct-value lists, which would
scan a million URLs on every page.

Every page here is a ReaderScopedAdmin: a reader limited to server groups (crawlcore.access) sees in the
admin what the dashboard shows it, its groups' rows (lists, change pages, history, filters, actions) and
none of what describes the whole crawl; another group's row is a 404 and a whole-crawl page a 403. Only a
superuser edits a server's address, trust and owner e-mail (access.SUPERUSER_SERVER_FIELDS).
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.db.models import OuterRef, Subquery
from django.shortcuts import render
from django.utils import timezone
from django.utils.timesince import timesince

from crawler.hosthealth import until_parse
from crawler.http import FailureKind
from crawler.lifecycle import State

from . import access, workers
from .admin_base import NamedValuesFilter, ReaderScopedAdmin, log_change
from .models import Link, Page, Server, Sitemap, StatusCheck, Url, UrlEvent
from .selectors_health import server_health
from .services import operator
from .services.health import health_pause, health_resume

MAX_ID = 2**63 - 1  # the largest id a 64-bit integer column holds


class PauseForm(forms.Form):
    until = forms.CharField(
        required=False, max_length=40,
        help_text="Empty: until resumed. A time (2026-05-01T18:00, in TIME_ZONE) or a span (30m, 2h, 1d)",
    )  # fmt: skip
    note = forms.CharField(required=False, max_length=200, help_text="Why, in a few words")

    def clean_until(self):
        text = self.cleaned_data["until"].strip()
        if not text:
            return None
        try:
            return until_parse(text, timezone.now(), timezone.get_current_timezone())
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None


class PinForm(forms.Form):
    crawler_num = forms.IntegerField(
        required=False, min_value=0, max_value=10_000, help_text="Empty: unpin (any worker may take them)"
    )


@admin.register(Server)
class ServerAdmin(ReaderScopedAdmin):
    list_display = (
        "origin",
        "group",
        "crawler_num",
        "enabled",
        "last_check",
        "latency",
        "ip",
        "excluded_reason",
        "health",
    )
    list_filter = ("enabled", ("group", NamedValuesFilter), "crawler_num", ("robots_kind", NamedValuesFilter))
    search_fields = ("host", "ip", "group")
    # What the crawler and the monitor learn (the address last resolved, robots.txt, the load profile, the
    # schedule) is shown, not edited: an operator's value there would be overwritten at the next visit.
    readonly_fields = (
        "health", "ip", "robots_txt", "robots_kind", "robots_fetched_at", "crawl_delay", "sitemaps_read_at",
        "next_request_at", "dispatched_at", "paused_until", "load_profile", "load_profile_at", "alias_of",
    )  # fmt: skip
    actions = ["enable", "disable", "pin", "crawl_now", "revive_dead", "pause_crawl", "resume_crawl"]
    group_paths = ("group",)
    role_object = "server"  # and its address, trust and owner's address a superuser's (crawlcore.roles)

    def get_queryset(self, request):
        newest = StatusCheck.objects.filter(server=OuterRef("pk")).order_by("-checked_at")
        return (
            super()
            .get_queryset(request)
            .annotate(
                last_checked=Subquery(newest.values("checked_at")[:1]),
                last_latency=Subquery(newest.values("latency_ms")[:1]),
                last_status=Subquery(newest.values("status_code")[:1]),
                last_failure=Subquery(newest.values("failure_kind")[:1]),
            )
        )

    @admin.display(description="health")
    def health(self, obj: Server) -> str:
        h = server_health(server=obj)
        return " · ".join(p for p in (h["state"].replace("_", " "), h["source"], h["reason"]) if p)

    @admin.action(description="Pause the crawl of selected servers…", permissions=["change"])
    def pause_crawl(self, request, queryset):
        ids = list(queryset.values_list("id", flat=True))
        form = PauseForm(request.POST if "apply" in request.POST else None)
        if "apply" in request.POST and form.is_valid():
            until, note = form.cleaned_data["until"], form.cleaned_data["note"]
            n = health_pause(server_ids=ids, by=request.user.get_username(), until=until, note=note)
            log_change(request, Server, ids, f"Crawl paused until {until.isoformat() if until else 'resumed'}")
            self.message_user(request, f"Paused the crawl of {n} server(s).", messages.SUCCESS)
            return None
        return render(
            request,
            "admin/crawladmin/server/pause.html",
            {
                **self.admin_site.each_context(request),
                "title": "Pause the crawl of servers",
                "form": form,
                "servers": queryset,
                "opts": self.model._meta,
                "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
            },
        )

    @admin.action(description="Resume the crawl of selected servers", permissions=["change"])
    def resume_crawl(self, request, queryset):
        ids = list(queryset.values_list("id", flat=True))
        n = health_resume(server_ids=ids, by=request.user.get_username())
        log_change(request, Server, ids, "Crawl resumed")
        self.message_user(request, f"Resumed the crawl of {n} server(s).", messages.SUCCESS)

    @admin.display(description="last check", ordering="last_checked")
    def last_check(self, obj: Server):
        return obj.last_checked

    @admin.display(description="latency", ordering="last_latency")
    def latency(self, obj: Server) -> str:
        # A check with no answer has no latency: its latency_ms is how long we waited before giving up.
        if obj.last_latency is None:
            return "–"
        if obj.last_status is None:
            return f"no answer ({obj.last_failure or 'failed'})"
        return f"{obj.last_latency:.0f} ms"

    @admin.action(description="Enable selected servers", permissions=["run"])
    def enable(self, request, queryset):
        ids = list(queryset.values_list("id", flat=True))
        n = operator.servers_set_enabled(server_ids=ids, enabled=True)
        log_change(request, Server, ids, "Enabled")
        self.message_user(request, f"Enabled {n} server(s).", messages.SUCCESS)

    @admin.action(description="Disable selected servers", permissions=["run"])
    def disable(self, request, queryset):
        ids = list(queryset.values_list("id", flat=True))
        n = operator.servers_set_enabled(server_ids=ids, enabled=False)
        log_change(request, Server, ids, "Disabled")
        self.message_user(request, f"Disabled {n} server(s).", messages.SUCCESS)

    @admin.action(description="Pin selected servers to a crawler number…", permissions=["run"])
    def pin(self, request, queryset):
        ids = list(queryset.values_list("id", flat=True))
        if "apply" in request.POST:
            form = PinForm(request.POST)
            if form.is_valid():
                num = form.cleaned_data["crawler_num"]
                n = operator.servers_pin(server_ids=ids, crawler_num=num)
                log_change(request, Server, ids, f"Pinned to crawler {num}" if num is not None else "Unpinned")
                done = f"pinned to crawler {num}" if num is not None else "unpinned"
                self.message_user(request, f"{n} server(s) {done}.", messages.SUCCESS)
                return None
        else:
            form = PinForm()
        return render(
            request,
            "admin/crawladmin/server/pin.html",
            {
                **self.admin_site.each_context(request),
                "title": "Pin servers to a crawler number",
                "form": form,
                "servers": queryset,
                "opts": self.model._meta,
                "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
            },
        )

    @admin.action(description="Crawl now (dispatch due URLs)", permissions=["run"])
    def crawl_now(self, request, queryset):
        ids = list(queryset.values_list("id", flat=True))
        sent = operator.servers_crawl_now(server_ids=ids)
        log_change(request, Server, ids, f"Crawl dispatched ({sent} load task(s) for {len(ids)} server(s))")
        waits = workers.queued_work_waits()
        self.message_user(
            request,
            f"Sent {sent} load task(s); servers without due Init URLs, paused or already dispatched were skipped."
            + (workers.NO_WORKER if waits and sent else ""),
            messages.WARNING if waits and sent else messages.SUCCESS,
        )

    @admin.action(description="Revive Dead URLs of selected servers", permissions=["run"])
    def revive_dead(self, request, queryset):
        ids = list(queryset.values_list("id", flat=True))
        n = operator.servers_revive_dead(server_ids=ids)
        log_change(request, Server, ids, f"Revived {n} Dead URL(s)")
        self.message_user(request, f"Revived {n} Dead URL(s).", messages.SUCCESS)


class UrlEventInline(admin.TabularInline):
    model = UrlEvent
    extra = 0
    can_delete = False
    ordering = ("-at",)
    readonly_fields = ("at", "from_state", "to_state", "agent", "crawler_num", "http_status", "latency_ms", "reason")

    def has_add_permission(self, request, obj=None) -> bool:
        return False


class ServerFilter(admin.SimpleListFilter):
    """Servers by host, from the Server table (not a DISTINCT over every URL)."""

    title = "server"
    parameter_name = "server"
    LIMIT = 200

    def lookups(self, request, model_admin):
        servers = access.rows_visible(request.user, Server.objects.all(), ("group",))
        return [(str(s.pk), str(s)) for s in servers.order_by("host", "port")[: self.LIMIT]]

    def queryset(self, request, queryset):
        value = self.value()
        if not (value and value.isascii() and value.isdigit()):
            return queryset
        if int(value) > MAX_ID:  # no row has it; SQLite would raise on an integer past 64 bits
            return queryset.none()
        return queryset.filter(server_id=int(value))


class LastStatusFilter(admin.SimpleListFilter):
    title = "last status"
    parameter_name = "last_status_class"

    def lookups(self, request, model_admin):
        return [("2", "2xx"), ("3", "3xx"), ("4", "4xx"), ("5", "5xx"), ("none", "no response")]

    def queryset(self, request, queryset):
        value = self.value()
        if value == "none":
            return queryset.filter(last_status__isnull=True)
        if value in {"2", "3", "4", "5"}:
            low = int(value) * 100
            return queryset.filter(last_status__gte=low, last_status__lt=low + 100)
        return queryset


class FailureKindFilter(admin.SimpleListFilter):
    title = "failure kind"
    parameter_name = "failure_kind"

    def lookups(self, request, model_admin):
        return [(k.value, k.value) for k in FailureKind]

    def queryset(self, request, queryset):
        return queryset.filter(failure_kind=self.value()) if self.value() else queryset


@admin.register(Url)
class UrlAdmin(ReaderScopedAdmin):
    list_display = (
        "url",
        "state",
        "last_status",
        "failure_kind",
        "depth",
        "exclusion_reason",
        "last_checked_at",
        "next_check",
    )
    list_filter = ("state", ServerFilter, LastStatusFilter, FailureKindFilter, "in_sitemap")
    search_fields = ("url",)
    list_select_related = ("server",)
    raw_id_fields = ("server",)
    inlines = [UrlEventInline]
    readonly_fields = ("url_hash", "lease_owner", "lease_expires_at")
    show_full_result_count = False  # a COUNT(*) over a million URLs on every page is wasted
    actions = ["requeue", "revive", "exclude_urls"]
    group_paths = ("server__group",)

    @admin.display(description="next check", ordering="next_check_at")
    def next_check(self, obj: Url) -> str:
        """When the URL is due: Init URLs are loaded, Visited re-checked by the staleness sweep (its
        next_check_at is the earliest it may be), NoResponse ones re-checked after their back-off."""
        if obj.exclusion_reason or obj.state == State.DEAD.value:
            return "never (until revived)" if obj.state == State.DEAD.value else "never (excluded)"
        if obj.next_check_at is None:
            return "–"
        if obj.next_check_at <= timezone.now():
            return "due now"
        return f"in {timesince(timezone.now(), obj.next_check_at)}"

    @admin.action(description="Re-queue (due now: Init and NoResponse URLs)", permissions=["change"])
    def requeue(self, request, queryset):
        ids = list(queryset.values_list("id", flat=True))
        n = operator.urls_requeue(url_ids=ids)
        log_change(request, Url, ids, "Re-queued")
        skipped = f"; {len(ids) - n} left alone (Visited, Dead, excluded or being worked on)" if n < len(ids) else ""
        # Re-queued URLs are due now: a worker takes them at the next dispatch, if there is a worker.
        waits = workers.queued_work_waits() and n > 0
        self.message_user(
            request,
            f"Re-queued {n} URL(s){skipped}: due now, loaded at the next dispatch."
            + (workers.NO_WORKER if waits else ""),
            messages.WARNING if waits else messages.SUCCESS,
        )

    @admin.action(description="Revive (Dead → Init)", permissions=["change"])
    def revive(self, request, queryset):
        revived = operator.urls_revive_dead(url_ids=list(queryset.values_list("id", flat=True)))
        log_change(request, Url, revived, "Revived")
        waits = workers.queued_work_waits() and bool(revived)
        self.message_user(
            request,
            f"Revived {len(revived)} Dead URL(s): Init, loaded at the next dispatch."
            + (workers.NO_WORKER if waits else ""),
            messages.WARNING if waits else messages.SUCCESS,
        )

    @admin.action(description="Exclude (never fetched again)", permissions=["change"])
    def exclude_urls(self, request, queryset):
        ids = list(queryset.values_list("id", flat=True))
        done = operator.urls_exclude(url_ids=ids)
        log_change(request, Url, done, "Excluded by an operator")
        self.message_user(request, f"Excluded {len(done)} URL(s) (of {len(ids)} selected).", messages.SUCCESS)


@admin.register(Page)
class PageAdmin(ReaderScopedAdmin):
    list_display = ("url", "title", "content_type", "size", "fetched_at", "extracted_at", "extract_problem",
                    "duplicate_of", "render_reason", "rendered_at")  # fmt: skip
    search_fields = ("title", "url__url")
    raw_id_fields = ("url", "duplicate_of")
    exclude = ("body_z", "dom_z")
    list_select_related = ("url", "duplicate_of")
    show_full_result_count = False
    group_paths = ("url__server__group",)


@admin.register(StatusCheck)
class StatusCheckAdmin(ReaderScopedAdmin):
    list_display = ("requested_url", "checked_at", "status_code", "category", "failure_kind", "latency_ms", "agent")
    list_filter = ("category", ("failure_kind", NamedValuesFilter), "agent", "crawler_num")
    raw_id_fields = ("url", "server")
    date_hierarchy = "checked_at"
    show_full_result_count = False
    group_paths = ("server__group",)


@admin.register(Link)
class LinkAdmin(ReaderScopedAdmin):
    list_display = ("from_url", "to_url")
    raw_id_fields = ("from_url", "to_url")
    show_full_result_count = False
    group_paths = ("from_url__server__group",)


@admin.register(Sitemap)
class SitemapAdmin(ReaderScopedAdmin):
    """Each server's sitemap files as last read; a bad one with its error."""

    list_display = ("url", "source", "kind", "status_code", "urls_listed", "urls_added", "error", "fetched_at")
    list_filter = ("source", "kind", ServerFilter)
    search_fields = ("url", "error")
    list_select_related = ("server",)
    raw_id_fields = ("server",)
    group_paths = ("server__group",)


from . import admin_freshness, admin_jobs  # noqa: E402, F401  (objectives, jobs and runs: their own modules)
