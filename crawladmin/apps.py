from __future__ import annotations

from django.apps import AppConfig


class CrawladminConfig(AppConfig):
    name = "crawladmin"
    verbose_name = "crawladmin"
    default_auto_field = "django.db.models.BigAutoField"
