"""`python manage.py testweb [...]`: serve the bundled local test web (see `python -m testweb --help`)."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from testweb.__main__ import main


class Command(BaseCommand):
    help = "Serve the local test web on loopback IPs (127.0.0.x) until interrupted."

    def add_arguments(self, parser) -> None:
        parser.add_argument("args", nargs="*", help="Options of `python -m testweb`, e.g. --port 8000 --servers 5")

    def run_from_argv(self, argv: list[str]) -> None:
        # Hand every option to the test web's own parser, unchanged.
        raise SystemExit(main(argv[2:]))

    def handle(self, *args, **options) -> None:
        raise SystemExit(main(list(args)))
