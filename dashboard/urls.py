from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path, register_converter

from . import (
    views,
    views_crawl,
    views_dead_links,
    views_freshness,
    views_incidents,
    views_jobs,
    views_reports,
    views_server,
)

app_name = "dashboard"


class IdConverter:
    """A row id: 1 to 18 digits, so an id past the database's 64-bit integers is a 404 from the resolver,
    not an overflow inside the query (HTTP 500)."""

    regex = "[0-9]{1,18}"

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value: int) -> str:
        return str(value)


register_converter(IdConverter, "id")

urlpatterns = [
    path("", views.grid, name="grid"),
    path("grid.json", views.grid_json, name="grid-json"),
    path("servers/<id:server_id>/", views_server.server, name="server"),
    path("servers/bulk", views.servers_bulk, name="servers-bulk"),
    path("crawl/", views_crawl.crawl, name="crawl"),
    path("dead-links/", views_dead_links.dead_links, name="dead-links"),
    path("dead-links/<id:server_id>/", views_dead_links.dead_links_site, name="dead-links-site"),
    path("dead-links/export.<str:fmt>", views_dead_links.dead_links_download, name="dead-links-export"),
    path(
        "dead-links/<id:server_id>/export.<str:fmt>",
        views_dead_links.dead_links_download,
        name="dead-links-site-export",
    ),
    path("heatmap/", views_reports.heatmap, name="heatmap"),
    path("uptime/", views_reports.uptime, name="uptime"),
    path("uptime/report.<str:fmt>", views_reports.uptime_download, name="uptime-export"),
    path("freshness/", views_freshness.freshness, name="freshness"),
    path("search/", views_reports.search, name="search"),
    path("jobs/", views_jobs.jobs, name="jobs"),
    path("jobs.json", views_jobs.jobs_json, name="jobs-json"),
    path("jobs/<str:name>/", views_jobs.job, name="job"),
    path("jobs/<str:name>/job.json", views_jobs.job_json, name="job-json"),
    path("jobs/<str:name>/action/", views_jobs.job_action, name="job-action"),
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(next_page="dashboard:login"), name="logout"),
    path("incidents/<id:incident_id>/", views_incidents.incident, name="incident"),
]
