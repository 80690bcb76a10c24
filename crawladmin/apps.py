from __future__ import annotations

from django.apps import AppConfig


class ShellConfig(AppConfig):
    """The project shell: settings, urls, the Celery app, the embedded runner and the commands that tie
    the apps together. It has no models; it is an app only so that its management commands are found."""

    name = "crawladmin"
    label = "shell"
    verbose_name = "crawladmin"
