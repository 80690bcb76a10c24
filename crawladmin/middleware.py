"""Requests refused before any view sees them."""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseRedirect, JsonResponse
from whitenoise.middleware import WhiteNoiseMiddleware

# C0 controls but tab, CR and LF, and DEL: no page's parameter holds one. NUL is the one that matters:
# PostgreSQL refuses it in any text, so `?group=%00` reached the database as an error (HTTP 500).
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


class JunkParametersMiddleware:
    """400 for a query string (names or values) or a path holding a control character."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if _CONTROL_RE.search(request.path) or any(
            _CONTROL_RE.search(key) or any(_CONTROL_RE.search(v) for v in values) for key, values in request.GET.lists()
        ):
            if request.path.startswith("/api/"):  # the API's one error body (crawladmin.api_auth.errors)
                body = {"error": "bad request", "detail": "control characters in the URL", "fields": {}}
                return JsonResponse(body, status=400)
            return HttpResponseBadRequest("control characters in the URL", content_type="text/plain")
        return self.get_response(request)


class AdminLookupRangeMiddleware:
    """An admin list filtered on a number no integer column holds (`?server=99999999999999999999999`) is a
    bad lookup, answered as the admin answers other bad lookups: the plain list again, with `?e=1`; such a
    number as a row's id is a row that does not exist (404). SQLite raises OverflowError when the number is
    bound to a query, past the admin's own handling of bad values, and any page's filter, ours or a
    library's, could take one."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not (isinstance(exception, OverflowError) and request.path.startswith(_ADMIN_PATH)):
            return None
        if request.GET:
            return HttpResponseRedirect(request.path + "?e=1")
        raise Http404("no such row")


_ADMIN_PATH = "/admin/"


class StaticFilesMiddleware(WhiteNoiseMiddleware):
    """WhiteNoise without its warning about a STATIC_ROOT that collectstatic never filled.

    Only the image runs collectstatic; the embedded mode, the demo and the tests serve the apps' static
    files through the finders (WHITENOISE_USE_FINDERS), so a missing STATIC_ROOT there is the normal case,
    and WhiteNoise's UserWarning at every start (59 times in a test run) only hid the warnings that matter.
    A STATIC_ROOT that exists is served as before."""

    def add_files(self, root: str | os.PathLike, prefix: str | None = None) -> None:
        if not self.autorefresh and os.fspath(root) == os.fspath(self.static_root) and not os.path.isdir(root):
            return
        super().add_files(root, prefix)
