"""`manage.py export_config`: the current servers, monitors, channels, maintenance, mutes, status pages and
jobs as the YAML that `manage.py apply` reads."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from crawladmin.configfile.export import config_export_yaml
from crawlcore.schema import SchemaOutdated, schema_ensure


class Command(BaseCommand):
    help = "Write the current configuration (servers, monitors, channels, jobs) as YAML for manage.py apply."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--all-servers", action="store_true",
            help="Every server the crawl knows, not only those an operator configured",
        )  # fmt: skip

    def handle(self, *args, **opts) -> None:
        try:
            schema_ensure()
        except SchemaOutdated as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(config_export_yaml(include_servers="all" if opts["all_servers"] else "configured"), ending="")
