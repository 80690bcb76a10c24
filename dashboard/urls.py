from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path

from . import views

app_name = "dashboard"

urlpatterns = [
    path("", views.grid, name="grid"),
    path("grid.json", views.grid_json, name="grid-json"),
    path("servers/<int:server_id>/", views.server, name="server"),
    path("crawl/", views.crawl, name="crawl"),
    path("dead-links/", views.dead_links, name="dead-links"),
    path("dead-links/<int:server_id>/", views.dead_links_site, name="dead-links-site"),
    path("dead-links/export.<str:fmt>", views.dead_links_download, name="dead-links-export"),
    path("dead-links/<int:server_id>/export.<str:fmt>", views.dead_links_download, name="dead-links-site-export"),
    path("heatmap/", views.heatmap, name="heatmap"),
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(next_page="dashboard:login"), name="logout"),
]
