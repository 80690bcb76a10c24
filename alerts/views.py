""" "Mute for ..." from the server page: the role rules' mutes (crawlcore.roles), within the user's groups."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from crawlcore import access, roles
from crawlcore.models import Server

from .services.mutes import mute_add, mute_end

MUTE_CHOICES = {"1h": 3600, "4h": 4 * 3600, "24h": 86400, "7d": 7 * 86400}


@require_POST
def server_mute(request: HttpRequest, server_id: int) -> HttpResponse:
    # Another group's server is not found, as on its page; a server one reads but may not mute is refused.
    server = get_object_or_404(access.rows_visible(request.user, Server.objects.all(), ("group",)), id=server_id)
    roles.check(request.user, "create", "mute", group=server.group)
    length = request.POST.get("for", "")
    if length == "end":
        n = mute_end(server_id=server.id)
        messages.info(request, f"alerts of {server.origin} unmuted" if n else "no mute was running")
    elif length in MUTE_CHOICES:
        mute_add(server_id=server.id, seconds=MUTE_CHOICES[length], reason=f"muted by {request.user}")
        messages.info(request, f"alerts of {server.origin} muted for {length}")
    else:
        messages.error(request, "mute for how long?")
    return redirect("dashboard:server", server_id=server.id)
