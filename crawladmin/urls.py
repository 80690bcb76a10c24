from __future__ import annotations

from django.contrib import admin
from django.shortcuts import redirect
from django.urls import path

from crawladmin import api

urlpatterns = [
    path("", lambda request: redirect("admin:index")),
    path("admin/", admin.site.urls),
    path("api/summary", api.summary, name="api-summary"),
    path("api/servers", api.servers, name="api-servers"),
    path("healthz", api.healthz, name="healthz"),
]
