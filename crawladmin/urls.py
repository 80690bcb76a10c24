from __future__ import annotations

from django.conf import settings
from django.contrib import admin
from django.shortcuts import redirect
from django.urls import include, path
from rest_framework.renderers import JSONOpenAPIRenderer
from rest_framework.schemas import get_schema_view

from crawladmin import api, api_v1
from dashboard.metrics import metrics
from dashboard.ping import ping
from dashboard.public import status_page

urlpatterns = [
    path("", lambda request: redirect("dashboard:grid")),
    path("admin/", admin.site.urls),
    path("api/summary", api.summary, name="api-summary"),
    path("api/servers", api.servers, name="api-servers"),
    path("healthz", api.healthz, name="healthz"),
    path("api/v1/jobs/", api_v1.JobList.as_view(), name="api-v1-jobs"),
    path("api/v1/jobs/<str:name>/", api_v1.JobDetail.as_view(), name="api-v1-job"),
    path("api/v1/jobs/<str:name>/<str:action>/", api_v1.JobAction.as_view(), name="api-v1-job-action"),
    path("api/v1/servers/", api_v1.ServerList.as_view(), name="api-v1-servers"),
    path("api/v1/servers/<int:pk>/", api_v1.ServerDetail.as_view(), name="api-v1-server"),
    path("api/v1/servers/<int:pk>/<str:action>/", api_v1.ServerAction.as_view(), name="api-v1-server-action"),
    path("api/v1/monitors/", api_v1.MonitorList.as_view(), name="api-v1-monitors"),
    path("api/v1/monitors/<int:pk>/", api_v1.MonitorDetail.as_view(), name="api-v1-monitor"),
    path("api/v1/channels/", api_v1.ChannelList.as_view(), name="api-v1-channels"),
    path("api/v1/channels/<str:name>/", api_v1.ChannelDetail.as_view(), name="api-v1-channel"),
    path("api/v1/search/", api_v1.SearchView.as_view(), name="api-v1-search"),
    path(
        "api/v1/schema",
        get_schema_view(title="crawladmin API", version="1", renderer_classes=[JSONOpenAPIRenderer]),
        name="api-v1-schema",
    ),
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
