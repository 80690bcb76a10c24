"""Monitoring state next to crawladmin's Server: per-server settings and confirmed status, the status
timeline, hourly rollups and maintenance windows. The raw checks are crawladmin's StatusCheck rows
with agent="monitor".
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone

from crawlcore.models import Exchange, Server, StatusCheck
from crawler.status import CONFIRMED, Status

from .assertions import AssertionRuleError, assertions_parse
from .content import ContentRule, ContentRuleError, rule_check
from .kinds import Kind
from .kinds import shown_name as _shown_name
from .kinds import target_text as _target_text
from .quorum import LocationsError, locations_parse
from .validate import monitor_problems

# Only confirmed statuses are stored: maintenance and unmonitored are shown, never written here.
STATUS_CHOICES = [(s.value, s.value.title()) for s in CONFIRMED]
KIND_CHOICES = [(k.value, k.value.upper() if k is not Kind.HEARTBEAT else "Heartbeat") for k in Kind]


def locations_valid(text: str) -> None:
    try:
        locations_parse(text)
    except LocationsError as exc:
        raise ValidationError(str(exc)) from None


class ServerMonitor(models.Model):
    """How one server is monitored and where it stands. Empty settings fall back to MONITOR_* defaults."""

    server = models.OneToOneField(Server, on_delete=models.CASCADE, primary_key=True, related_name="monitor")
    enabled = models.BooleanField(default=True)
    health_url = models.TextField(blank=True, help_text="Empty: the server's home page")
    interval_s = models.FloatField(null=True, blank=True, help_text="Seconds between checks; empty: MONITOR_INTERVAL")
    delay_threshold_s = models.FloatField(
        null=True, blank=True, help_text="A slower valid answer is a delay; empty: MONITOR_DELAY_THRESHOLD"
    )
    accepted_codes = models.CharField(max_length=200, blank=True, help_text="e.g. 200,301-302; empty: any 2xx/3xx")
    fail_after = models.PositiveSmallIntegerField(null=True, blank=True, help_text="Empty: MONITOR_FAIL_AFTER")
    recover_after = models.PositiveSmallIntegerField(null=True, blank=True, help_text="Empty: MONITOR_RECOVER_AFTER")
    locations = models.CharField(
        max_length=200,
        blank=True,
        validators=[locations_valid],
        help_text="Crawler numbers that each check it, e.g. 1,2,3; the status moves when a quorum agrees",
    )
    content_must = models.TextField(blank=True, help_text="The health page must contain this (content check)")
    content_must_not = models.TextField(blank=True, help_text="The health page must not contain this")
    content_regex = models.BooleanField(default=False, help_text="The two above are regular expressions")
    content_rendered = models.BooleanField(
        default=False, db_default=False,
        help_text="Check the content in the page as a browser renders it (headless Chromium, bounded)",
    )  # fmt: skip
    quorum = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="Locations that must agree; empty: a majority of them"
    )
    assertions = models.TextField(
        blank=True,
        default="",
        db_default="",
        help_text="HTTP: one a line: status in 200,204 / header NAME [== VALUE] / json $.path == VALUE / "
        "json $.path contains VALUE / time < MS; a failing one makes the check an error naming it",
    )
    # What is checked (monitoring.kinds): the server row of a TCP, DNS or heartbeat monitor has that scheme.
    kind = models.CharField(max_length=12, choices=KIND_CHOICES, default=Kind.HTTP.value, db_default=Kind.HTTP.value)
    name = models.CharField(
        max_length=200,
        blank=True,
        default="",
        db_default="",
        help_text="What alerts and pages call it; empty: the server",
    )
    sla_target = models.FloatField(
        null=True, blank=True, help_text="Uptime percent promised per month, e.g. 99.9 (uptime_report's sla_met)"
    )
    tcp_tls = models.BooleanField(
        default=False, db_default=False, help_text="TCP: complete a TLS handshake after connecting"
    )
    tcp_banner = models.CharField(
        max_length=200, blank=True, default="", db_default="", help_text="TCP: the server's first bytes contain this"
    )
    dns_record_type = models.CharField(
        max_length=8, blank=True, default="", db_default="", help_text="DNS: A, AAAA, MX, TXT ...; empty: A"
    )
    dns_expected = models.TextField(
        blank=True, default="", db_default="", help_text="DNS: the expected records, comma-separated; empty: any"
    )
    dns_server = models.CharField(
        max_length=100, blank=True, default="", db_default="", help_text="DNS: ask this nameserver (ip[:port])"
    )
    period_s = models.FloatField(null=True, blank=True, help_text="Heartbeat: seconds between the job's pings")
    grace_s = models.FloatField(null=True, blank=True, help_text="Heartbeat: seconds of lateness allowed")
    ping_token = models.CharField(max_length=64, null=True, blank=True, unique=True, editable=False)
    last_ping_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_ping_kind = models.CharField(max_length=8, blank=True, default="", db_default="", editable=False)
    ping_started_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_ping_body = models.TextField(
        blank=True, default="", db_default="", editable=False, help_text="What the last ping sent, cut short"
    )
    # The ping endpoint's rate limit: pings counted in the current window (one guarded UPDATE a ping).
    ping_window_at = models.DateTimeField(null=True, blank=True, editable=False)
    ping_window_count = models.PositiveIntegerField(default=0, db_default=0, editable=False)
    # Confirmation state (monitoring.confirm.Confirmation) and the schedule; written only by monitoring services.
    status = models.CharField(max_length=12, choices=STATUS_CHOICES, default=Status.UNKNOWN.value)
    status_since = models.DateTimeField(null=True, blank=True)
    candidate = models.CharField(max_length=12, blank=True)
    streak = models.PositiveIntegerField(default=0)
    last_check_at = models.DateTimeField(null=True, blank=True)
    last_category = models.CharField(max_length=12, blank=True)
    next_check_at = models.DateTimeField(null=True, blank=True)
    dispatched_at = models.DateTimeField(null=True, blank=True)
    claim_token = models.CharField(max_length=64, blank=True)

    class Meta:
        indexes = [models.Index(fields=["enabled", "next_check_at"], name="monitor_due_idx")]

    def __str__(self) -> str:
        return self.name or f"monitor of {self.server_id}"

    @property
    def target_text(self) -> str:
        s = self.server
        return _target_text(scheme=s.scheme, host=s.host, port=s.port, origin=s.origin)

    @property
    def shown_name(self) -> str:
        """The name every reader shows (monitoring.kinds.shown_name)."""
        s = self.server
        return _shown_name(name=self.name, scheme=s.scheme, host=s.host, port=s.port, origin=s.origin)

    def clean(self) -> None:
        problems = monitor_problems(
            health_url=self.health_url,
            interval_s=self.interval_s,
            delay_threshold_s=self.delay_threshold_s,
            accepted_codes=self.accepted_codes,
            fail_after=self.fail_after,
            recover_after=self.recover_after,
        )
        try:
            rule_check(ContentRule(self.content_must, self.content_must_not, self.content_regex))
        except ContentRuleError as exc:
            problems.setdefault("content_must", str(exc))
        try:
            assertions_parse(self.assertions)
        except AssertionRuleError as exc:
            problems.setdefault("assertions", str(exc))
        if self.kind == Kind.DNS.value and self.dns_server:
            from .services.trust import nameserver_refusal  # services import these models

            if refused := nameserver_refusal(text=self.dns_server):
                problems["dns_server"] = refused
        if self.server_id is not None and "health_url" not in problems:
            problems.update(self._trust_problems())
        if problems:
            raise ValidationError(problems)

    def _trust_problems(self) -> dict[str, str]:
        """What the server's trust does not cover (monitoring.services.trust): a health URL on another host
        that reaches a forbidden address, a content rule on a URL that is not trusted."""
        from .services.trust import content_refusal, health_url_refusal  # services import these models

        out = {}
        refused = health_url_refusal(url=self.health_url, server=self.server)
        if refused:
            out["health_url"] = refused
        has_rule = bool(self.content_must or self.content_must_not)
        content = content_refusal(url=self.health_url, server=self.server, has_rule=has_rule)
        if content:
            out["content_must"] = content
        try:
            reads = any(a.reads_response for a in assertions_parse(self.assertions))
        except AssertionRuleError:
            reads = False
        # Header and JSON assertions read the answer, as a content rule does: the same trust.
        if content_refusal(url=self.health_url, server=self.server, has_rule=reads):
            out["assertions"] = "header and json assertions run only on a trusted server, on its own host"
        return out


class HeartbeatPing(models.Model):
    """One ping a heartbeat's job sent: when, which signal, what it sent, from where. The newest
    PINGS_KEPT of each heartbeat are kept (monitoring.services.monitors.heartbeat_ping prunes)."""

    PINGS_KEPT = 50

    server = models.ForeignKey(Server, on_delete=models.CASCADE, related_name="heartbeat_pings")
    at = models.DateTimeField()
    kind = models.CharField(max_length=8)  # success, start or fail (monitoring.kinds.heartbeat)
    body = models.TextField(blank=True)  # cut at MONITOR_PING_BODY_BYTES, control characters removed
    source = models.GenericIPAddressField(null=True, blank=True, help_text="The address the ping came from")

    class Meta:
        indexes = [models.Index(fields=["server", "at"], name="ping_server_time_idx")]

    def __str__(self) -> str:
        return f"{self.kind} ping at {self.at:%Y-%m-%d %H:%M:%S}"


class StatusChange(models.Model):
    """One confirmed change of a server's status: the status timeline."""

    server = models.ForeignKey(Server, on_delete=models.CASCADE, related_name="status_changes")
    from_status = models.CharField(max_length=12, choices=STATUS_CHOICES)
    to_status = models.CharField(max_length=12, choices=STATUS_CHOICES)
    at = models.DateTimeField()
    reason = models.CharField(max_length=200, blank=True)
    # No database foreign key: the status-check table is partitioned by time on PostgreSQL (its key is (id,
    # checked_at), so `id` alone has no unique constraint to reference), and retention drops its old
    # partitions whole; a change then keeps its row and shows no check.
    status_check = models.ForeignKey(
        StatusCheck, null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_constraint=False
    )

    class Meta:
        indexes = [models.Index(fields=["server", "at"], name="change_server_time_idx")]


