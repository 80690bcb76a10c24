""" "Mute for ..." from the server page (staff with the right to change mutes)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import permission_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from crawlcore.models import Server

from .services.mutes import mute_add, mute_end

MUTE_CHOICES = {"1h": 3600, "4h": 4 * 3600, "24h": 86400, "7d": 7 * 86400}


@require_POST
@permission_required("alerts.add_mute", raise_exception=True)
def server_mute(request: HttpRequest, server_id: int) -> HttpResponse:
    server = get_object_or_404(Server, id=server_id)
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
