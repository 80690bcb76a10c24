"""`python manage.py add_monitor KIND TARGET [--name N] [--every S] [--grace S] [--group G]`: put one
target under monitoring.

KIND is one of
  http       TARGET a URL or host: its health page is fetched (as import_servers' rows)
  tcp        TARGET host:port: a connection is opened (--tls: and a TLS handshake; --banner: and the
             server's first bytes must contain this)
  dns        TARGET a name: its records are looked up (--type A, --expect the record set, --nameserver ip[:port])
  heartbeat  TARGET a description of the job: prints the URL the job pings, .../ping/<token>
             (/start when it begins, /fail when it failed); --every is the job's period, --grace the
             lateness allowed (default: the period). Later than period + grace is a failed check.

The target's addresses go through the private-address guard (CRAWL_ALLOW_PRIVATE). Adding a monitor
again (a heartbeat by its name, any other kind by its target or name) updates it: only the options given
change, and it prints `unchanged monitor NAME` or `changed monitor NAME: field old -> new, ...`.
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from monitoring.kinds import Kind
from monitoring.services.monitors import MonitorError, monitor_add


class Command(BaseCommand):
    help = __doc__

    def create_parser(self, prog_name, subcommand, **kwargs):
        from argparse import RawDescriptionHelpFormatter

        kwargs["formatter_class"] = RawDescriptionHelpFormatter
        return super().create_parser(prog_name, subcommand, **kwargs)

    def add_arguments(self, parser) -> None:
        parser.add_argument("kind", choices=[k.value for k in Kind], help="what to check")
        parser.add_argument("target", help="URL, host:port, DNS name, or the heartbeat's description")
        parser.add_argument("--name", default="", help="what alerts and pages call it")
        parser.add_argument("--every", type=float, help="seconds between checks (heartbeat: the job's period)")
        parser.add_argument("--grace", type=float, help="heartbeat: seconds of lateness allowed")
        parser.add_argument("--group", default=None, help="server group")
        parser.add_argument("--sla", type=float, dest="sla_target", help="uptime percent promised a month")
        parser.add_argument("--tls", action="store_true", help="tcp: complete a TLS handshake")
        parser.add_argument("--banner", default="", help="tcp: the server's first bytes contain this")
        parser.add_argument("--type", default="", dest="record_type", help="dns: record type (default A)")
        parser.add_argument("--expect", default="", help="dns: expected records, comma-separated")
        parser.add_argument("--nameserver", default="", help="dns: ask this nameserver, ip[:port]")
        parser.add_argument("--json", action="store_true", dest="as_json", help="print JSON")

    def handle(self, *args, kind: str, target: str, as_json: bool = False, **options) -> None:
        try:
            added = monitor_add(
                kind=kind,
                target=target,
                name=options["name"],
                every_s=options["every"],
                grace_s=options["grace"],
                group=options["group"],
                tls=options["tls"],
                banner=options["banner"],
                record_type=options["record_type"],
                expected=options["expect"],
                nameserver=options["nameserver"],
                sla_target=options["sla_target"],
            )
        except MonitorError as exc:
            raise CommandError(str(exc)) from None
        m = added.monitor
        if as_json:
            out = {"server_id": m.server_id, "kind": m.kind, "name": m.name, "server": m.server.origin,
                   "created": added.created, "ping_url": added.ping_url or None,
                   "changed": {f: [str(old), str(new)] for f, old, new in added.changes}}  # fmt: skip
            self.stdout.write(json.dumps(out))
            return
        self.stdout.write(added.summary())
        if added.ping_url:
            self.stdout.write(f"ping URL: {added.ping_url}")
