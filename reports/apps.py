from __future__ import annotations

from django.apps import AppConfig


class ReportsConfig(AppConfig):
    name = "reports"
    label = "reports"
    verbose_name = "Link reports for site owners"
    default_auto_field = "django.db.models.BigAutoField"
