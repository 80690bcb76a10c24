"""`manage.py apply FILE.yaml [--dry-run] [--prune]`: servers, monitors, alert channels, maintenance, mutes,
status pages and crawl jobs from one YAML file (crawladmin.configfile). Prints `created|changed|unchanged|removed
KIND NAME`, one line an object, and under a changed one each `  field: old -> new`."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from crawladmin.configfile.apply import config_apply
from crawladmin.configfile.read import ConfigError
from crawlcore.schema import SchemaOutdated, schema_ensure


class Command(BaseCommand):
    help = "Apply servers, monitors, channels and jobs from a YAML file; a second apply changes nothing."

    def add_arguments(self, parser) -> None:
        parser.add_argument("file", help="The YAML file (sections: crawladmin.configfile.keys.SECTIONS); - reads stdin")
        parser.add_argument("--dry-run", action="store_true", help="Print what would change and write nothing")
        parser.add_argument(
            "--prune", action="store_true",
            help="Also remove what the file's sections no longer name (never servers)",
        )  # fmt: skip

    def handle(self, *args, **opts) -> None:
        try:
            schema_ensure()
        except SchemaOutdated as exc:
            raise CommandError(str(exc)) from None
        name = opts["file"]
        text = self._read(name)
        try:
            outcomes = config_apply(text, dry_run=opts["dry_run"], prune=opts["prune"])
        except ConfigError as exc:
            for problem in exc.problems:
                self.stderr.write(f"{name}:{problem}")
            raise CommandError(f"{name}: {len(exc.problems)} problem(s); nothing written") from None
        for o in outcomes:
            self.stdout.write(f"{o.outcome} {o.kind} {o.name}")
            for change in o.changes:
                self.stdout.write(f"  {change}")
        if opts["dry_run"]:
            self.stderr.write("dry run: nothing written")

    def _read(self, name: str) -> str:
        import sys

        if name == "-":
            return sys.stdin.read()
        try:
            return Path(name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"{name}: cannot read it ({exc.__class__.__name__}: {exc})") from None
