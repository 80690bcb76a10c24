from __future__ import annotations

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from crawlcore.admin import ReaderScopedAdmin

from .models import StatusPage


@admin.register(StatusPage)
class StatusPageAdmin(ReaderScopedAdmin):
    group_paths = ("group",)  # a page of every server (no group) is for unlimited readers
    list_display = ("slug", "group", "title", "enabled", "show_addresses", "link")
    list_filter = ("enabled",)

    @admin.display(description="page")
    def link(self, obj: StatusPage) -> str:
        href = reverse("status-page", args=[obj.slug])
        return format_html('<a href="{}">{}</a>', href, href)
