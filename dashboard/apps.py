from __future__ import annotations

from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "dashboard"
    verbose_name = "HTTP status dashboard"

    def ready(self) -> None:
        # The Celery app imports the project's tasks/ modules by name; the dashboard's beat jobs live with
        # the dashboard, and every worker sets Django up, so importing them here registers them everywhere.
        from . import tasks  # noqa: F401
