from __future__ import annotations

from django.apps import AppConfig


class CrawlCoreConfig(AppConfig):
    """The crawl core: servers, URLs, pages, links, checks and the services that write them.

    Its label stays `crawladmin` (the name the project had when the core and the shell were one app), so
    its tables (`crawladmin_url`, …) and its migration history keep their names."""

    name = "crawlcore"
    label = "crawladmin"
    verbose_name = "crawl"
    default_auto_field = "django.db.models.BigAutoField"
