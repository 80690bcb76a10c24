from __future__ import annotations

from django.contrib import admin
from django.shortcuts import redirect
from django.urls import path

urlpatterns = [
    path("", lambda request: redirect("admin:index")),
    path("admin/", admin.site.urls),
]
