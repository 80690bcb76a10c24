"""The heartbeats' ping endpoint: ``/ping/<token>``, ``/ping/<token>/start``, ``/ping/<token>/fail``, by GET,
HEAD or POST, no login (a cron job has no session). A POST's body is kept, cut at MONITOR_PING_BODY_BYTES.

A token no heartbeat has is the same 404 as any unknown address (Django's own, raised the same way), so the
endpoint tells a guesser nothing; a token pinging more than MONITOR_PING_RATE times a minute gets 429.
"""

from __future__ import annotations

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from monitoring.services.monitors import LIMITED, OK, heartbeat_ping


def _body(request: HttpRequest) -> str:
    """At most MONITOR_PING_BODY_BYTES of the body, read from the stream (never the whole of a large one)."""
    limit = settings.MONITOR_PING_BODY_BYTES
    if request.method != "POST" or not limit:
        return ""
    return request.read(limit).decode("utf-8", "replace")


@csrf_exempt
@require_http_methods(["GET", "HEAD", "POST"])
def ping(request: HttpRequest, token: str, signal: str = "success") -> HttpResponse:
    source = request.META.get("REMOTE_ADDR", "")
    outcome = heartbeat_ping(token=token, signal=signal, body=_body(request), source=source)
    if outcome == OK:
        return HttpResponse("OK\n", content_type="text/plain")
    if outcome == LIMITED:
        response = HttpResponse("rate limited\n", status=429, content_type="text/plain")
        response["Retry-After"] = "60"
        return response
    raise Http404()
