"""Who may see a dashboard page and what of it: the views' decorators and the reader's scope. A reader
limited to server groups (crawlcore.access) sees only their servers, and not the pages about every server.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import BadRequest, PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import reverse_lazy
from django.views.decorators.cache import never_cache

from crawlcore.access import may_read, sees_server_group, server_groups_of
from crawlcore.models import Server

from .selectors_grid import grid_groups


def may_view(user) -> bool:
    return may_read(user)


def dashboard_view(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Logged in (else to the dashboard's login page), and a viewer, an operator or a superuser (else 403)."""

    @login_required(login_url=reverse_lazy("dashboard:login"))
    @never_cache
    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if not may_view(request.user):
            raise PermissionDenied("the dashboard is for the viewer and operator groups")
        return view(request, *args, **kwargs)

    return wrapped


def whole_crawl_view(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """A dashboard page about every server: not for a reader limited to server groups."""

    @dashboard_view
    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if server_groups_of(request.user) is not None:
            raise PermissionDenied("this page covers every server; your account is limited to server groups")
        return view(request, *args, **kwargs)

    return wrapped


def reader_scope(request: HttpRequest, group: str = "") -> frozenset[str] | None:
    """The reader's server groups (None: all), after checking that a group asked for is one of them:
    another group's name gets the same 404 as a group that does not exist."""
    scope = server_groups_of(request.user)
    if scope is not None and group and group not in scope:
        raise Http404("no such group")
    return scope


def visible_groups(scope: frozenset[str] | None) -> list[str]:
    return [g for g in grid_groups() if scope is None or g in scope]


def visible_server(request: HttpRequest, server: Server) -> None:
    if not sees_server_group(request.user, server.group):
        raise Http404("no such server")


def int_param(request: HttpRequest, name: str, default: int = 0) -> int:
    """`?name=` as a whole number below a billion; a value that is not one is a bad request (400)."""
    raw = request.GET.get(name, "")
    if not raw:
        return default
    if not (raw.isascii() and raw.isdigit() and len(raw) < 10):  # isdigit() alone takes '²'
        raise BadRequest(f"{name} must be a whole number below 1000000000")
    return int(raw)
