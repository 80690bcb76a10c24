"""The configuration file's form: its sections and the keys an entry of each may have. One table that the
reader, every section's planner, the export, the REST API (crawladmin.api_v1) and the generated reference
read, so a key added here is a key of the file, of the API and of the documentation at once."""

from __future__ import annotations

SECTIONS = ("servers", "monitors", "channels", "maintenance", "mutes", "status_pages", "jobs", "freshness")

SERVER_KEYS = ("url", "group", "enabled", "crawler_num", "trusted", "owner_name", "owner_email", "min_delay",
               "max_concurrency")  # fmt: skip
MONITOR_KEYS = ("server", "kind", "name", "enabled", "health_url", "interval_s", "delay_threshold_s",
                "accepted_codes", "fail_after", "recover_after", "locations", "content_must", "content_must_not",
                "content_regex", "content_rendered", "quorum", "assertions", "sla_target", "tcp_tls", "tcp_banner",
                "dns_record_type", "dns_expected", "dns_server", "period_s", "grace_s")  # fmt: skip
CHANNEL_KEYS = ("name", "url", "enabled", "owner_of", "rules")
RULE_KEYS = ("kinds", "group", "server")
MAINTENANCE_KEYS = ("server", "group", "schedule", "time_zone", "duration_minutes", "reason", "enabled")
MUTE_KEYS = ("server", "group", "until", "reason")
STATUS_PAGE_KEYS = ("slug", "group", "title", "enabled", "show_addresses")
FRESHNESS_KEYS = ("name", "site", "job", "pages", "target", "budget")


def reference_sections() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The file's sections and the keys an entry of each may have, as read above: the generated configuration
    reference (crawladmin.reference) lists these."""
    from crawler.jobrules import JOB_KEYS

    return (("servers", SERVER_KEYS), ("monitors", MONITOR_KEYS), ("channels", CHANNEL_KEYS),
            ("channels: rules", RULE_KEYS), ("jobs", JOB_KEYS), ("freshness", FRESHNESS_KEYS))  # fmt: skip
