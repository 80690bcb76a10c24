"""Bulk actions on servers from the grid and the list: pause, resume, mute, move to a group, check now.

For operators (the "operator" group) and superusers, on servers their scope lets them read (a reader
limited to server groups acts on those groups only, and moves servers only into them). Each action calls
the service that owns the write: the host-health service pauses and resumes (a paused server's crawl is
held), alerts' mutes, crawlcore's operator services, monitoring's "check now". A POST with Django's CSRF
check; the answer is a redirect back to the page the form was on, with one message saying what changed.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from alerts.services.mutes import mute_add
from alerts.views import MUTE_CHOICES
from crawlcore.access import may_read, server_groups_of
from crawlcore.models import Server
from crawlcore.services.health import HealthError, health_pause, health_resume
from crawlcore.services.operator import servers_move_to_group
from crawlcore.validate import MAX_GROUP_LENGTH, has_control
from monitoring.services.check_dispatch import monitors_make_due

ACTIONS = ("pause", "resume", "mute", "move", "check")
HEALTH_ACTIONS_READY = True
MAX_IDS = 5000


def may_operate(user) -> bool:
    """An operator (the "operator" group) or a superuser: who may act on servers from the dashboard."""
    return user.is_superuser or (may_read(user) and user.groups.filter(name="operator").exists())


class BulkError(ValueError):
    """A bulk request that cannot be done as asked; the message says why in one line."""


def _ids(raw: Sequence[str]) -> list[int]:
    if not raw:
        raise BulkError("no server selected")
    if len(raw) > MAX_IDS:
        raise BulkError(f"at most {MAX_IDS} servers at once")
    if not all(r.isascii() and r.isdigit() and len(r) < 19 for r in raw):
        raise BulkError("server ids must be whole numbers")
    return sorted({int(r) for r in raw})


def servers_of(user, ids: Sequence[int]) -> list[int]:
    """The servers among `ids` this user may act on; any other is refused as if it did not exist."""
    scope = server_groups_of(user)
    qs = Server.objects.filter(id__in=list(ids), alias_of__isnull=True)
    if scope is not None:
        qs = qs.filter(group__in=scope)
    found = list(qs.values_list("id", flat=True))
    if len(found) != len(ids):
        raise BulkError("some of the selected servers do not exist or are not yours to change")
    return found


def bulk_apply(*, user, action: str, server_ids: Sequence[int], group: str = "", length: str = "") -> str:
    """Do `action` on these servers for `user`; returns what changed, in one line."""
    ids = list(server_ids)
    who = f"by {user.get_username()}"
    if action in ("pause", "resume"):
        # The host-health service owns every reason a server is held, an operator's pause included.
        try:
            if action == "pause":
                n = health_pause(server_ids=ids, by=user.get_username(), note="paused from the servers list")
                return f"{n} server{'s' if n != 1 else ''} paused: their crawl is held until resumed"
            n = health_resume(server_ids=ids, by=user.get_username())
        except HealthError as exc:
            raise BulkError(str(exc)) from None
        return f"{n} server{'s' if n != 1 else ''} resumed"
    if action == "mute":
        if length not in MUTE_CHOICES:
            raise BulkError(f"mute for how long? one of {', '.join(MUTE_CHOICES)}")
        if not user.has_perm("alerts.add_mute"):
            raise PermissionDenied("muting alerts needs the right to add mutes")
        for sid in ids:
            mute_add(server_id=sid, seconds=MUTE_CHOICES[length], reason=f"muted {who}")
        return f"alerts of {len(ids)} server{'s' if len(ids) != 1 else ''} muted for {length}"
    if action == "move":
        group = group.strip()
        if has_control(group) or len(group) > MAX_GROUP_LENGTH:
            raise BulkError(f"a group name is at most {MAX_GROUP_LENGTH} characters, without control characters")
        scope = server_groups_of(user)
        if scope is not None and group not in scope:
            raise BulkError(f"you may move servers only into your own groups ({', '.join(sorted(scope))})")
        n = servers_move_to_group(server_ids=ids, group=group)
        return f"{n} server{'s' if n != 1 else ''} moved to {group or 'no group'}"
    if action == "check":
        n = monitors_make_due(server_ids=ids)
        return f"{n} monitor{'s' if n != 1 else ''} due now: checked within seconds"
    raise BulkError(f"unknown action {action!r}: one of {', '.join(ACTIONS)}")


def _back(request: HttpRequest) -> str:
    target = request.POST.get("next", "")
    ok = url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=False)
    return target if ok and target.startswith("/") else reverse("dashboard:grid")


@require_POST
def bulk_view(request: HttpRequest) -> HttpResponse:
    if not may_operate(request.user):
        raise PermissionDenied("bulk actions are for operators")
    try:
        ids = servers_of(request.user, _ids(request.POST.getlist("ids")))
        said = bulk_apply(
            user=request.user,
            action=request.POST.get("action", ""),
            server_ids=ids,
            group=request.POST.get("group", ""),
            length=request.POST.get("for", ""),
        )
    except BulkError as exc:
        if request.headers.get("Accept") == "application/json":
            return HttpResponse(str(exc), status=400, content_type="text/plain")
        messages.error(request, str(exc))
        return HttpResponseRedirect(_back(request))
    messages.info(request, said)
    return HttpResponseRedirect(_back(request))
