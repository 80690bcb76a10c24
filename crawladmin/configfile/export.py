"""Exporting the current configuration in the form apply reads, each object in its serializer's form less
what the file need not carry (a value that is the field's default), so an export applied again changes
nothing and stays short enough to read."""

from __future__ import annotations

import yaml
from django.db.models import Model
from django.utils import timezone

from alerts.models import Channel, MaintenanceSchedule, Mute
from crawladmin.configfile.keys import MAINTENANCE_KEYS, MONITOR_KEYS, MUTE_KEYS, SERVER_KEYS, STATUS_PAGE_KEYS
from crawladmin.configfile.plan_channels import _current_rules
from crawlcore.models import Job, Server
from crawlcore.selectors_jobs import job_definition
from crawler.urlnorm import ServerKey
from dashboard.models import StatusPage
from monitoring.models import ServerMonitor


def _without_defaults(model: type[Model], form: dict, keep: tuple[str, ...]) -> dict:
    """The form's keys whose value is not the field's default (the file is shorter; apply fills them in)."""
    out = {}
    for k, v in form.items():
        try:
            default = model._meta.get_field(k).get_default()
        except Exception:  # noqa: BLE001 - a key of the form that is not a field (url, server): always kept
            default = object()
        if k in keep or v != default:
            out[k] = v
    return out


def _key(s: Server) -> tuple:
    return (s.scheme, s.host, s.port)


def config_export(*, include_servers: str = "configured") -> dict:
    """The current configuration in the form apply reads (each object's form: crawladmin.serializers, less
    what the file does not carry). Servers: those an operator configured (trusted, grouped, owned, pinned,
    with a politeness of their own or a monitor) unless `include_servers` is "all"."""
    from crawladmin.serializers import MaintenanceSerializer, MonitorSerializer, MuteSerializer, ServerSerializer

    out_servers = []
    for s in sorted(Server.objects.select_related("monitor"), key=_key):
        form = ServerSerializer(s).data
        values = _without_defaults(Server, {k: form[k] for k in SERVER_KEYS}, ("url",))
        if include_servers == "all" or len(values) > 1 or hasattr(s, "monitor"):
            out_servers.append(values)
    monitors = []
    for m in sorted(ServerMonitor.objects.select_related("server"), key=lambda m: _key(m.server)):
        form = MonitorSerializer(m, context={"shown": {}}).data
        monitors.append(_without_defaults(ServerMonitor, {k: form[k] for k in MONITOR_KEYS}, ("server", "kind")))
    channels = []
    for c in Channel.objects.order_by("name"):
        entry = _without_defaults(Channel, {"name": c.name, "url": c.url, "enabled": c.enabled,
                                            "owner_of": c.owner_of}, ("name", "url"))  # fmt: skip
        rules = []
        for kinds, group, origin in _current_rules(c):
            rule: dict = {"kinds": kinds}
            if group:
                rule["group"] = group
            if origin:
                rule["server"] = ServerKey(*origin).origin()
            rules.append(rule)
        if rules:
            entry["rules"] = rules
        channels.append(entry)
    maintenance = []
    for sched in MaintenanceSchedule.objects.select_related("server"):
        form = MaintenanceSerializer(sched).data
        entry = {k: form[k] for k in MAINTENANCE_KEYS if form.get(k) not in (None, "")}
        maintenance.append(_without_defaults(MaintenanceSchedule, entry, ("schedule", "duration_minutes")))
    maintenance.sort(key=lambda e: (e.get("server") or "", e.get("group") or "", e["schedule"]))
    mutes = []
    for mute in Mute.objects.filter(until__gt=timezone.now()).select_related("server").order_by("until"):
        form = MuteSerializer(mute).data
        mutes.append({k: form[k] for k in MUTE_KEYS if form.get(k) not in (None, "")})
    mutes = list({(m.get("server"), m.get("group")): m for m in mutes}.values())  # the latest of each target
    mutes.sort(key=lambda e: (e.get("server") or "", e.get("group") or ""))
    pages = [
        _without_defaults(StatusPage, {k: getattr(p, k) for k in STATUS_PAGE_KEYS}, ("slug", "group"))
        for p in StatusPage.objects.order_by("slug")
    ]
    jobs = []
    for job in Job.objects.order_by("name"):
        d = job_definition(job)
        jobs.append({k: v for k, v in d.items() if v not in (None, "", []) or k in ("name", "seeds", "enabled")})
    out = {"servers": _with_objective_sites(out_servers), "monitors": monitors, "channels": channels,
           "maintenance": maintenance, "mutes": mutes, "status_pages": pages, "jobs": jobs,
           "freshness": _freshness()}  # fmt: skip
    return out


def _with_objective_sites(servers: list[dict]) -> list[dict]:
    """The servers, and after them those a freshness objective names that are not among them (the objective
    needs its site to exist when the file is applied to an empty database)."""
    from crawlcore.models import FreshnessObjective

    listed = {s["url"] for s in servers}
    sites = FreshnessObjective.objects.filter(site__isnull=False).select_related("site")
    extra = sorted({o.site.origin for o in sites} - listed)
    return servers + [{"url": url} for url in extra]


def _freshness() -> list[dict]:
    """The freshness objectives, each in its one form (crawlcore.services.freshness.freshness_form)."""
    from crawlcore.models import FreshnessObjective
    from crawlcore.services.freshness import freshness_form

    return [freshness_form(o) for o in FreshnessObjective.objects.select_related("site", "job").order_by("name")]


def config_export_yaml(**kwargs) -> str:
    return yaml.safe_dump(config_export(**kwargs), sort_keys=False, allow_unicode=True)
