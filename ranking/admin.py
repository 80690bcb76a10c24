"""Ranks in the admin: read-only (each run rewrites them), sortable by rank, filtered by site, domain
and community."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import OuterRef, Subquery

from crawlcore.admin import PageAdmin, ReaderScopedAdmin
from crawlcore.models import Page

from .models import PageRank, RankRun


class RankedPageAdmin(PageAdmin):
    """The crawl core's page list with each page's rank beside its title, sortable."""

    list_display = (*PageAdmin.list_display[:2], "rank", *PageAdmin.list_display[2:])

    def get_queryset(self, request):
        rank = PageRank.objects.filter(url_id=OuterRef("url_id")).values("rank")[:1]
        return super().get_queryset(request).annotate(page_rank=Subquery(rank))

    @admin.display(description="rank", ordering="page_rank")
    def rank(self, obj: Page) -> str:
        return "–" if obj.page_rank is None else f"{obj.page_rank:.6g}"


admin.site.unregister(Page)
admin.site.register(Page, RankedPageAdmin)


@admin.register(PageRank)
class PageRankAdmin(ReaderScopedAdmin):
    group_paths = ("server__group",)
    list_display = ("url", "rank_display", "server", "domain", "community", "local_rank", "block_rank", "computed_at")
    list_filter = (("server", admin.RelatedOnlyFieldListFilter), "domain", "community")
    search_fields = ("url__url", "domain", "community")
    ordering = ("-rank",)
    list_select_related = ("url", "server")
    show_full_result_count = False  # a COUNT(*) over a million rows on every page is wasted
    list_per_page = 50

    @admin.display(description="rank", ordering="rank")
    def rank_display(self, obj: PageRank) -> str:
        return f"{obj.rank:.6g}"

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(RankRun)
class RankRunAdmin(ReaderScopedAdmin):  # the whole crawl: unlimited readers only
    list_display = (
        "finished_at", "method", "block", "pages", "duplicates", "links", "blocks", "local_iterations",
        "block_iterations", "global_iterations", "uniform_iterations", "converged", "l1_to_exact", "read_seconds",
        "convert_seconds", "rank_seconds", "exact_seconds", "write_seconds",
    )
    list_filter = ("method", "block", "converged")
    date_hierarchy = "finished_at"

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
