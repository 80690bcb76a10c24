"""`python manage.py check_servers [--all | --group G] [--json]`: one round of checks now, in this
process, printed per server. The checks are recorded and move each server's confirmed status exactly
as scheduled checks do; the server's schedule restarts from this check.
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from monitoring import hooks
from monitoring.selectors import monitor_names, monitors_selected, servers_by_id
from monitoring.services.check_targets import Checked
from monitoring.services.checks import monitors_check


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def as_dict(c: Checked, origin: str, group: str, crawler_num: int | None, name: str = "") -> dict:
    r, t = c.result, c.result.timings
    return {
        "server": origin,
        "name": name or origin,
        "kind": c.target.kind,
        "group": group,
        "crawler_num": crawler_num,
        "url": r.url,
        "status_code": r.status,
        "category": c.category,
        "status": c.status,
        "changed_from": c.changed_from,
        "latency_ms": _ms(t.total_ms),
        "phases_ms": {
            "dns": _ms(t.dns_ms),
            "connect": _ms(t.connect_ms),
            "tls": _ms(t.tls_ms),
            "first_byte": _ms(t.first_byte_ms),
            "body": _ms(t.body_ms),
        },
        "bytes": r.bytes_received,
        "failure": c.failure or (r.failure.value if r.failure else None),
        "detail": c.detail or r.detail,
        "tries": c.tries,
    }


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser) -> None:
        which = parser.add_mutually_exclusive_group()
        which.add_argument("--all", action="store_true", help="every enabled monitored server (the default)")
        which.add_argument("--group", help="only the servers of this group")
        parser.add_argument("--json", action="store_true", dest="as_json", help="print JSON")

    def handle(self, *args, all: bool = False, group: str | None = None, as_json: bool = False, **options) -> None:
        ids = monitors_selected(group=group)
        if not ids:
            raise CommandError(
                "no monitored servers" + (f" in group {group!r}" if group else "") + "; see import_servers"
            )
        checked = monitors_check(server_ids=ids, claim=False)
        hooks.round_finished()  # alerts delivers what this round caused before the command exits
        servers = servers_by_id(server_ids=ids)
        names = monitor_names(server_ids=ids)
        results = sorted(
            (
                as_dict(
                    c,
                    servers[c.target.server_id].origin,
                    servers[c.target.server_id].group,
                    servers[c.target.server_id].crawler_num,
                    names.get(c.target.server_id, ""),
                )
                for c in checked
            ),
            key=lambda d: d["server"],
        )
        if as_json:
            counts: dict[str, int] = {}
            for d in results:
                counts[d["category"]] = counts.get(d["category"], 0) + 1
            self.stdout.write(json.dumps({"checks": results, "categories": counts}, indent=2))
            return
        for d in results:
            code = d["status_code"] if d["status_code"] is not None else "---"
            shown = d["name"] if d["name"] == d["server"] else f"{d['name']} ({d['server']})"
            change = f"  ({d['changed_from']} -> {d['status']})" if d["changed_from"] else ""
            why = f"  {d['failure']}" if d["failure"] else ""
            why += f"  ({d['tries']} tries)" if d["tries"] > 1 else ""
            self.stdout.write(
                f"{shown:<40} {code:>3} {d['category']:<10} {d['latency_ms']:>9.1f} ms"
                f"  status {d['status']}{change}{why}"
            )
