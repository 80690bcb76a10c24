from __future__ import annotations

from django.apps import AppConfig


class ArchiveConfig(AppConfig):
    name = "archive"
    verbose_name = "Archive output (WARC)"
    default_auto_field = "django.db.models.BigAutoField"
