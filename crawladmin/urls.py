from __future__ import annotations

from django.conf import settings
from django.contrib import admin
from django.shortcuts import redirect
from django.templatetags.static import static
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularJSONAPIView, SpectacularSwaggerView

from crawladmin import api, api_schema, api_v1, api_v1_base, api_v1_freshness, api_v1_more  # noqa: F401 - api_schema: the token's scheme
from crawladmin.guide import guide
from crawladmin.indexnow import indexnow
from dashboard.metrics import metrics
from dashboard.ping import ping
from dashboard.public import status_page

urlpatterns = [
    path("", lambda request: redirect("dashboard:grid")),
    # Browsers ask for /favicon.ico whatever the page links: the product's icon, not a 404.
    path("favicon.ico", lambda request: redirect(static("dashboard/favicon.svg"), permanent=True)),
    path("admin/", admin.site.urls),
    path("api/summary", api.summary, name="api-summary"),
    path("api/servers", api.servers, name="api-servers"),
    path("healthz", api.healthz, name="healthz"),
    path("api/v1/", api_v1_more.Index.as_view(), name="api-v1"),
    path("api/v1/jobs/", api_v1.JobList.as_view(), name="api-v1-jobs"),
    path("api/v1/jobs/<str:name>/", api_v1.JobDetail.as_view(), name="api-v1-job"),
    path("api/v1/jobs/<str:name>/runs/", api_v1.JobRuns.as_view(), name="api-v1-job-runs"),
    path("api/v1/jobs/<str:name>/<str:action>/", api_v1.JobAction.as_view(), name="api-v1-job-action"),
    path("api/v1/servers/", api_v1.ServerList.as_view(), name="api-v1-servers"),
    path("api/v1/servers/<int:pk>/", api_v1.ServerDetail.as_view(), name="api-v1-server"),
    path("api/v1/servers/<int:pk>/<str:action>/", api_v1.ServerAction.as_view(), name="api-v1-server-action"),
    path("api/v1/monitors/", api_v1.MonitorList.as_view(), name="api-v1-monitors"),
    path("api/v1/monitors/<int:pk>/", api_v1.MonitorDetail.as_view(), name="api-v1-monitor"),
    path("api/v1/channels/", api_v1.ChannelList.as_view(), name="api-v1-channels"),
    path("api/v1/channels/<str:name>/", api_v1.ChannelDetail.as_view(), name="api-v1-channel"),
    path("api/v1/maintenance/", api_v1_more.MaintenanceList.as_view(), name="api-v1-maintenance"),
    path("api/v1/maintenance/<int:pk>/", api_v1_more.MaintenanceDetail.as_view(), name="api-v1-maintenance-one"),
    path("api/v1/maintenance-windows/", api_v1_more.WindowList.as_view(), name="api-v1-windows"),
    path("api/v1/maintenance-windows/<int:pk>/", api_v1_more.WindowDetail.as_view(), name="api-v1-window"),
    path("api/v1/mutes/", api_v1_more.MuteList.as_view(), name="api-v1-mutes"),
    path("api/v1/mutes/<int:pk>/", api_v1_more.MuteDetail.as_view(), name="api-v1-mute"),
    path("api/v1/status-pages/", api_v1_more.StatusPageList.as_view(), name="api-v1-status-pages"),
    path("api/v1/status-pages/<slug:slug>/", api_v1_more.StatusPageDetail.as_view(), name="api-v1-status-page"),
    path("api/v1/incidents/", api_v1_more.IncidentList.as_view(), name="api-v1-incidents"),
    path("api/v1/incidents/<int:pk>/", api_v1_more.IncidentDetail.as_view(), name="api-v1-incident"),
    path("api/v1/incidents/<int:pk>/updates/", api_v1_more.IncidentUpdates.as_view(), name="api-v1-incident-updates"),
    path("api/v1/dead-links/", api_v1_more.DeadLinks.as_view(), name="api-v1-dead-links"),
    path("api/v1/uptime/", api_v1_more.Uptime.as_view(), name="api-v1-uptime"),
    path("api/v1/freshness/", api_v1_freshness.FreshnessList.as_view(), name="api-v1-freshness"),
    path("api/v1/search/", api_v1.SearchView.as_view(), name="api-v1-search"),
    path("api/v1/schema", SpectacularJSONAPIView.as_view(), name="api-v1-schema"),
    path("api/v1/docs", SpectacularSwaggerView.as_view(url_name="api-v1-schema"), name="api-v1-docs"),
    re_path(r"^api/", api_v1_base.not_found),  # any other address under /api/: the API's JSON 404, not a page
    path("alerts/", include("alerts.urls")),
    path("analyzer/", include("analyzer.urls")),
    path("dashboard/", include("dashboard.urls")),
    path("metrics", metrics, name="metrics"),
    # Heartbeat monitors' pings: public, no login (dashboard/ping.py).
    path("indexnow", indexnow, name="indexnow"),  # public: the key file on the site is the proof
    path("ping/<str:token>", ping, name="ping"),
    path("ping/<str:token>/start", ping, {"signal": "start"}, name="ping-start"),
    path("ping/<str:token>/fail", ping, {"signal": "fail"}, name="ping-fail"),
    path("guide/", guide, name="guide"),  # the user guide `make docs` built (crawladmin.guide)
    path("guide/<path:path>", guide, name="guide-page"),
    path("status/<slug:slug>/", status_page, name="status-page"),  # public: opt-in per server group, no login
]
if settings.OIDC_ENABLED:  # optional single sign-on (crawladmin.sso): /oidc/authenticate/ starts a login
    urlpatterns.append(path("oidc/", include("mozilla_django_oidc.urls")))
