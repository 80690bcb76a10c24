from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.template.response import TemplateResponse
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
            kwargs["queryset"] = get_user_model().objects.filter(pk=request.user.pk)  # request.user is lazy
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def save_model(self, request, obj: ApiToken, form, change: bool) -> None:
        if not request.user.is_superuser and obj.user_id != request.user.pk:
            raise PermissionDenied("a token for another user is a superuser's to make")
        if change:
            super().save_model(request, obj, form, change)
            return
        row, token = api_token_create(user=obj.user, name=obj.name)
        obj.pk, obj.shown, obj.key_hash = row.pk, row.shown, row.key_hash
        # Shown by response_add in this response's page, not as a message: Django's messages may travel in a
        # cookie (signed, not encrypted), which would carry the token on to later requests.
        request._crawladmin_new_token = token

    def response_add(self, request, obj: ApiToken, post_url_continue=None):
        token = getattr(request, "_crawladmin_new_token", None)
        if token is None:
            return super().response_add(request, obj, post_url_continue)
        context = {**self.admin_site.each_context(request), "title": "API token made", "obj": obj, "token": token,
                   "opts": self.model._meta, "back": reverse("admin:dashboard_apitoken_changelist")}  # fmt: skip
        response = TemplateResponse(request, "admin/dashboard/apitoken/created.html", context)
        response["Cache-Control"] = "no-store"
        return response
