from __future__ import annotations

from django.apps import AppConfig


class SearchConfig(AppConfig):
    name = "search"
    label = "search"
    verbose_name = "Search over the crawl"
    default_auto_field = "django.db.models.BigAutoField"
