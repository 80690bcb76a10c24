from __future__ import annotations

from django.contrib import admin

from crawlcore.admin import ReaderScopedAdmin

from .models import Domain, PageAnalysis


@admin.register(PageAnalysis)
class PageAnalysisAdmin(ReaderScopedAdmin):
    group_paths = ("page__url__server__group",)
    list_display = ("page_id", "host", "language", "media_type", "content_class", "homepage", "analyzed_at")
    list_filter = ("language", "content_class", "homepage_kind", "tld")
    search_fields = ("host", "homepage")
    raw_id_fields = ("page",)
    list_select_related = False
    show_full_result_count = False  # a COUNT(*) over a million rows on every page view is not worth it

    def has_add_permission(self, request) -> bool:
        return False  # derived data: `manage.py analyze` writes it


@admin.register(Domain)
class DomainAdmin(ReaderScopedAdmin):  # the whole crawl: unlimited readers only
    list_display = ("name", "tld", "suffix", "ip", "resolved_at")
    list_filter = ("tld",)
    search_fields = ("name",)
    show_full_result_count = False

    def has_add_permission(self, request) -> bool:
        return False
