"""The HTTP status dashboard's server grid and list (the views of every other page are in dashboard.views_*,
who may see what in dashboard.view_access). Read-only; for logged-in users in the "viewer" or "operator"
group (or superusers). A reader limited to server groups (crawlcore.access) sees only their servers, and
not the crawl page, which is about every server.

Every page answers in a few milliseconds of work at a million URLs (bench/DASHBOARD.md): counts come
from the rollups (dashboard.rollups, each page says "as of" when), and what every viewer sees alike (the
grid's tiles, the heatmap, the dead-link table) is rendered once and kept a few seconds per process.

Everything scraped (titles, URLs, reasons) reaches the page through Django's autoescaping or, in the
tags that build long tables in Python, through format_html, which escapes the same way; data for the
charts goes through `json_script`. The only markup marked safe unescaped is the heatmap's cells, which
hold numbers formatted in dashboard_tags.heat_cells.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from urllib.parse import urlencode

from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse_lazy
from django.utils import timezone

from alerts.views import MUTE_CHOICES

from . import bulk, selectors_grid
from .cache import cached
from .view_access import dashboard_view, int_param, reader_scope, visible_groups

PAGE_SIZE = 300


class LoginView(auth_views.LoginView):
    """Any active user may log in here (the admin's login takes staff only); the views decide the rest."""

    template_name = "registration/login.html"
    next_page = reverse_lazy("dashboard:grid")
    redirect_authenticated_user = True


VIEWS = ("tiles", "list")
LIST_PAGE_SIZE = 100


@dataclass(frozen=True)
class GridAsked:
    """What a grid or list page was asked for, all of it in the URL so a view can be bookmarked."""

    filters: selectors_grid.GridFilter
    view: str
    offset: int
    closed: tuple[str, ...]  # the list's collapsed groups

    @property
    def page_size(self) -> int:
        return LIST_PAGE_SIZE if self.view == "list" else PAGE_SIZE

    def query(self, **change) -> str:
        """This view's query string with `change` applied (None drops a key; empty values are left out)."""
        f = self.filters
        values = {
            "view": "list" if self.view == "list" else "",
            "q": f.q, "status": f.status, "kind": f.kind, "group": f.group,
            "by": "group" if f.by_group else "", "closed": ",".join(self.closed),
            "offset": str(self.offset) if self.offset else "",
        }  # fmt: skip
        values.update({k: ("" if v is None else str(v)) for k, v in change.items()})
        return urlencode({k: v for k, v in values.items() if v})


def _grid_asked(request: HttpRequest) -> GridAsked:
    status = request.GET.get("status", "")
    group = request.GET.get("group", "")[:100]
    kind = request.GET.get("kind", "")
    view = request.GET.get("view", "")
    q = " ".join(request.GET.get("q", "").split())[: selectors_grid.MAX_QUERY]
    closed = tuple(g for g in request.GET.get("closed", "").split(",") if g)[:200]
    filters = selectors_grid.GridFilter(
        status=status if status in selectors_grid.GRID_STATUSES else "",
        group=group,
        kind=kind if kind in selectors_grid.GRID_KINDS else "",
        q=q,
        groups=reader_scope(request, group),
        by_group=view == "list" and request.GET.get("by", "") == "group",
    )
    return GridAsked(filters, "list" if view == "list" else "tiles", int_param(request, "offset"), closed)


def _shared_key(asked: GridAsked) -> str | None:
    """The cache key of a grid page every viewer with this scope sees alike; None (not cached) for a search,
    a group or an offset no grid link leads to, so requests cannot fill the cache with made-up keys. Scopes
    are the admin's groups, so there are few of them."""
    f = asked.filters
    unknown_group = f.group and f.group not in selectors_grid.grid_groups()
    if f.q or asked.closed or unknown_group or asked.offset % asked.page_size:
        return None
    scope = None if f.groups is None else sorted(f.groups)
    return json.dumps([f.status, f.group, f.kind, f.by_group, asked.view, asked.offset, scope])


def _sections(asked: GridAsked, tiles: list, counts: dict) -> list[tuple[str, object, list]]:
    """The list's tables: one per group (in the rows' order, which is by group) or one for all."""
    if not asked.filters.by_group:
        return [("", None, tiles)]
    out: list[tuple[str, object, list]] = []
    for t in tiles:
        if not out or out[-1][0] != t.group:
            out.append((t.group, counts.get(t.group), []))
        out[-1][2].append(t)
    return out


def _grid_page(asked: GridAsked, operator: bool = False) -> dict:
    """One page of the grid or list, rendered: the same for every viewer (of one scope), so kept
    SHARED_VIEW_TTL seconds per process (twenty open grids refreshing cost one query round and one render
    per process)."""

    def compute() -> dict:
        now = timezone.now()
        total, tiles, group_counts = selectors_grid.grid_page(
            filters=asked.filters, limit=asked.page_size, offset=asked.offset
        )
        template = "dashboard/_rows.html" if asked.view == "list" else "dashboard/_tiles.html"
        shown = {"tiles": tiles, "by_group": asked.filters.by_group, "sections": _sections(asked, tiles, group_counts)}
        return {
            "as_of": now,
            "total": total,
            "counts": selectors_grid.monitor_status_counts(groups=asked.filters.groups),
            "tiles": tiles,
            "html": render_to_string(template, {**shown, "closed": asked.closed, "select": operator}),
        }

    key = _shared_key(asked)
    if key is None:
        return compute()
    return cached(f"grid:{key}:{int(operator)}", selectors_grid.SHARED_VIEW_TTL, compute)


may_operate = bulk.may_operate
servers_bulk = dashboard_view(bulk.bulk_view)


@dashboard_view
def grid(request: HttpRequest) -> HttpResponse:
    asked = _grid_asked(request)
    operator = may_operate(request.user)
    page = _grid_page(asked, operator)
    total, size = page["total"], asked.page_size
    f = asked.filters
    return render(
        request,
        "dashboard/grid.html",
        {
            "tiles_html": page["html"],
            "as_of": page["as_of"],
            "total": total,
            "asked": asked,
            "view": asked.view,
            "q": f.q,
            "status": f.status,
            "group": f.group,
            "kind": f.kind,
            "by_group": f.by_group,
            "groups": visible_groups(f.groups),
            "statuses": selectors_grid.GRID_STATUSES,
            "kinds": selectors_grid.KIND_TEXT,
            "counts": page["counts"],
            "offset": asked.offset,
            "first": asked.offset + 1 if total else 0,
            "last": min(asked.offset + size, total),
            "next_query": asked.query(offset=asked.offset + size) if asked.offset + size < total else None,
            "prev_query": asked.query(offset=max(asked.offset - size, 0) or None) if asked.offset else None,
            "list_query": asked.query(view="list", offset=None),
            "tiles_query": asked.query(view=None, offset=None, by=None, closed=None),
            "json_query": asked.query(),
            "status_query": {s: asked.query(status=s, offset=None) for s in selectors_grid.GRID_STATUSES},
            "refresh_seconds": selectors_grid.grid_refresh_seconds(),
            "operator": operator,
            "mute_choices": MUTE_CHOICES,
            "health_actions": bulk.HEALTH_ACTIONS_READY,
        },
    )


@dashboard_view
def grid_json(request: HttpRequest) -> HttpResponse:
    """What the grid's script polls: the same page of tiles, as data (`generated_at`: as of when)."""
    asked = _grid_asked(request)

    def compute() -> bytes:
        page = _grid_page(asked)
        return json.dumps(
            {
                "generated_at": page["as_of"].isoformat(),
                "total": page["total"],
                "counts": page["counts"],
                "tiles": [t.as_json() for t in page["tiles"]],
            }
        ).encode()

    key = _shared_key(asked)
    body = compute() if key is None else cached(f"grid.json:{key}", selectors_grid.SHARED_VIEW_TTL, compute)
    return HttpResponse(body, content_type="application/json")
