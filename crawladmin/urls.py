from __future__ import annotations

from django.conf import settings
from django.contrib import admin
from django.shortcuts import redirect
from django.urls import include, path

from crawladmin import api
from dashboard.metrics import metrics
from dashboard.ping import ping
from dashboard.public import status_page

urlpatterns = [
    path("", lambda request: redirect("dashboard:grid")),
    path("admin/", admin.site.urls),
    path("api/summary", api.summary, name="api-summary"),
    path("api/servers", api.servers, name="api-servers"),
    path("healthz", api.healthz, name="healthz"),
    path("alerts/", include("alerts.urls")),
    path("analyzer/", include("analyzer.urls")),
    path("dashboard/", include("dashboard.urls")),
    path("metrics", metrics, name="metrics"),
    # Heartbeat monitors' pings: public, no login (dashboard/ping.py).
    path("ping/<str:token>", ping, name="ping"),
    path("ping/<str:token>/start", ping, {"signal": "start"}, name="ping-start"),
    path("ping/<str:token>/fail", ping, {"signal": "fail"}, name="ping-fail"),
    path("status/<slug:slug>/", status_page, name="status-page"),  # public: opt-in per server group, no login
]
if settings.OIDC_ENABLED:  # optional single sign-on (crawladmin.sso): /oidc/authenticate/ starts a login
    urlpatterns.append(path("oidc/", include("mozilla_django_oidc.urls")))
