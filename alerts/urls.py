from __future__ import annotations

from django.urls import path

from . import views

app_name = "alerts"
urlpatterns = [path("servers/<int:server_id>/mute", views.server_mute, name="server-mute")]
