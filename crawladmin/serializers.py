"""The one external form of each object an operator touches: what the REST API answers (and its schema
describes), what `manage.py export_config` writes and `manage.py apply` reads back.

Each serializer here is that form, defined once. Writes do not go through `.save()`: the API hands the keys
to crawladmin.configfile's plan (the same checks and the same writes as `apply`), or, for objects the file does
not carry (one-off maintenance windows, incidents), to the owning app's service. `CONFIG_KEYS` names, per
object, the keys of the form that the file carries; the rest are read-only facts (status, ids, progress).
"""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from alerts.models import Channel, MaintenanceSchedule, Rule
from crawlcore.models import Job, JobRun, Server
from crawlcore.selectors_jobs import job_definition, job_progress
from crawler.status import Status
from monitoring.kinds import Kind
from monitoring.models import Incident, IncidentUpdate, ServerMonitor
from monitoring.selectors_evidence import incident_evidence

# The time zone the maintenance schedules' cron expressions are read in (alerts.recurrence: UTC).
MAINTENANCE_TIME_ZONE = "UTC"


def _origin_of(server: Server | None) -> str | None:
    return server.origin if server is not None else None


class ServerField(serializers.CharField):
    """A server named by its origin (`https://www.example.org`, `tcp://db.example.org:5432`)."""

    def to_representation(self, value):
        return value.origin if isinstance(value, Server) else value


class HealthSerializer(serializers.Serializer):
    """Whether the crawl may send the server work now (crawlcore.selectors_health)."""

    state = serializers.ChoiceField(choices=["healthy", "slow", "rate_limited", "down", "paused"])
    reason = serializers.CharField(allow_blank=True)
    source = serializers.CharField(allow_blank=True)
    since = serializers.CharField(allow_null=True)
    until = serializers.CharField(allow_null=True)


class ServerSerializer(serializers.Serializer):
    id = serializers.IntegerField(read_only=True)
    url = serializers.CharField(source="origin", help_text="scheme://host[:port]; tcp://, dns:// and heartbeat:// "
                                "rows are the targets of those monitors")  # fmt: skip
    group = serializers.CharField(required=False, allow_blank=True, max_length=100)
    enabled = serializers.BooleanField(required=False)
    crawler_num = serializers.IntegerField(required=False, allow_null=True, min_value=0)
    trusted = serializers.BooleanField(required=False, help_text="Its private addresses may be fetched (superuser)")
    owner_name = serializers.CharField(required=False, allow_blank=True)
    owner_email = serializers.CharField(required=False, allow_blank=True, help_text="Its events go there (superuser)")
    min_delay = serializers.FloatField(required=False, allow_null=True, help_text="Seconds between requests, at least")
    max_concurrency = serializers.IntegerField(required=False, allow_null=True, min_value=1)
    excluded_reason = serializers.CharField(read_only=True)
    health = serializers.SerializerMethodField(help_text="May the crawl send it work now, and why (host health)")

    @extend_schema_field(HealthSerializer(allow_null=True))
    def get_health(self, server: Server) -> dict | None:
        health = (self.context or {}).get("health")
        if health is None:
            return None  # the file's form (export_config) carries no state
        return health.get(server.id)


