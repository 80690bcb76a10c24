"""`manage.py job list|show|start|pause|resume|stop [NAME] [--json]`: crawl jobs from the shell."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from crawlcore.models import Job
from crawlcore.schema import SchemaOutdated, schema_ensure
from crawlcore.selectors_jobs import job_detail, job_progress
from crawlcore.services.job_life import JobError, job_pause, job_resume, job_start, job_stop

ACTIONS = ("list", "show", "start", "pause", "resume", "stop")


class Command(BaseCommand):
    help = "List crawl jobs, show one (progress, ETA, why it is not moving), or start, pause, resume, stop one."

    def add_arguments(self, parser) -> None:
        parser.add_argument("action", choices=ACTIONS, help="What to do")
        parser.add_argument("name", nargs="?", default=None, help="The job's name (all but list)")
        parser.add_argument("--json", action="store_true", help="Print JSON")

    def handle(self, *args, **opts) -> None:
        try:
            schema_ensure()
        except SchemaOutdated as exc:
            raise CommandError(str(exc)) from None
        action, name = opts["action"], opts["name"]
        if action == "list":
            self._list(opts["json"])
            return
        if not name:
            raise CommandError(f"job {action} needs the job's name (manage.py job list)")
        try:
            if action == "start":
                job_start(name=name)
            elif action == "pause":
                job_pause(name=name)
            elif action == "resume":
                job_resume(name=name)
            elif action == "stop":
                job_stop(name=name)
        except JobError as exc:
            raise CommandError(str(exc)) from None
        job = Job.objects.filter(name=name).first()
        if job is None:
            raise CommandError(f"no job named {name!r} (manage.py job list)")
        detail = job_detail(job=job)
        if opts["json"]:
            self.stdout.write(json.dumps(detail, indent=2, sort_keys=True))
        else:
            self.stdout.write(_format(detail))

    def _list(self, as_json: bool) -> None:
        rows = []
        for job in Job.objects.order_by("name"):
            p = job_progress(job=job)
            rows.append({"name": job.name, "state": job.state, "enabled": job.enabled, "progress": p})
        if as_json:
            self.stdout.write(json.dumps(rows, indent=2, sort_keys=True))
            return
        for r in rows:
            p = r["progress"]
            self.stdout.write(
                f"{r['name']}  {r['state']}{'' if r['enabled'] else ' (disabled)'}  done {p['done']}  "
                f"queued {p['queued']}  failed {p['failed']}  eta {_eta(p['eta_seconds'])}"
            )


def _eta(seconds: int | None) -> str:
    if seconds is None:
        return "unknown"
    if seconds < 120:
        return f"{seconds}s"
    return f"{seconds // 60}m" if seconds < 7200 else f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def _format(d: dict) -> str:
    p = d["progress"]
    lines = [
        f"job {d['name']}: {d['state']}{'' if d['enabled'] else ' (disabled)'}",
        f"  seeds:    {', '.join(d['seeds'])} (scope {d['scope']})",
        f"  progress: done {p['done']}, queued {p['queued']}, failed {p['failed']}, excluded {p['excluded']}; "
        f"{p['rate_per_minute']}/min, eta {_eta(p['eta_seconds'])} ({p['eta_basis']})",
    ]
    for s in d["stalled"]:
        held = f" [{s['health']}, {s['source']}]" if s.get("source") else ""
        lines.append(f"  waiting:  {s['server']}: {s['reason']}{held}" + (f" until {s['until']}" if s["until"] else ""))
    for r in d["runs"][:3]:
        lines.append(
            f"  run:      {r['started_at']} → {r['ended_at'] or 'running'} ({r['trigger']}): {r['pages']} pages, "
            f"{r['failures']} failures{', ' + r['stop_reason'] if r['stop_reason'] else ''}"
        )
    return "\n".join(lines)
