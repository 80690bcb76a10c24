"""`python manage.py check_domains [--force] [--json]`: the registration expiry of every monitored domain
(the registrable domain of each monitored host), from its registry's RDAP service over HTTPS; answers are
kept MONITOR_RDAP_CACHE_HOURS (--force asks again). A registry that cannot be reached leaves the expiry
unknown, with why. Coming expiries are told through the alert channels at ALERTS_DOMAIN_DAYS days left.
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand
from django.utils import timezone

from monitoring import hooks
from monitoring.services.domains import domains_refresh


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser) -> None:
        parser.add_argument("--force", action="store_true", help="ask the registries again, cached or not")
        parser.add_argument("--json", action="store_true", dest="as_json", help="print JSON")

    def handle(self, *args, force: bool = False, as_json: bool = False, **options) -> None:
        rows = domains_refresh(force=force)
        hooks.round_finished()  # alerts delivers what the lookups told before the command exits
        now = timezone.now()
        out = []
        for d in rows:
            days = None if d.expires_at is None else round((d.expires_at - now).total_seconds() / 86400.0, 1)
            out.append({
                "domain": d.domain, "state": "unknown" if d.error else "known",
                "expires_at": d.expires_at.isoformat() if d.expires_at else None,
                "days_left": None if d.error else days, "registrar": d.registrar, "error": d.error,
                "checked_at": d.checked_at.isoformat(),
            })  # fmt: skip
        if as_json:
            self.stdout.write(json.dumps({"domains": out}, indent=2))
            return
        if not out:
            self.stdout.write("no monitored domain (hosts that are IP addresses have none)")
        for d in out:
            if d["state"] == "unknown":
                self.stdout.write(f"{d['domain']:<40} unknown: {d['error']}")
            else:
                self.stdout.write(f"{d['domain']:<40} expires {d['expires_at'][:10]} ({d['days_left']:g} days)")
