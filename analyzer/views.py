"""The analyzer's dashboard: the report of analyzer.selectors as tables and inline SVG bar charts."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from crawlcore.access import may_read, server_groups_of

from .charts import bar_chart
from .selectors import analysis_report
from .services import national_networks

SCOPE_LABELS = {
    "national": "national",
    "foreign_national_ip": "foreign name, national IP",
    "foreign": "foreign",
}


@login_required
def dashboard(request: HttpRequest) -> HttpResponse:
    # Statistics over the whole crawl: for readers (crawlcore.access) who may read every server.
    if not may_read(request.user):
        raise PermissionDenied("the analyzer is for the viewer and operator groups")
    if server_groups_of(request.user) is not None:
        raise PermissionDenied("the analyzer covers every server; your account is limited to server groups")
    national = settings.ANALYZER_NATIONAL_TLD
    report = analysis_report(national_tld=national, networks=national_networks())
    active = report["active_domains"]
    charts = [
        bar_chart(
            "Pages by language",
            [(f"{r['name']} ({r['language']})" if r["language"] else r["name"], r["pages"], r["share"])
             for r in report["languages"]],
        ),
        bar_chart(
            "Pages by top-level domain (Table 2.1)",
            [(r["domain"], r["pages"], r["share"]) for r in report["domains"] if r["domain"] != "total"],
        ),
        bar_chart(
            f"Pages by national second-level domain (.{national})",
            [(r["sld"], r["pages"], r["share"]) for r in report["national_slds"] if r["sld"] != "total"],
        ),
        bar_chart("Pages by country code", [(r["tld"], r["pages"], r["share"]) for r in report["country_codes"]]),
        bar_chart(
            "Pages by content class", [(r["class"], r["pages"], r["share"]) for r in report["content_classes"]]
        ),
        bar_chart(
            "Pages by media type",
            [(r["media_type"] or "(none)", r["pages"], r["share"]) for r in report["media_types"]],
        ),
        bar_chart(
            "Active domains by scope",
            [(SCOPE_LABELS[r["scope"]], r["domains"], r["share"]) for r in active["scopes"]],
        ),
        bar_chart(
            f"Active national domains by second-level domain (.{national})",
            [(r["sld"], r["domains"], r["share"]) for r in active["national_slds"]],
        ),
    ]
    return render(
        request,
        "analyzer/dashboard.html",
        {"report": report, "charts": charts, "active": active, "scope_labels": SCOPE_LABELS},
    )