class HourlyRollup(models.Model):
    """Checks of one server in one hour: counts per category and latency of the answered ones."""

    server = models.ForeignKey(Server, on_delete=models.CASCADE, related_name="hourly_rollups")
    hour = models.DateTimeField(help_text="Start of the hour (UTC)")
    normal = models.PositiveIntegerField(default=0)
    delay = models.PositiveIntegerField(default=0)
    disconnect = models.PositiveIntegerField(default=0)
    error = models.PositiveIntegerField(default=0)
    maintenance = models.PositiveIntegerField(default=0)
    timed = models.PositiveIntegerField(default=0, help_text="Answered checks behind the latency figures")
    latency_min_ms = models.FloatField(null=True, blank=True)
    latency_mean_ms = models.FloatField(null=True, blank=True)
    latency_p95_ms = models.FloatField(null=True, blank=True)
    latency_max_ms = models.FloatField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["server", "hour"], name="rollup_unique_server_hour")]
        indexes = [models.Index(fields=["hour"], name="rollup_hour_idx")]


class MaintenanceWindow(models.Model):
    """Planned downtime: checks inside it show as maintenance and are left out of uptime."""

    server = models.ForeignKey(Server, on_delete=models.CASCADE, related_name="maintenance_windows")
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    reason = models.CharField(max_length=200, blank=True)

    class Meta:
        indexes = [models.Index(fields=["server", "starts_at"], name="maint_server_start_idx")]
        constraints = [
            models.CheckConstraint(condition=models.Q(ends_at__gt=models.F("starts_at")), name="maint_ends_after_start")
        ]


