from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.urls import reverse
from django.utils.html import format_html

from crawlcore.admin import ReaderScopedAdmin

from .models import ApiToken, StatusPage
from .tokens import api_token_create


@admin.register(StatusPage)
class StatusPageAdmin(ReaderScopedAdmin):
    group_paths = ("group",)  # a page of every server (no group) is for unlimited readers
    role_object = "status_page"
    list_display = ("slug", "group", "title", "enabled", "show_addresses", "link")
    list_filter = ("enabled",)

    @admin.display(description="page")
    def link(self, obj: StatusPage) -> str:
        href = reverse("status-page", args=[obj.slug])
        return format_html('<a href="{}">{}</a>', href, href)


@admin.register(ApiToken)
class ApiTokenAdmin(ReaderScopedAdmin):
    """A token is made here for a user and shown once, in the message after saving; only its hash is kept.
    A token acts as its user: anyone but a superuser makes and sees only their own."""

    role_object = "token"  # one's own (get_queryset); another user's a superuser's
    list_display = ("shown", "user", "name", "created_at", "last_used_at")
    search_fields = ("user__username", "name")
    readonly_fields = ("shown", "created_at", "last_used_at")
    fields = ("user", "name", "shown", "created_at", "last_used_at")

    def _whole_crawl_refused(self, request) -> bool:
        return False  # one's own tokens, whatever one's server groups

    def get_queryset(self, request):
        qs = admin.ModelAdmin.get_queryset(self, request)  # not cut to server groups: one's own, whatever they are
        return qs if request.user.is_superuser else qs.filter(user=request.user)

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "user" and not request.user.is_superuser:
            kwargs["queryset"] = type(request.user).objects.filter(pk=request.user.pk)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def save_model(self, request, obj: ApiToken, form, change: bool) -> None:
        if not request.user.is_superuser and obj.user_id != request.user.pk:
            raise PermissionDenied("a token for another user is a superuser's to make")
        if change:
            super().save_model(request, obj, form, change)
            return
        row, token = api_token_create(user=obj.user, name=obj.name)
        obj.pk, obj.shown, obj.key_hash = row.pk, row.shown, row.key_hash
        self.message_user(request, f"The new token (shown this once, copy it now): {token}", level=messages.WARNING)
