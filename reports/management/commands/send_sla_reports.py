"""`python manage.py send_sla_reports [--month YYYY-MM]`: send each server owner the month's uptime / SLA
report of their servers (default: last month), once: an owner who got that month's report gets nothing.
By e-mail when EMAIL_HOST is set, else to files under the data directory (sla-reports/).
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from monitoring.report import ReportError
from reports.sla import sla_reports_send


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser) -> None:
        parser.add_argument("--month", help="YYYY-MM (default: last month)")

    def handle(self, *args, month: str | None = None, **options) -> None:
        try:
            out = sla_reports_send(month=month)
        except ReportError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"{out.month}: {out.sent} report(s) sent, {out.already} sent before")
