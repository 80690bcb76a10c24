"""What every admin page of ours is built on: a page cut to the reader's server groups (ReaderScopedAdmin),
and the admin log of a bulk action (log_change). The crawl core's pages (crawlcore.admin), the jobs' pages
(crawlcore.admin_jobs) and the apps' pages import it from here."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest

from . import access, roles
from .models import Server


def log_change(request: HttpRequest, model, ids, message: str) -> None:
    """One LogEntry per object changed, in one query."""
    ids = list(ids)
    if not ids:
        return
    ct = ContentType.objects.get_for_model(model)
    objs = model.objects.in_bulk(ids)
    LogEntry.objects.bulk_create(
        [
            LogEntry(
                user_id=request.user.pk,
                content_type=ct,
                object_id=str(pk),
                object_repr=str(obj)[:200],
                action_flag=CHANGE,
                change_message=message,
            )
            for pk, obj in objs.items()
        ]
    )


class ReaderScopedAdmin(admin.ModelAdmin):
    """An admin page cut to the reader's server groups (crawlcore.access).

    `group_paths`: lookups from this model to a server group name, any of which admits a row to a reader
    limited to that group ("server__group"). None of them (the default): the page describes the whole crawl
    and is for unlimited readers only. A row saved here must stay within the saver's groups.
    """

    group_paths: tuple[str, ...] = ()
    # The object of the role rules (crawlcore.roles) this page shows: the rules, not Django's model
    # permissions, then say who reads, adds, changes, deletes and runs its actions (`permissions=["run"]`),
    # as they say it for the API and the configuration file. None: Django's model permissions.
    role_object: str | None = None

    def get_queryset(self, request):
        return access.rows_visible(request.user, super().get_queryset(request), self.group_paths)

    def _whole_crawl_refused(self, request) -> bool:
        return not self.group_paths and access.server_groups_of(request.user) is not None

    def _role_says(self, request, action: str) -> bool | None:
        if self.role_object is None:
            return None
        return roles.may(request.user, action, self.role_object)

    def _allowed(self, request, action: str, django_says) -> bool:
        if self._whole_crawl_refused(request):
            return False
        said = self._role_says(request, action)
        return django_says() if said is None else said

    def has_module_permission(self, request) -> bool:
        return self._allowed(request, "read", lambda: super(ReaderScopedAdmin, self).has_module_permission(request))

    def has_view_permission(self, request, obj=None) -> bool:
        return self._allowed(request, "read",
                             lambda: super(ReaderScopedAdmin, self).has_view_permission(request, obj))  # fmt: skip

    def has_change_permission(self, request, obj=None) -> bool:
        return self._allowed(request, "update",
                             lambda: super(ReaderScopedAdmin, self).has_change_permission(request, obj))  # fmt: skip

    def has_add_permission(self, request) -> bool:
        return self._allowed(request, "create", lambda: super(ReaderScopedAdmin, self).has_add_permission(request))

    def has_delete_permission(self, request, obj=None) -> bool:
        return self._allowed(request, "delete",
                             lambda: super(ReaderScopedAdmin, self).has_delete_permission(request, obj))  # fmt: skip

    def has_run_permission(self, request) -> bool:
        """The page's actions that act on the crawl or the monitor (`permissions=["run"]`)."""
        return self._allowed(request, "run", lambda: super(ReaderScopedAdmin, self).has_change_permission(request))

    def get_readonly_fields(self, request, obj=None):
        fields = tuple(super().get_readonly_fields(request, obj))
        if self.role_object is None:
            return fields
        barred = [f for f in roles.SUPERUSER_FIELDS.get(self.role_object, ())
                  if not roles.may_set_field(request.user, self.role_object, f)]  # fmt: skip
        return fields + tuple(f for f in barred if f not in fields)

    def get_object(self, request, object_id, from_field=None):
        """A row outside the reader's groups is not found (404), like one that does not exist; the admin's
        default would redirect to the index with a message naming the id."""
        obj = super().get_object(request, object_id, from_field)
        if obj is None:
            raise Http404("no such row")
        return obj

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.related_model is Server:
            kwargs["queryset"] = access.rows_visible(request.user, Server.objects.all(), ("group",))
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def save_model(self, request, obj, form, change) -> None:
        super().save_model(request, obj, form, change)
        # Inside the admin's transaction: a row moved out of the saver's groups (another group typed in,
        # another group's server picked) is refused, and the save rolled back.
        limited = access.server_groups_of(request.user) is not None
        if limited and not self.get_queryset(request).filter(pk=obj.pk).exists():
            raise PermissionDenied("outside your server groups")


class RoleInline:
    """An inline whose rows are part of the page's object (an incident's updates): adding, changing or
    removing them is updating that object (crawlcore.roles), whatever Django's model permissions say."""

    role_object: str = ""

    def has_view_permission(self, request, obj=None) -> bool:
        return roles.may(request.user, "read", self.role_object)

    def has_add_permission(self, request, obj=None) -> bool:
        return roles.may(request.user, "update", self.role_object)

    def has_change_permission(self, request, obj=None) -> bool:
        return roles.may(request.user, "update", self.role_object)

    def has_delete_permission(self, request, obj=None) -> bool:
        return roles.may(request.user, "update", self.role_object)