class MonitorSerializer(serializers.Serializer):
    """A monitor of any kind, with its kind's fields and the status every page shows (`status`: maintenance,
    stale and unmonitored too), beside the monitor's confirmed one."""

    server = ServerField(help_text="The server it watches: https://…, tcp://host:port, dns://name, heartbeat://slug")
    server_id = serializers.IntegerField(read_only=True)
    kind = serializers.ChoiceField(choices=[k.value for k in Kind], required=False, help_text="Empty: the server's")
    name = serializers.CharField(required=False, allow_blank=True, max_length=200)
    enabled = serializers.BooleanField(required=False)
    health_url = serializers.CharField(required=False, allow_blank=True)
    interval_s = serializers.FloatField(required=False, allow_null=True)
    delay_threshold_s = serializers.FloatField(required=False, allow_null=True)
    accepted_codes = serializers.CharField(required=False, allow_blank=True, max_length=200)
    fail_after = serializers.IntegerField(required=False, allow_null=True, min_value=1)
    recover_after = serializers.IntegerField(required=False, allow_null=True, min_value=1)
    locations = serializers.CharField(required=False, allow_blank=True, max_length=200)
    content_must = serializers.CharField(required=False, allow_blank=True)
    content_must_not = serializers.CharField(required=False, allow_blank=True)
    content_regex = serializers.BooleanField(required=False)
    content_rendered = serializers.BooleanField(
        required=False, help_text="HTTP: the content rule is checked on the page as a browser renders it"
    )
    quorum = serializers.IntegerField(required=False, allow_null=True, min_value=1)
    assertions = serializers.CharField(required=False, allow_blank=True)
    sla_target = serializers.FloatField(required=False, allow_null=True, min_value=0, max_value=100)
    tcp_tls = serializers.BooleanField(required=False, help_text="TCP: complete a TLS handshake")
    tcp_banner = serializers.CharField(required=False, allow_blank=True, max_length=200)
    dns_record_type = serializers.CharField(required=False, allow_blank=True, max_length=8)
    dns_expected = serializers.CharField(required=False, allow_blank=True)
    dns_server = serializers.CharField(required=False, allow_blank=True, max_length=100)
    period_s = serializers.FloatField(required=False, allow_null=True, help_text="Heartbeat: seconds between pings")
    grace_s = serializers.FloatField(required=False, allow_null=True, help_text="Heartbeat: lateness allowed")
    status = serializers.SerializerMethodField(help_text="What every page shows (maintenance, stale, … too)")
    confirmed_status = serializers.CharField(source="status", read_only=True)
    status_since = serializers.DateTimeField(read_only=True, allow_null=True)
    last_check_at = serializers.DateTimeField(read_only=True, allow_null=True)
    ping_url = serializers.SerializerMethodField(help_text="Heartbeat: where the job pings (operators only)")

    def get_status(self, m: ServerMonitor) -> str:
        shown = (self.context or {}).get("shown")
        if shown is None:
            from monitoring.selectors import servers_shown

            shown = dict(servers_shown().filter(id=m.server_id).values_list("id", "shown_status"))
        return shown.get(m.server_id, Status.UNMONITORED.value)

    def get_ping_url(self, m: ServerMonitor) -> str | None:
        if m.kind != Kind.HEARTBEAT.value or not m.ping_token or not (self.context or {}).get("may_write"):
            return None
        return f"{settings.MONITOR_PING_BASE_URL}/ping/{m.ping_token}"


class RuleSerializer(serializers.Serializer):
    kinds = serializers.CharField(required=False, help_text="Comma list: down,up,delay,cert,content …")
    group = serializers.CharField(required=False, allow_blank=True, help_text="Only this group's servers")
    server = ServerField(required=False, allow_null=True, help_text="Only this server (not with group)")

    def to_representation(self, rule: Rule) -> dict:
        return {"kinds": rule.kinds, "group": rule.group, "server": _origin_of(rule.server)}


class ChannelSerializer(serializers.Serializer):
    """A channel's URL holds secrets (webhook tokens): read masked, written whole."""

    name = serializers.CharField(max_length=100)
    url = serializers.CharField(help_text="An Apprise URL or e-mail addresses; shown masked")
    enabled = serializers.BooleanField(required=False)
    owner_of = serializers.CharField(required=False, allow_blank=True)
    rules = RuleSerializer(many=True, required=False)

    def to_representation(self, c: Channel) -> dict:
        return {"name": c.name, "url": c.masked, "enabled": c.enabled, "owner_of": c.owner_of,
                "rules": [RuleSerializer(r).data for r in c.rules.select_related("server").order_by("id")]}  # fmt: skip


class MaintenanceSerializer(serializers.Serializer):
    """A recurring maintenance window of one server or one group. `schedule`: a 5-field cron expression,
    the dialect jobs' schedules use, or the weekly shorthand `sun 02:00`; read in `time_zone` (UTC)."""

    id = serializers.IntegerField(read_only=True)
    server = ServerField(required=False, allow_null=True)
    group = serializers.CharField(required=False, allow_blank=True, max_length=100)
    schedule = serializers.CharField(max_length=100)
    time_zone = serializers.SerializerMethodField()
    duration_minutes = serializers.IntegerField(min_value=1, max_value=7 * 24 * 60)
    reason = serializers.CharField(required=False, allow_blank=True, max_length=200)
    enabled = serializers.BooleanField(required=False)

    def get_time_zone(self, _s: MaintenanceSchedule) -> str:
        return MAINTENANCE_TIME_ZONE