class LocationState(models.Model):
    """One location's (crawler number's) own confirmation state and schedule for a multi-location monitor;
    the server's status follows a quorum of these (monitoring.quorum)."""

    server = models.ForeignKey(Server, on_delete=models.CASCADE, related_name="location_states")
    crawler_num = models.PositiveIntegerField()
    status = models.CharField(max_length=12, choices=STATUS_CHOICES, default=Status.UNKNOWN.value)
    candidate = models.CharField(max_length=12, blank=True)
    streak = models.PositiveIntegerField(default=0)
    last_check_at = models.DateTimeField(null=True, blank=True)
    last_category = models.CharField(max_length=12, blank=True)
    next_check_at = models.DateTimeField(null=True, blank=True)
    claim_token = models.CharField(max_length=64, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["server", "crawler_num"], name="location_state_unique")]


class ServerCertificate(models.Model):
    """The certificate the server's last https check saw: what the server page shows and what
    alerts compares to tell an expiry coming."""

    server = models.OneToOneField(Server, on_delete=models.CASCADE, primary_key=True, related_name="certificate")
    subject = models.CharField(max_length=300, blank=True)
    issuer = models.CharField(max_length=300, blank=True)
    names = models.JSONField(default=list, blank=True)
    not_before = models.DateTimeField(null=True, blank=True)
    not_after = models.DateTimeField(null=True, blank=True)
    checked_at = models.DateTimeField()
    error = models.CharField(max_length=300, blank=True, help_text="The last check's TLS failure, if any")


