"""The public status pages (/status/<slug>/): no login, read-only, rendered once a minute per process.

A traffic spike (an outage is exactly when everyone looks) costs one render a minute: the response body
is kept CACHE_TTL seconds, an unknown address is a 404 from the cached list of pages, and the response
says `Cache-Control: public, max-age` so a proxy in front keeps it too.
"""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.views.decorators.http import require_safe

from .cache import cached
from .status_page import CACHE_TTL, status_page_data, status_pages


@require_safe
def status_page(request: HttpRequest, slug: str) -> HttpResponse:
    page = status_pages().get(slug)
    if page is None:
        raise Http404("no such status page")

    def compute() -> bytes:
        # No request in the context: the page is the same for everyone (no user, no CSRF token in it).
        return render_to_string("dashboard/status_page.html", status_page_data(page=page)).encode()

    response = HttpResponse(cached(f"status_page:{slug}", CACHE_TTL, compute))
    response["Cache-Control"] = f"public, max-age={int(CACHE_TTL)}"
    return response
