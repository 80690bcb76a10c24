"""Prune: the objects of the sections a file has that it no longer names are removed (servers never: the
crawl finds most of them), each held to the role rules of deleting it. Planned only when the rest of the
file has no problem, after every section's planner, since what the file names is what they planned."""

from __future__ import annotations

from collections.abc import Callable

from django.utils import timezone

from alerts.models import Channel, MaintenanceSchedule, Mute
from crawladmin.configfile.plan import Plan, Planned, _target_name
from crawlcore import roles
from crawlcore.models import FreshnessObjective, Job
from crawlcore.services.freshness import freshness_delete
from crawlcore.services.job_definitions import job_delete
from dashboard.models import StatusPage
from monitoring.models import ServerMonitor


def _plan_prune(data: dict, plan: Plan) -> None:
    named = {(p.kind, p.name) for p in plan.items}

    def gone(kind: str, name: str, remove: Callable[[], object], group: str | None = None, rule: str = "") -> None:
        if (kind, name) in named:
            return
        # A freshness objective is held to the rules of a crawl job (crawladmin.configfile.plan_freshness).
        reason = roles.refusal(plan.actor, "delete", rule or kind, group=group)
        if reason is not None:
            plan.problems.append(f"1: prune: {kind} {name}: not allowed: {reason}")
            plan.refused = plan.refused or reason
            return
        plan.items.append(Planned(kind, name, _remover(remove)))

    if "monitors" in data:
        for m in ServerMonitor.objects.select_related("server"):
            gone("monitor", m.server.origin, m.delete, m.server.group)
    if "channels" in data:
        for c in Channel.objects.all():
            gone("channel", c.name, c.delete)
    if "maintenance" in data:
        for s in MaintenanceSchedule.objects.select_related("server"):
            origin = (s.server.scheme, s.server.host, s.server.port) if s.server_id else None
            gone(
                "maintenance",
                f"{_target_name(origin, s.group)} {s.schedule}",
                s.delete,
                s.server.group if s.server_id else s.group,
            )
    if "mutes" in data:
        for mute in Mute.objects.filter(until__gt=timezone.now()).select_related("server"):
            origin = (mute.server.scheme, mute.server.host, mute.server.port) if mute.server_id else None
            gone(
                "mute",
                _target_name(origin, mute.group),
                mute.delete,
                mute.server.group if mute.server_id else mute.group,
            )
    if "status_pages" in data:
        for page in StatusPage.objects.all():
            gone("status_page", page.slug, page.delete, page.group)
    if "jobs" in data:
        for name, group in Job.objects.values_list("name", "group"):
            gone("job", name, lambda name=name: job_delete(name=name), group)
    _prune_freshness(data, gone)


def _prune_freshness(data: dict, gone: Callable) -> None:
    if "freshness" not in data:
        return
    for obj in FreshnessObjective.objects.select_related("site", "job"):
        group = obj.site.group if obj.site_id else obj.job.group
        gone("freshness", obj.name, lambda name=obj.name: freshness_delete(name=name), group, "job")


def _remover(fn: Callable[[], object]) -> Callable[[bool], str]:
    def write(dry: bool) -> str:
        if not dry:
            fn()
        return "removed"

    return write
