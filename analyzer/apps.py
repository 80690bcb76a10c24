from __future__ import annotations

from django.apps import AppConfig


class AnalyzerConfig(AppConfig):
    name = "analyzer"
    label = "analyzer"
    verbose_name = "Web page analyzer"
    default_auto_field = "django.db.models.BigAutoField"
