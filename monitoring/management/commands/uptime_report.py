"""`python manage.py uptime_report [--month YYYY-MM] [--group G] [--format csv|json] [-o FILE]`: the monthly
uptime / SLA report, one row per monitored server: server, group, month, uptime_percent, downtime_seconds,
incidents, longest_incident_seconds, mean_latency_ms, p95_latency_ms, sla_target, sla_met.

Down time is measured on the status timeline (from a confirmed outage to the confirmed recovery);
maintenance windows are excluded from every figure. --month defaults to the month under way (to now), in
the operator's TIME_ZONE.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from monitoring.report import FORMATS, MAINTENANCE_NOTE, ReportError, report_write, uptime_report


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser) -> None:
        parser.add_argument("--month", help="YYYY-MM (default: this month)")
        parser.add_argument("--group", help="only the servers of this group")
        parser.add_argument("--format", choices=FORMATS, default="csv", dest="fmt", help="the output format")
        parser.add_argument("-o", "--output", help="write to this file instead of standard output")

    def handle(self, *args, month=None, group=None, fmt: str = "csv", output: str | None = None, **options) -> None:
        try:
            report = uptime_report(month=month, group=group)
        except ReportError as exc:
            raise CommandError(str(exc)) from None
        text = report_write(report, fmt)
        if output:
            try:
                with open(output, "w", encoding="utf-8", newline="") as f:
                    f.write(text)
            except OSError as exc:
                raise CommandError(f"cannot write {output}: {exc.strerror or exc}") from None
            self.stderr.write(f"{len(report.rows)} server(s), {report.month}, written to {output}; {MAINTENANCE_NOTE}")
            return
        self.stdout.write(text, ending="" if text.endswith("\n") else "\n")
        if fmt == "csv":
            self.stderr.write(f"{len(report.rows)} server(s), {report.month}; {MAINTENANCE_NOTE}")
