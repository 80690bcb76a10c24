"""`python manage.py testweb [...]`: serve the bundled local test web (see `python -m testweb --help`).

`python manage.py testweb down NAME` / `up NAME`: stop one server of the running demo's test web (it
accepts connections and never answers, as a hung server does) or start it again. NAME is its host
(127.0.0.10) or its origin as the dashboard writes it (http://127.0.0.10:8090).
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from crawladmin.demo_control import demo_hosts, demo_running, down_set, host_of
from testweb.__main__ import main

SWITCHES = ("down", "up")


class Command(BaseCommand):
    help = "Serve the local test web on loopback IPs (127.0.0.x) until interrupted, or stop or start a demo server."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "args", nargs="*", help="down NAME or up NAME; else options of `python -m testweb`, e.g. --port 8000"
        )

    def run_from_argv(self, argv: list[str]) -> None:
        if len(argv) > 2 and argv[2] in SWITCHES:
            return super().run_from_argv(argv)
        # Hand every option to the test web's own parser, unchanged.
        raise SystemExit(main(argv[2:]))

    def handle(self, *args, **options) -> None:
        if args and args[0] in SWITCHES:
            self._switch(*args)
            return
        raise SystemExit(main(list(args)))

    def _switch(self, verb: str, *names: str) -> None:
        if len(names) != 1:
            raise CommandError(f"usage: manage.py testweb {verb} NAME (a host such as 127.0.0.10, or its origin)")
        data_dir = Path(settings.DATA_DIR)
        if not demo_running(data_dir):
            raise CommandError(f"no demo is running on {data_dir}: start one with `make demo` (or manage.py demo)")
        host, hosts = host_of(names[0]), demo_hosts(data_dir)
        if not hosts:
            raise CommandError("the demo is still crawling: its servers can be stopped once it serves")
        if host not in hosts:
            raise CommandError(f"{names[0]!r} is not a server of the demo; its servers: {', '.join(hosts)}")
        down = down_set(data_dir, host, verb == "down")
        state = "stops answering" if verb == "down" else "answers again"
        self.stdout.write(
            f"{host} {state} within a second; its tile turns amber, then red, as the checks confirm it"
            if verb == "down"
            else f"{host} {state} within a second; down now: {', '.join(sorted(down)) or 'none'}"
        )
