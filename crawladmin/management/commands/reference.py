from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand

from crawladmin.reference import reference_write


class Command(BaseCommand):
    help = "Write the generated references (settings, commands, configuration keys) as Markdown for the guide."
    requires_system_checks: list = []

    def add_arguments(self, parser):
        parser.add_argument("--out", default="docs/reference", help="the folder to write them in (made if missing)")

    def handle(self, *args, **options):
        for path in reference_write(Path(options["out"])):
            self.stdout.write(f"wrote {path}")
