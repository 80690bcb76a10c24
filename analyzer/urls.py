from __future__ import annotations

from django.urls import path

from . import views

app_name = "analyzer"

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
]
