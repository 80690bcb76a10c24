"""`python manage.py send_notifications [--flush]`: process the alerts outbox once and print what was sent.
Beat runs the same every 10 s. --flush sends pending messages without waiting out the grouping window.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand

from alerts.services.reminders import reminders_write
from alerts.services.send import notifications_send


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser) -> None:
        parser.add_argument("--flush", action="store_true", help="ignore the grouping window")

    def handle(self, *args, flush: bool = False, **options) -> None:
        reminders_write()
        sent = notifications_send(flush=flush)
        for s in sent:
            if s.ok:
                self.stdout.write(f"sent   {s.channel}: {s.events} event(s), key {s.key}")
            else:
                state = "failed for good" if s.final else "failed, will retry"
                self.stdout.write(f"{state} {s.channel}: {s.events} event(s), key {s.key}: {s.error}")
        ok = sum(s.events for s in sent if s.ok)
        self.stdout.write(f"{len(sent)} message(s), {ok} notification(s) delivered")