class MaintenanceWindowSerializer(serializers.Serializer):
    """One planned downtime of one server (a recurring schedule writes these ahead too)."""

    id = serializers.IntegerField(read_only=True)
    server = ServerField()
    starts_at = serializers.DateTimeField()
    ends_at = serializers.DateTimeField()
    reason = serializers.CharField(required=False, allow_blank=True, max_length=200)


class MuteSerializer(serializers.Serializer):
    id = serializers.IntegerField(read_only=True)
    server = ServerField(required=False, allow_null=True)
    group = serializers.CharField(required=False, allow_blank=True, max_length=100)
    until = serializers.DateTimeField()
    reason = serializers.CharField(required=False, allow_blank=True, max_length=200)


class StatusPageSerializer(serializers.Serializer):
    slug = serializers.SlugField(max_length=60, help_text="The page's address: /status/<slug>/")
    group = serializers.CharField(max_length=100)
    title = serializers.CharField(required=False, allow_blank=True, max_length=200)
    enabled = serializers.BooleanField(required=False)
    show_addresses = serializers.BooleanField(required=False)


class IncidentUpdateSerializer(serializers.Serializer):
    id = serializers.IntegerField(read_only=True)
    status = serializers.ChoiceField(choices=[s for s, _ in Incident.STATUSES])
    text = serializers.CharField(max_length=5000)
    at = serializers.DateTimeField(read_only=True)
    author = serializers.CharField(read_only=True, help_text="Empty: written by the monitor")

    def to_representation(self, u: IncidentUpdate) -> dict:
        return {"id": u.id, "status": u.status, "text": u.text, "at": u.at.isoformat(), "author": u.author}


class TimingsSerializer(serializers.Serializer):
    dns = serializers.FloatField(allow_null=True)
    connect = serializers.FloatField(allow_null=True)
    tls = serializers.FloatField(allow_null=True)
    first_byte = serializers.FloatField(allow_null=True)
    body = serializers.FloatField(allow_null=True)
    total = serializers.FloatField(allow_null=True)


class LocationVerdictSerializer(serializers.Serializer):
    location = serializers.CharField(allow_null=True)
    verdict = serializers.CharField(allow_null=True)
    status_code = serializers.IntegerField(allow_null=True)


class LastGoodSerializer(serializers.Serializer):
    at = serializers.DateTimeField(allow_null=True)
    status_code = serializers.IntegerField(allow_null=True)
    url = serializers.CharField(allow_null=True)
    replay = serializers.CharField(allow_null=True)


class EvidenceSerializer(serializers.Serializer):
    """The schema of an incident's evidence (written by monitoring.selectors_evidence.evidence_view)."""

    status_code = serializers.IntegerField(allow_null=True)
    headers = serializers.DictField(child=serializers.CharField())
    body_excerpt = serializers.CharField(allow_blank=True, allow_null=True)
    content_type = serializers.CharField(allow_blank=True, allow_null=True)
    timings_ms = TimingsSerializer()
    locations = LocationVerdictSerializer(many=True)
    last_good = LastGoodSerializer(allow_null=True)
    difference = serializers.CharField(allow_blank=True, allow_null=True)


class IncidentSerializer(serializers.Serializer):
    """An incident and its updates. Other apps add fields by subclassing this form (one place)."""

    id = serializers.IntegerField(read_only=True)
    server = ServerField()
    server_id = serializers.IntegerField(read_only=True)
    title = serializers.CharField(max_length=200)
    status = serializers.ChoiceField(choices=[s for s, _ in Incident.STATUSES], read_only=True)
    opened_at = serializers.DateTimeField(read_only=True)
    resolved_at = serializers.DateTimeField(read_only=True, allow_null=True)
    updates = serializers.SerializerMethodField()
    evidence = serializers.SerializerMethodField()

    @extend_schema_field(IncidentUpdateSerializer(many=True))
    def get_updates(self, i: Incident) -> list[dict]:
        # Sorted here, not by the query: a list's updates come prefetched, all at once.
        return [IncidentUpdateSerializer(u).data for u in sorted(i.updates.all(), key=lambda u: (u.at, u.id))]

    @extend_schema_field(EvidenceSerializer(allow_null=True))
    def get_evidence(self, i: Incident) -> dict | None:
        """What the server answered when the outage was confirmed (monitoring.selectors_evidence's one form);
        null for an incident opened by hand or before evidence was kept."""
        known = (self.context or {}).get("evidence")
        if known is not None and i.id in known:  # a list's page, read at once (incidents_evidence)
            return known[i.id]
        return incident_evidence(incident=i)


