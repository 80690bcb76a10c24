"""Ranks in the admin: read-only (each run rewrites them), sortable by rank, filtered by site, domain
and community."""

from __future__ import annotations

from django.contrib import admin

from .models import PageRank, RankRun


@admin.register(PageRank)
class PageRankAdmin(admin.ModelAdmin):
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
class RankRunAdmin(admin.ModelAdmin):
    list_display = (
        "finished_at", "block", "pages", "links", "blocks", "local_iterations", "block_iterations",
        "global_iterations", "uniform_iterations", "converged", "read_seconds", "rank_seconds", "write_seconds",
    )
    list_filter = ("block", "converged")
    date_hierarchy = "finished_at"

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
