from __future__ import annotations

from django.apps import AppConfig


class MonitoringConfig(AppConfig):
    name = "monitoring"
    verbose_name = "HTTP status monitoring"
    default_auto_field = "django.db.models.BigAutoField"