class IncidentCreateSerializer(serializers.Serializer):
    server = ServerField()
    title = serializers.CharField(max_length=200)
    status = serializers.ChoiceField(choices=[s for s, _ in Incident.STATUSES], required=False)
    text = serializers.CharField(max_length=5000, help_text="The first update")


class ProgressSerializer(serializers.Serializer):
    done = serializers.IntegerField()
    queued = serializers.IntegerField()
    failed = serializers.IntegerField()
    excluded = serializers.IntegerField(required=False)
    eta_seconds = serializers.IntegerField(allow_null=True)


class JobSerializer(serializers.Serializer):
    """A crawl job: the keys `apply` reads (crawler.jobrules), then its state and progress."""

    name = serializers.CharField(max_length=100)
    group = serializers.CharField(required=False, allow_blank=True)
    seeds = serializers.ListField(child=serializers.CharField(), required=False)
    scope = serializers.ChoiceField(choices=[s for s, _ in Job.SCOPES], required=False)
    max_depth = serializers.IntegerField(required=False, allow_null=True)
    max_pages = serializers.IntegerField(required=False, allow_null=True)
    include = serializers.ListField(child=serializers.CharField(), required=False)
    exclude = serializers.ListField(child=serializers.CharField(), required=False)
    revisit_after = serializers.FloatField(required=False, allow_null=True)
    delay = serializers.FloatField(required=False, allow_null=True, help_text="Seconds, while the job holds a server")
    concurrency = serializers.IntegerField(required=False, allow_null=True, help_text="While the job holds a server")
    windows = serializers.ListField(child=serializers.CharField(), required=False)
    time_zone = serializers.CharField(required=False)
    schedule = serializers.CharField(required=False, allow_blank=True, help_text="5-field cron, in time_zone")
    enabled = serializers.BooleanField(required=False)
    state = serializers.CharField(read_only=True)
    progress = ProgressSerializer(read_only=True)

    def to_representation(self, job: Job) -> dict:
        return {**job_definition(job), "state": job.state, "progress": job_progress(job=job)}


class StallSerializer(serializers.Serializer):
    server = serializers.CharField()
    reason = serializers.CharField()
    until = serializers.CharField(allow_null=True)
    health = serializers.CharField(required=False, help_text="The server's health state")
    source = serializers.CharField(required=False, allow_blank=True, help_text="What holds it")


class RunSummarySerializer(serializers.Serializer):
    started_at = serializers.CharField(allow_null=True)
    ended_at = serializers.CharField(allow_null=True)
    trigger = serializers.CharField()
    pages = serializers.IntegerField()
    failures = serializers.IntegerField()
    stop_reason = serializers.CharField(allow_blank=True)


class JobDetailSerializer(JobSerializer):
    """A job as its page shows it: its form, when it runs next, per server why it is not moving, its last runs
    (crawlcore.selectors_jobs.job_detail)."""

    next_run_at = serializers.CharField(read_only=True, allow_null=True)
    stalled = StallSerializer(many=True, read_only=True)
    runs = RunSummarySerializer(many=True, read_only=True)

    def to_representation(self, job: Job) -> dict:
        from crawlcore.selectors_jobs import job_detail

        return job_detail(job=job)


class JobRunSerializer(serializers.Serializer):
    id = serializers.IntegerField(read_only=True)
    job = serializers.CharField(source="job.name", read_only=True)
    started_at = serializers.DateTimeField(read_only=True)
    ended_at = serializers.DateTimeField(read_only=True, allow_null=True)
    trigger = serializers.CharField(read_only=True)
    pages = serializers.IntegerField(read_only=True)
    failures = serializers.IntegerField(read_only=True)
    stop_reason = serializers.CharField(read_only=True)


def run_form(run: JobRun) -> dict:
    return JobRunSerializer(run).data


__all__ = [
    "ChannelSerializer",
    "IncidentCreateSerializer",
    "IncidentSerializer",
    "IncidentUpdateSerializer",
    "JobRunSerializer",
    "JobSerializer",
    "MaintenanceSerializer",
    "MaintenanceWindowSerializer",
    "MonitorSerializer",
    "MuteSerializer",
    "ServerSerializer",
    "StatusPageSerializer",
    "run_form",
]
