"""Who may read the JSON API and `/metrics`: a user's bearer token (the REST API's, dashboard.tokens), the
shared `CRAWLADMIN_API_TOKEN`, or a reader's session (crawlcore.access). A user's token acts as its user:
the same roles and server groups as in /api/v1/. Here, below the shell's API module and the dashboard's
metrics view, so both use one gate and neither imports the other."""

from __future__ import annotations

import hmac
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from crawlcore.access import may_read, server_groups_of

from .models import ApiToken

View = Callable[[HttpRequest], HttpResponse]


def _token_ok(header: str) -> bool:
    scheme, _, given = header.partition(" ")
    token = settings.CRAWLADMIN_API_TOKEN
    if scheme.lower() != "bearer" or not token:
        return False
    # Bytes, not str: compare_digest refuses non-ASCII str, and a client controls this header.
    return hmac.compare_digest(given.strip().encode(), token.encode())


def _unauthorized(detail: str) -> JsonResponse:
    response = JsonResponse({"error": "unauthorized", "detail": detail}, status=401)
    response["WWW-Authenticate"] = 'Bearer realm="crawladmin"'
    return response


def _forbidden(detail: str) -> JsonResponse:
    return JsonResponse({"error": "forbidden", "detail": detail}, status=403)


def _user_token(header: str):
    """The user of a per-user bearer token in this header, or None (no such token, or not one)."""
    from .tokens import api_token_user

    scheme, _, given = header.partition(" ")
    if scheme.lower() != "bearer" or not given.strip().startswith(ApiToken.PREFIX):
        return None
    return api_token_user(given.strip())


def scope_of(request: HttpRequest) -> frozenset[str] | None:
    """The server groups this request may read (None: all). The shared token reads everything."""
    if request.headers.get("Authorization") and not getattr(request, "_api_token_user", False):
        return None
    return server_groups_of(request.user)


def api_view(view: View | None = None, *, whole_crawl: bool = False):
    """GET/HEAD only, never cached, and only for a valid bearer token or a reader's session. With
    `whole_crawl` (figures over every server), not for a reader limited to server groups."""

    def decorate(view: View) -> View:
        @require_safe
        @never_cache
        def wrapped(request: HttpRequest) -> HttpResponse:
            header = request.headers.get("Authorization", "")
            user = _user_token(header) if header else None
            if user is not None:
                request.user, request._api_token_user = user, True
                if not may_read(user):
                    return _forbidden("for the viewer and operator groups")
                if whole_crawl and scope_of(request) is not None:
                    return _forbidden("these figures cover every server; your account is limited to server groups")
            elif header:
                if not _token_ok(header):
                    return _unauthorized("invalid token")
            elif not request.user.is_authenticated:
                return _unauthorized("log in or send Authorization: Bearer <CRAWLADMIN_API_TOKEN>")
            elif not may_read(request.user):
                return _forbidden("for the viewer and operator groups")
            elif whole_crawl and scope_of(request) is not None:
                return _forbidden("these figures cover every server; your account is limited to server groups")
            return view(request)

        wrapped.__name__ = wrapped.__qualname__ = view.__name__
        wrapped.__doc__ = view.__doc__
        return wrapped

    return decorate if view is None else decorate(view)