class Incident(models.Model):
    """An outage people can read about: opened by a confirmed outage (or by an operator), told through its
    updates (investigating, identified, monitoring, resolved), shown on the status pages."""

    INVESTIGATING, IDENTIFIED, MONITORING, RESOLVED = "investigating", "identified", "monitoring", "resolved"
    STATUSES = [(s, s.title()) for s in (INVESTIGATING, IDENTIFIED, MONITORING, RESOLVED)]

    server = models.ForeignKey(Server, on_delete=models.CASCADE, related_name="incidents")
    title = models.CharField(max_length=200)
    status = models.CharField(max_length=16, choices=STATUSES, default=INVESTIGATING)
    opened_at = models.DateTimeField(default=timezone.now)
    resolved_at = models.DateTimeField(null=True, blank=True)
    status_change = models.ForeignKey(
        StatusChange, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text="The confirmed outage that opened it",
    )  # fmt: skip

    class Meta:
        indexes = [models.Index(fields=["server", "opened_at"], name="incident_server_opened_idx")]
        constraints = [
            models.UniqueConstraint(
                fields=["server"], condition=models.Q(resolved_at__isnull=True), name="incident_one_open_per_server"
            )
        ]

    def __str__(self) -> str:
        return self.title


class IncidentUpdate(models.Model):
    """One update of an incident, in the operator's words (or the monitor's, when it opened or closed it)."""

    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="updates")
    status = models.CharField(max_length=16, choices=Incident.STATUSES)
    text = models.TextField(max_length=5000)
    at = models.DateTimeField(default=timezone.now)
    author = models.CharField(max_length=150, blank=True, help_text="Empty: written by the monitor")

    class Meta:
        indexes = [models.Index(fields=["incident", "at"], name="incident_update_time_idx")]


class DomainExpiry(models.Model):
    """A monitored domain's registration expiry as its registry's RDAP service last told it (the cache of
    monitoring.services.domains). `error` set: the last lookup failed and the expiry is unknown now;
    `expires_at` then keeps what was last known."""

    domain = models.CharField(max_length=253, unique=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    registrar = models.CharField(max_length=200, blank=True)
    checked_at = models.DateTimeField()
    error = models.CharField(max_length=300, blank=True)

    def __str__(self) -> str:
        return self.domain


class Evidence(models.Model):
    """What the server answered when a change into disconnect, error or delay was confirmed: the confirming
    check's heads and first bytes of its body (kept as an archive exchange, crawlcore's Exchange of kind
    monitor, so an export writes it as any other answer), its timings, the address and certificate, what each
    location saw, the last good answer of the URL and what differs. monitoring.services.evidence writes it
    in the transaction of the change; EVIDENCE_RETENTION_DAYS removes it."""

    status_change = models.OneToOneField(StatusChange, on_delete=models.CASCADE, related_name="evidence")
    server = models.ForeignKey(Server, on_delete=models.CASCADE, related_name="+")
    taken_at = models.DateTimeField()
    url = models.TextField()
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    category = models.CharField(max_length=12)
    failure_kind = models.CharField(max_length=32, blank=True)
    detail = models.CharField(max_length=300, blank=True)
    content_type = models.CharField(max_length=200, blank=True)
    size = models.PositiveIntegerField(default=0, help_text="Body bytes received (the first of them are kept)")
    checksum = models.CharField(max_length=40, blank=True, help_text="sha1 of the body kept")
    # milliseconds by phase: dns, connect (TCP), tls, first_byte, body, total; null where not reached
    timings = models.JSONField(default=dict)
    peer_ip = models.GenericIPAddressField(null=True, blank=True)
    certificate = models.JSONField(null=True, blank=True, help_text="subject, issuer, names, not_after")
    locations = models.JSONField(default=list, help_text="[{location, verdict, status_code}]")
    # The archive exchange holding the heads (secrets masked) and the body; none when nothing answered.
    # No database key: the exchange table is crawlcore's and is removed with this row.
    exchange = models.ForeignKey(
        Exchange, null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_constraint=False
    )
    last_good = models.JSONField(null=True, blank=True, help_text="at, status_code, url, size, checksum, source")
    difference = models.CharField(max_length=500, blank=True)

    class Meta:
        indexes = [models.Index(fields=["taken_at"], name="evidence_taken_idx")]
