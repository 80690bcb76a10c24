"""Channels with their rules and a "send test" action, the notification log, mutes.

A channel's destination is never shown in a form: the change page shows its masked form and takes a new
one in a field that renders empty (left empty, the saved one stays).
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.utils.html import format_html

from crawlcore import roles
from crawlcore.admin import ReaderScopedAdmin
from crawlcore.admin_base import RoleInline
from crawlcore.models import Server
from monitoring.admin import MonitoredServerAdmin

from .destinations import DestinationError, destination_parse
from .models import Channel, MaintenanceSchedule, Mute, Notification, Rule
from .services.channels import channel_test
from .services.maintenance_windows import maintenance_windows_write
from .services.mutes import mute_add, mute_end


class RuleInline(RoleInline, admin.TabularInline):
    role_object = "rule"
    model = Rule
    extra = 1
    raw_id_fields = ("server",)


class ChannelForm(forms.ModelForm):
    destination = forms.CharField(
        required=False,
        widget=forms.PasswordInput(render_value=False, attrs={"size": 80, "autocomplete": "off"}),
        help_text="An Apprise URL (json://, slack://, msteams://, tgram://, mailto:// ...) or e-mail addresses. "
        "Empty keeps the current destination.",
    )

    class Meta:
        model = Channel
        fields = ("name", "enabled", "owner_of")

    def clean_destination(self) -> str:
        text = self.cleaned_data["destination"].strip()
        if not text:
            if not self.instance.pk:
                raise ValidationError("a new channel needs a destination")
            return ""
        try:
            return destination_parse(text).url
        except DestinationError as exc:
            raise ValidationError(str(exc)) from None

    def save(self, commit: bool = True) -> Channel:
        if self.cleaned_data.get("destination"):
            self.instance.url = self.cleaned_data["destination"]
        return super().save(commit)

    def _post_clean(self) -> None:
        if "destination" in self._errors:
            return  # already refused; the model's check would only repeat it
        # The model's own clean (EMAIL_HOST for e-mail) runs on the destination typed here, not the old one.
        if self.cleaned_data.get("destination"):
            self.instance.url = self.cleaned_data["destination"]
        super()._post_clean()

    def _update_errors(self, errors: ValidationError) -> None:
        # The model names the field url; this form calls it destination.
        if hasattr(errors, "error_dict") and "url" in errors.error_dict:
            errors.error_dict["destination"] = errors.error_dict.pop("url")
        super()._update_errors(errors)


@admin.register(Channel)
class ChannelAdmin(ReaderScopedAdmin):  # no group paths: superusers (destinations are secrets)
    role_object = "channel"
    form = ChannelForm
    list_display = ("name", "masked", "enabled", "owner_of", "log")
    list_filter = ("enabled",)
    search_fields = ("name", "owner_of")
    readonly_fields = ("masked", "created_at")
    fields = ("name", "masked", "destination", "enabled", "owner_of", "created_at")
    inlines = [RuleInline]
    actions = ["send_test"]

    @admin.display(description="destination")
    def masked(self, obj: Channel) -> str:
        return obj.masked if obj.pk else "-"

    @admin.display(description="notifications")
    def log(self, obj: Channel) -> str:
        return format_html('<a href="../notification/?channel__id__exact={}">log</a>', obj.pk)

    @admin.action(description="Send a test message")
    def send_test(self, request, queryset) -> None:
        for channel in queryset:
            outcome = channel_test(channel=channel)
            if outcome.ok:
                self.message_user(request, f"test message sent to {channel.name}", messages.SUCCESS)
            else:
                self.message_user(request, f"test message to {channel.name} failed: {outcome.error}", messages.ERROR)


@admin.register(Notification)
class NotificationAdmin(ReaderScopedAdmin):
    """The notification log: every (event, channel), filterable by channel, status and server."""

    group_paths = ("server__group",)

    list_display = ("created_at", "kind", "server", "channel", "status", "attempts", "sent_at", "error_short")
    list_filter = ("status", "channel", "event__kind")
    search_fields = ("server__host", "channel__name", "message_key")
    list_select_related = ("event", "channel", "server")
    date_hierarchy = "created_at"
    ordering = ("-created_at", "-id")
    raw_id_fields = ("server",)

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="event")
    def kind(self, obj: Notification) -> str:
        e = obj.event
        return f"{e.kind} ({e.from_status} -> {e.to_status})" if e.to_status else e.kind

    @admin.display(description="error")
    def error_short(self, obj: Notification) -> str:
        return obj.error[:120]


@admin.register(Mute)
class MuteAdmin(ReaderScopedAdmin):
    group_paths = ("server__group", "group")
    role_object = "mute"
    list_display = ("__str__", "server", "group", "until", "reason")
    raw_id_fields = ("server",)


@admin.register(MaintenanceSchedule)
class MaintenanceScheduleAdmin(ReaderScopedAdmin):
    group_paths = ("server__group", "group")
    role_object = "maintenance"
    list_display = ("__str__", "server", "group", "schedule", "duration_minutes", "enabled", "reason")
    list_filter = ("enabled",)
    raw_id_fields = ("server",)

    def save_model(self, request, obj, form, change) -> None:
        super().save_model(request, obj, form, change)
        # The coming windows now, not at beat's next run: one may open within minutes.
        maintenance_windows_write()


class AlertingServerAdmin(MonitoredServerAdmin):
    """The server list with "mute for ..." (alerts sits above monitoring, which extends the core's page)."""

    actions = [*MonitoredServerAdmin.actions, "mute_4h", "mute_24h", "mute_7d", "unmute"]

    def _mute(self, request, queryset, seconds: float, label: str) -> None:
        if not roles.may(request.user, "create", "mute"):
            self.message_user(request, "you may not mute alerts", messages.ERROR)
            return
        for server in queryset:
            mute_add(server_id=server.id, seconds=seconds, reason=f"muted by {request.user}")
        self.message_user(request, f"alerts of {queryset.count()} server(s) muted for {label}", messages.SUCCESS)

    @admin.action(description="Mute alerts for 4 hours")
    def mute_4h(self, request, queryset) -> None:
        self._mute(request, queryset, 4 * 3600, "4 hours")

    @admin.action(description="Mute alerts for 24 hours")
    def mute_24h(self, request, queryset) -> None:
        self._mute(request, queryset, 86400, "24 hours")

    @admin.action(description="Mute alerts for 7 days")
    def mute_7d(self, request, queryset) -> None:
        self._mute(request, queryset, 7 * 86400, "7 days")

    @admin.action(description="Unmute alerts")
    def unmute(self, request, queryset) -> None:
        if not roles.may(request.user, "delete", "mute"):
            self.message_user(request, "you may not unmute alerts", messages.ERROR)
            return
        n = sum(mute_end(server_id=server.id) for server in queryset)
        self.message_user(request, f"{n} mute(s) ended", messages.SUCCESS)


admin.site.unregister(Server)
admin.site.register(Server, AlertingServerAdmin)
