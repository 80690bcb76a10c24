"""The dashboard's freshness page: per objective the reader may see, p50/p95 staleness now against its target,
the last 30 days (a segment a day, as the server page's check bar), its error budget left, whether its request
budget can hold the target (and what would), and its stalest pages. Figures from crawlcore.selectors_freshness,
the ones `manage.py freshness_report` and the API give."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from crawlcore.models import Url
from crawlcore.selectors_freshness import objective_days, objective_status, objectives_visible

from .view_access import dashboard_view


def _card(obj, *, now) -> dict:
    status = objective_status(obj, now=now)
    urls = dict(Url.objects.filter(id__in=[i for i, _ in status["stalest"]]).values_list("id", "url"))
    stalest = [{"url": urls.get(i, ""), "staleness_s": s} for i, s in status["stalest"]]
    return {"status": status, "days": objective_days(obj, now=now), "stalest": stalest}


@dashboard_view
def freshness(request: HttpRequest) -> HttpResponse:
    now = timezone.now()
    cards = [_card(obj, now=now) for obj in objectives_visible(request.user)]
    return render(request, "dashboard/freshness.html", {"cards": cards})
