"""The environment's table of settings: every variable crawladmin reads, with its type, default and range,
parsed in one place (`_load()`) so that one bad value gives one clear error naming it. Apart from the Django
settings built from it (crawladmin.settings) because it is also read on its own: the generated settings
reference (crawladmin.reference) swaps `env` for a recording environment and calls `_load()` to list every
variable as declared here. Pure: no Django, only the pure core (crawler) and analyzer.config."""

from __future__ import annotations

from pathlib import Path

from analyzer.config import national_tld
from crawler.config import ConfigError, Env
from crawler.render import find_chromium
from crawler.render_need import MODES

BASE_DIR = Path(__file__).resolve().parent.parent
VERSION = "0.1.0"

env = Env.from_os()
_YEAR = 366 * 86400.0


def _time_zone(name: str) -> str:
    """The operator's zone: every time the dashboard shows is in it, named, and the load profiles' hours
    of day are its hours. An IANA name (Europe/Berlin, Asia/Seoul); default UTC."""
    import zoneinfo

    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise ConfigError(f"TIME_ZONE: {name!r} is not a time zone name (e.g. UTC, Europe/Berlin)") from exc
    return name


def _days_list(text: str) -> tuple[int, ...]:
    try:
        days = tuple(sorted({int(p) for p in text.split(",") if p.strip()}, reverse=True))
    except ValueError:
        raise ConfigError(f"ALERTS_CERT_DAYS={text!r}: a comma list of whole days, e.g. 21,7,1") from None
    if any(d < 0 or d > 365 for d in days):
        raise ConfigError(f"ALERTS_CERT_DAYS={text!r}: days must be within 0-365")
    return days


def _load() -> dict:
    """Every environment-driven value, parsed in one place so one bad value gives one clear error."""
    data_dir = Path(env.str("CRAWLADMIN_DATA_DIR", str(BASE_DIR / "var")))
    return {
        "DATA_DIR": data_dir,
        "DATABASE_URL": env.url(
            "DATABASE_URL",
            f"sqlite:///{data_dir / 'crawladmin.sqlite3'}",
            ("sqlite", "postgres", "postgresql", "pgsql"),
        ),
        "CELERY_BROKER_URL": env.url("CELERY_BROKER_URL", "memory://", ("memory", "redis", "rediss")),
        # PostgreSQL's random_page_cost for our connections: the crawl's working set is in memory, where an
        # index probe costs about what a sequential read does; at the server's default (4, for spinning disks)
        # a lookup of a batch's ~600 URL hashes was planned as a scan of the whole URL table up to ~100,000
        # URLs. 0: the server's own setting.
        "DB_RANDOM_PAGE_COST": env.number("DB_RANDOM_PAGE_COST", 1.1, minimum=0.0, maximum=100.0),
        "TIME_ZONE": _time_zone(env.str("TIME_ZONE", "UTC")),
        "CRAWLER_NUM": env.integer("CRAWLER_NUM", None, minimum=0, maximum=10_000),
        "CRAWL_CONNECT_TIMEOUT": env.number("CRAWL_CONNECT_TIMEOUT", 15.0, minimum=0.01, maximum=600.0),
        "CRAWL_HEADER_TIMEOUT": env.number("CRAWL_HEADER_TIMEOUT", 10.0, minimum=0.01, maximum=600.0),
        # Name lookups have their own deadline: getaddrinfo has none, and a silent resolver retries for minutes.
        "CRAWL_DNS_TIMEOUT": env.number("CRAWL_DNS_TIMEOUT", 5.0, minimum=0.01, maximum=600.0),
        "CRAWL_BODY_TIMEOUT": env.number("CRAWL_BODY_TIMEOUT", 20.0, minimum=0.01, maximum=3600.0),
        # Which HTTP stack the load agent and the scans fetch with: "engine", the one libcurl multi engine the
        # monitor uses too (crawler.engine: one thread per process drives every transfer), or "threads", the
        # requests/urllib3 Fetcher on each worker thread (crawler.fetch), kept for comparison and fallback.
        "CRAWL_FETCH_ENGINE": env.choice("CRAWL_FETCH_ENGINE", "engine", ("engine", "threads")),
        "CRAWL_MAX_BODY_BYTES": env.integer("CRAWL_MAX_BODY_BYTES", 10 * 1024 * 1024, minimum=1024, maximum=1024**3),
        "CRAWL_MAX_REDIRECTS": env.integer("CRAWL_MAX_REDIRECTS", 5, minimum=0, maximum=100),
        "CRAWL_DELAY_THRESHOLD": env.number("CRAWL_DELAY_THRESHOLD", 3.0, minimum=0.0, maximum=600.0),
        "CRAWL_DEFAULT_DELAY": env.number("CRAWL_DEFAULT_DELAY", 1.0, minimum=0.0, maximum=3600.0),
        "CRAWL_MAX_DELAY": env.number("CRAWL_MAX_DELAY", 30.0, minimum=0.0, maximum=86400.0),
        "CRAWL_SERVER_CONCURRENCY": env.integer("CRAWL_SERVER_CONCURRENCY", 1, minimum=1, maximum=64),
        "CRAWL_NR1_BACKOFF": env.number("CRAWL_NR1_BACKOFF", 3600.0, minimum=0.0, maximum=_YEAR),
        "CRAWL_NR2_BACKOFF": env.number("CRAWL_NR2_BACKOFF", 21600.0, minimum=0.0, maximum=_YEAR),
        "CRAWL_ALLOW_PRIVATE": env.cidrs("CRAWL_ALLOW_PRIVATE"),
        "CRAWL_USER_AGENT": env.str(
            "CRAWL_USER_AGENT", f"crawladmin/{VERSION} (+https://github.com/crawladmin/crawladmin)"
        ),
        # Not in the §12 table; ours, with defaults that suit the embedded mode.
        "CRAWL_MAX_DEPTH": env.integer("CRAWL_MAX_DEPTH", 25, minimum=0, maximum=10_000),
        # A running job that does no page for this many minutes (not paused, inside its window) is told stalled.
        "JOBS_STALL_MINUTES": env.number("JOBS_STALL_MINUTES", 15.0, minimum=0.1, maximum=10080.0),
        "CRAWL_SCOPE": env.choice("CRAWL_SCOPE", "any", ("host", "domain", "any")),
        "CRAWL_OFFSITE_DEPTH": env.integer("CRAWL_OFFSITE_DEPTH", 25, minimum=0, maximum=10_000),
        "CRAWL_MAX_URL_LENGTH": env.integer("CRAWL_MAX_URL_LENGTH", 2048, minimum=64, maximum=65536),
        "CRAWL_MERGE_HOSTS": env.boolean("CRAWL_MERGE_HOSTS", True),
        # Seed 003's site dedup before dispatch: a new server's address is resolved when it is created; one on the
        # address, scheme and port of a known site fetches its home page alone first, and the same home page (same
        # checksum) makes it that site's alias before its other URLs are fetched; a different one (virtual hosting)
        # leaves two sites. False: no lookup at creation, only the home-page check whenever a home page is stored.
        "CRAWL_MERGE_BY_ADDRESS": env.boolean("CRAWL_MERGE_BY_ADDRESS", True),
        # Link reports: record and check the images, stylesheets and scripts of pages (never parsed);
        # honour rel=nofollow on a link (it is recorded either way, with the reason); which #fragments must
        # name an element of their page: links within a site, all links, or none.
        "CRAWL_CHECK_RESOURCES": env.boolean("CRAWL_CHECK_RESOURCES", True),
        "CRAWL_OBEY_NOFOLLOW": env.boolean("CRAWL_OBEY_NOFOLLOW", False),
        "CRAWL_CHECK_FRAGMENTS": env.choice("CRAWL_CHECK_FRAGMENTS", "site", ("site", "all", "off")),
        # Rendering pages built by JavaScript (crawler.render, the `render` queue): auto renders a page when
        # cheap signals or its host's samples say it needs a browser, always renders every HTML page, never
        # none. Default auto when a Chromium is installed, never otherwise. The bounds hold per browser.
        "CRAWL_RENDER_CHROMIUM": find_chromium(env.str("CRAWL_RENDER_CHROMIUM", "")),
        "CRAWL_RENDER": env.choice(
            "CRAWL_RENDER", "auto" if find_chromium(env.str("CRAWL_RENDER_CHROMIUM", "")) else "never", MODES
        ),
        "CRAWL_RENDER_PAGE_SECONDS": env.number("CRAWL_RENDER_PAGE_SECONDS", 20.0, minimum=1.0, maximum=600.0),
        "CRAWL_RENDER_PAGES_PER_BROWSER": env.integer(
            "CRAWL_RENDER_PAGES_PER_BROWSER", 100, minimum=1, maximum=100_000
        ),
        "CRAWL_RENDER_BROWSER_MEMORY_MB": env.integer(
            "CRAWL_RENDER_BROWSER_MEMORY_MB", 1024, minimum=64, maximum=65_536
        ),
        "CRAWL_RENDER_BROWSERS": env.integer("CRAWL_RENDER_BROWSERS", 1, minimum=1, maximum=64),
        "CRAWL_RENDER_SETTLE_MS": env.integer("CRAWL_RENDER_SETTLE_MS", 1500, minimum=0, maximum=60_000),
        "CRAWL_RENDER_REQUESTS": env.integer("CRAWL_RENDER_REQUESTS", 200, minimum=1, maximum=10_000),
        "CRAWL_RENDER_ATTEMPTS": env.integer("CRAWL_RENDER_ATTEMPTS", 2, minimum=1, maximum=20),
        "CRAWL_BATCH_SIZE": env.integer("CRAWL_BATCH_SIZE", 25, minimum=1, maximum=10_000),
        "CRAWL_LEASE_SECONDS": env.number("CRAWL_LEASE_SECONDS", 300.0, minimum=5.0, maximum=86400.0),
        "CRAWL_TASK_BUDGET": env.number("CRAWL_TASK_BUDGET", 60.0, minimum=1.0, maximum=86400.0),
        "CRAWL_REDISPATCH_AFTER": env.number("CRAWL_REDISPATCH_AFTER", 120.0, minimum=1.0, maximum=86400.0),
        # Each stored page's parse (HTML, PDF) runs in a child process, killed past this many seconds or this much
        # added memory: no page holds an extract worker longer, whatever it holds (crawlcore.services.extract_parse).
        "CRAWL_PARSE_TIMEOUT": env.number("CRAWL_PARSE_TIMEOUT", 15.0, minimum=0.5, maximum=3600.0),
        "CRAWL_PARSE_MEMORY_MB": env.integer("CRAWL_PARSE_MEMORY_MB", 1024, minimum=64, maximum=65536),
        "CRAWL_ROBOTS_TTL": env.number("CRAWL_ROBOTS_TTL", 86400.0, minimum=0.0, maximum=_YEAR),
        # A server's sitemaps (robots.txt Sitemap: lines, /sitemap.xml) are read again after this long.
        "CRAWL_SITEMAP_TTL": env.number("CRAWL_SITEMAP_TTL", 86400.0, minimum=0.0, maximum=_YEAR),
        "CRAWL_SITEMAPS": env.boolean("CRAWL_SITEMAPS", True),
        # robots.txt Sitemap: lines are followed on the server's own host; true: also on other hosts of its
        # registered domain (sitemaps.example.org for www.example.org).
        "CRAWL_SITEMAP_DOMAIN": env.boolean("CRAWL_SITEMAP_DOMAIN", False),
        # The archive: the bodies of answers that are not pages (4xx, 5xx, redirects, resources, robots.txt
        # and sitemap fetches: crawlcore.models.Exchange) are dropped after this many days, their heads kept;
        # 0 keeps them for ever.
        "ARCHIVE_KEEP_ERROR_BODIES_DAYS": env.number(
            "ARCHIVE_KEEP_ERROR_BODIES_DAYS", 90.0, minimum=0.0, maximum=36600.0
        ),
        # robots.txt unreachable or 5xx: the server counts as not responding for this long (RFC 9309).
        "CRAWL_ROBOTS_RETRY": env.number("CRAWL_ROBOTS_RETRY", 600.0, minimum=0.0, maximum=_YEAR),
        # Host health (crawler.hosthealth): a 429 / 503 without Retry-After backs the server off BASE seconds,
        # doubled on each repeat up to MAX, ±10 %, the repeats forgotten after FORGIVE quiet seconds; a
        # Retry-After is honoured up to RETRY_AFTER_MAX. A server held down (the monitor's confirmed outage,
        # robots.txt unanswered) gets one probe request per such window. The delay between requests is at
        # least PACE_FACTOR × the p95 time to first byte of its last PACE_WINDOW answers (up to CRAWL_MAX_DELAY).
        "CRAWL_BACKOFF_BASE": env.number("CRAWL_BACKOFF_BASE", 60.0, minimum=0.1, maximum=_YEAR),
        "CRAWL_BACKOFF_MAX": env.number("CRAWL_BACKOFF_MAX", 86400.0, minimum=0.1, maximum=_YEAR),
        "CRAWL_BACKOFF_FORGIVE": env.number("CRAWL_BACKOFF_FORGIVE", 1800.0, minimum=0.0, maximum=_YEAR),
        "CRAWL_RETRY_AFTER_MAX": env.number("CRAWL_RETRY_AFTER_MAX", 86400.0, minimum=0.0, maximum=_YEAR),
        "CRAWL_PACE_FACTOR": env.number("CRAWL_PACE_FACTOR", 2.0, minimum=0.0, maximum=100.0),
        "CRAWL_PACE_WINDOW": env.integer("CRAWL_PACE_WINDOW", 50, minimum=5, maximum=10_000),
        "CRAWL_DISPATCH_INTERVAL": env.number("CRAWL_DISPATCH_INTERVAL", 5.0, minimum=0.5, maximum=3600.0),
        "CRAWL_EMBEDDED_THREADS": env.integer("CRAWL_EMBEDDED_THREADS", 4, minimum=1, maximum=64),
        # The scans: a Visited URL is re-checked when its last check is this old (seconds);
        # each sweep sends at most this many URLs to the active / inactive scan workers.
        "CRAWL_REVISIT_AFTER": env.number("CRAWL_REVISIT_AFTER", 3600.0, minimum=0.0, maximum=_YEAR),
        "CRAWL_ACTIVE_SCAN_CAPACITY": env.integer("CRAWL_ACTIVE_SCAN_CAPACITY", 1000, minimum=1, maximum=1_000_000),
        "CRAWL_INACTIVE_SCAN_CAPACITY": env.integer("CRAWL_INACTIVE_SCAN_CAPACITY", 1000, minimum=1, maximum=1_000_000),
        # Scheduling. Server order each hour (seed 000); Hybrid-Sorting pauses an unfinished
        # server at an hour boundary when one of the next CRAWL_PAUSE_LOOKAHEAD hours is CRAWL_PAUSE_MARGIN less
        # loaded (the paper: the hour after the coming one, no margin). Servers are handed out by capacity:
        # CRAWL_LOAD_SLOTS robots (load slots, cluster-wide: the sum of the load workers' concurrency), and at
        # most CRAWL_LOAD_PREFETCH servers queued beyond the free slots.
        "CRAWL_SCHEDULER": env.choice("CRAWL_SCHEDULER", "hybrid", ("random", "sorting", "hybrid")),
        "CRAWL_PAUSE_LOOKAHEAD": env.integer("CRAWL_PAUSE_LOOKAHEAD", 1, minimum=0, maximum=23),
        "CRAWL_PAUSE_MARGIN": env.number("CRAWL_PAUSE_MARGIN", 0.0, minimum=0.0, maximum=1.0),
        "CRAWL_LOAD_SLOTS": env.integer(
            "CRAWL_LOAD_SLOTS",
            env.integer("CRAWL_EMBEDDED_THREADS", 4, minimum=1, maximum=64),
            minimum=1,
            maximum=100_000,
        ),
        "CRAWL_LOAD_PREFETCH": env.integer("CRAWL_LOAD_PREFETCH", 1, minimum=0, maximum=10_000),
        # The active scan's staleness score (seed 004): s in periods of this many seconds (the active
        # sweep's interval), weighted by T - t, the periods left in the recrawl cycle, against the cost: the
        # page's bytes over its server's throughput in this hour (seconds), seen over CRAWL_THROUGHPUT_DAYS.
        # CRAWL_RECRAWL_POLICY: staleness (the paper) or a comparison policy (round-robin, change-frequency,
        # importance). CRAWL_ACTIVE_SCAN_CAPACITY caps m, which is measured.
        "CRAWL_STALENESS_PERIOD": env.number("CRAWL_STALENESS_PERIOD", 60.0, minimum=1.0, maximum=86400.0),
        "CRAWL_RECRAWL_CYCLE": env.number("CRAWL_RECRAWL_CYCLE", 86400.0, minimum=1.0, maximum=_YEAR),
        "CRAWL_THROUGHPUT_DAYS": env.number("CRAWL_THROUGHPUT_DAYS", 7.0, minimum=0.01, maximum=366.0),
        "CRAWL_RECRAWL_POLICY": env.choice(
            "CRAWL_RECRAWL_POLICY",
            "staleness",
            ("staleness", "staleness-plain", "round-robin", "change-frequency", "importance"),
        ),
        # HTTP-status monitoring (monitoring app); checks use the CRAWL_* timeouts and user agent.
        "MONITOR_INTERVAL": env.number("MONITOR_INTERVAL", 300.0, minimum=1.0, maximum=7 * 86400.0),
        "MONITOR_DELAY_THRESHOLD": env.number("MONITOR_DELAY_THRESHOLD", 3.0, minimum=0.0, maximum=600.0),
        "MONITOR_FAIL_AFTER": env.integer("MONITOR_FAIL_AFTER", 2, minimum=1, maximum=100),
        "MONITOR_RECOVER_AFTER": env.integer("MONITOR_RECOVER_AFTER", 1, minimum=1, maximum=100),
        "MONITOR_RAW_RETENTION_DAYS": env.number("MONITOR_RAW_RETENTION_DAYS", 14.0, minimum=1.0, maximum=36600.0),
        "MONITOR_ROLLUP_RETENTION_DAYS": env.number(
            "MONITOR_ROLLUP_RETENTION_DAYS", 366.0, minimum=1.0, maximum=36600.0
        ),
        # Raw status checks of every agent (crawl and monitor) are kept this long; on PostgreSQL the table is
        # partitioned by check time (CHECK_PARTITION_DAYS days a partition) and retention drops whole
        # partitions, the beat job keeping CHECK_PARTITIONS_AHEAD days of partitions ready ahead of time.
        "CHECK_RETENTION_DAYS": env.number(
            "CHECK_RETENTION_DAYS",
            env.number("MONITOR_RAW_RETENTION_DAYS", 14.0, minimum=1.0, maximum=36600.0),
            minimum=1.0,
            maximum=36600.0,
        ),
        "CHECK_PARTITION_DAYS": env.integer("CHECK_PARTITION_DAYS", 1, minimum=1, maximum=366),
        "CHECK_PARTITIONS_AHEAD": env.integer("CHECK_PARTITIONS_AHEAD", 7, minimum=1, maximum=366),
        "MONITOR_PROFILE_DAYS": env.integer("MONITOR_PROFILE_DAYS", 28, minimum=1, maximum=366),
        "MONITOR_BATCH_SIZE": env.integer("MONITOR_BATCH_SIZE", 50, minimum=1, maximum=1000),
        "MONITOR_THREADS": env.integer("MONITOR_THREADS", 16, minimum=1, maximum=256),
        # Seed 002's retry count (crawler.retry.count=3): a check that ends in disconnect or delay is tried
        # again at once, in the same round, up to this many times, before it counts. The round's one record is
        # the last try (its `tries` column says how many). Filters blips of seconds; MONITOR_FAIL_AFTER then
        # asks for that many failed *rounds* in a row before a server is confirmed down (monitoring/confirm.py).
        "MONITOR_RETRIES": env.integer("MONITOR_RETRIES", 3, minimum=0, maximum=10),
        # Evidence of a confirmed outage (monitoring.services.evidence): the first BODY_BYTES of the failing
        # answer are kept, and at most MAX_BYTES in all per incident (heads, body, timings); it is deleted
        # RETENTION_DAYS after it was taken (0 keeps it for ever). REPLAY_URL: a pywb collection's address
        # (http://host:8080/crawl/): the incident page links the replay of both answers there.
        "EVIDENCE_BODY_BYTES": env.integer("EVIDENCE_BODY_BYTES", 65536, minimum=0, maximum=1_048_576),
        "EVIDENCE_MAX_BYTES": env.integer("EVIDENCE_MAX_BYTES", 102_400, minimum=1024, maximum=10_485_760),
        "EVIDENCE_RETENTION_DAYS": env.number("EVIDENCE_RETENTION_DAYS", 90.0, minimum=0.0, maximum=36600.0),
        "ARCHIVE_REPLAY_URL": env.str("ARCHIVE_REPLAY_URL", ""),
        # Heartbeat monitors: the address jobs reach this app at (the ping URL add_monitor prints is
        # <base>/ping/<token>), pings a token may send per minute (more get 429), and the bytes of a
        # ping's body kept (the rest is cut).
        "MONITOR_PING_BASE_URL": env.str("MONITOR_PING_BASE_URL", "http://127.0.0.1:8000").rstrip("/"),
        "MONITOR_PING_RATE": env.integer("MONITOR_PING_RATE", 60, minimum=1, maximum=100_000),
        "MONITOR_PING_BODY_BYTES": env.integer("MONITOR_PING_BODY_BYTES", 10_000, minimum=0, maximum=1_000_000),
        # Domain registration expiry (RDAP over HTTPS): IANA's bootstrap file says which registry serves a TLD,
        # unless one base URL serves every domain; answers are kept this many hours.
        "MONITOR_RDAP_BASE_URL": env.str("MONITOR_RDAP_BASE_URL", ""),
        "MONITOR_RDAP_BOOTSTRAP_URL": env.str("MONITOR_RDAP_BOOTSTRAP_URL", "https://data.iana.org/rdap/dns.json"),
        "MONITOR_RDAP_CACHE_HOURS": env.number("MONITOR_RDAP_CACHE_HOURS", 24.0, minimum=0.0, maximum=24 * 366.0),
        # Ranking (ranking app): BlockRank blocks, damping, L1 residual thresholds, iteration cap.
        "RANK_BLOCK": env.choice("RANK_BLOCK", "site", ("site", "domain", "community")),
        "RANK_DAMPING": env.number("RANK_DAMPING", 0.85, minimum=0.0, maximum=0.99),
        "RANK_TOLERANCE": env.number("RANK_TOLERANCE", 1e-8, minimum=1e-15, maximum=1.0),
        "RANK_LOCAL_TOLERANCE": env.number("RANK_LOCAL_TOLERANCE", 1e-2, minimum=1e-15, maximum=1.0),
        "RANK_MAX_ITERATIONS": env.integer("RANK_MAX_ITERATIONS", 500, minimum=1, maximum=100_000),
        "RANK_TIME_LIMIT": env.integer("RANK_TIME_LIMIT", 3600, minimum=10, maximum=7 * 86400),
        # Search (search app): how much a page's stored BlockRank weighs beside its text relevance
        # (crawler.fulltext.score; 0 orders by text alone).
        "SEARCH_RANK_WEIGHT": env.number("SEARCH_RANK_WEIGHT", 1.0, minimum=0.0, maximum=100.0),
        # Whether the extract agent keeps the full-text index (off: pages extracted meanwhile are not found).
        "SEARCH_INDEX": env.boolean("SEARCH_INDEX", True),
        # Seconds within which a page the extract agent stored is found by search (PostgreSQL: its vector is
        # built in batches by a beat job, crawlcore.services.search_index; SQLite indexes it at once).
        "SEARCH_INDEX_DELAY": env.number("SEARCH_INDEX_DELAY", 20.0, minimum=5.0, maximum=3600.0),
        # Web page analyzer (analyzer app): the national TLD and national IP ranges (seed 001).
        "ANALYZER_NATIONAL_TLD": national_tld(env, "ANALYZER_NATIONAL_TLD", "kr"),
        "ANALYZER_NATIONAL_CIDRS": env.cidrs("ANALYZER_NATIONAL_CIDRS"),
        # Alerts (alerts app): changes within the window go out as one message per channel; a failed
        # delivery is retried after BASE, 2 BASE ... (up to 1 h) until MAX_ATTEMPTS; a claimed batch not
        # recorded within LEASE (a killed sender) is claimed again; SEND_TIMEOUT bounds one delivery in
        # total (connect, send, the whole answer): it runs in a child process killed at that deadline, and
        # SEND_PARALLEL deliveries go at once (one per channel), so one stuck receiver holds no other channel.
        # The lease is never shorter than SEND_TIMEOUT + 5 s: no row is re-sent while its first try may run.
        "ALERTS_GROUP_WINDOW": env.number("ALERTS_GROUP_WINDOW", 60.0, minimum=0.0, maximum=3600.0),
        "ALERTS_MAX_ATTEMPTS": env.integer("ALERTS_MAX_ATTEMPTS", 8, minimum=1, maximum=100),
        "ALERTS_RETRY_BASE": env.number("ALERTS_RETRY_BASE", 30.0, minimum=0.0),
        "ALERTS_LEASE_SECONDS": env.number("ALERTS_LEASE_SECONDS", 120.0, minimum=1.0),
        "ALERTS_SEND_TIMEOUT": env.number("ALERTS_SEND_TIMEOUT", 10.0, minimum=0.1, maximum=300.0),
        "ALERTS_SEND_PARALLEL": env.integer("ALERTS_SEND_PARALLEL", 8, minimum=1, maximum=64),
        # Networks an Apprise destination's host may be in although private (loopback, RFC 1918, link-local
        # ...): refused at save and at every delivery otherwise. E-mail through EMAIL_HOST is not concerned.
        "ALERTS_ALLOW_PRIVATE": env.cidrs("ALERTS_ALLOW_PRIVATE"),
        "ALERTS_REMINDER_HOURS": env.number("ALERTS_REMINDER_HOURS", 0.0, minimum=0.0),
        # The address people reach this app at, for the links in alerts (the incident page); empty: the
        # address of MONITOR_PING_BASE_URL.
        "ALERTS_BASE_URL": env.str("ALERTS_BASE_URL", "").rstrip("/"),
        # Server groups whose alerts do not quote what the server answered (the body excerpt): a comma list.
        "ALERTS_NO_EXCERPT_GROUPS": tuple(
            g.strip() for g in env.str("ALERTS_NO_EXCERPT_GROUPS", "").split(",") if g.strip()
        ),
        # Days left at which a certificate's coming expiry is told, once each.
        "ALERTS_CERT_DAYS": _days_list(env.str("ALERTS_CERT_DAYS", "21,7,1")),
        # Days left at which a monitored domain's coming registration expiry is told, once each.
        "ALERTS_DOMAIN_DAYS": _days_list(env.str("ALERTS_DOMAIN_DAYS", "30,7,1")),
        # SMTP for e-mail alerts; unset EMAIL_HOST: no plain e-mail channels.
        "EMAIL_HOST": env.str("EMAIL_HOST", ""),
        "EMAIL_PORT": env.integer("EMAIL_PORT", 25, minimum=1, maximum=65535),
        "EMAIL_HOST_USER": env.str("EMAIL_HOST_USER", ""),
        "EMAIL_HOST_PASSWORD": env.str("EMAIL_HOST_PASSWORD", ""),
        "EMAIL_USE_TLS": env.boolean("EMAIL_USE_TLS", False),
        "DEFAULT_FROM_EMAIL": env.str("DEFAULT_FROM_EMAIL", "crawladmin@localhost"),
        # The read-only JSON API (crawladmin/api.py) also accepts `Authorization: Bearer <this>`; empty: sessions only.
        "CRAWLADMIN_API_TOKEN": env.str("CRAWLADMIN_API_TOKEN", ""),
        "SECRET_KEY": env.str("DJANGO_SECRET_KEY", ""),
        # How long a login lasts (seconds; default 10 hours, a working day): not Django's two weeks.
        "SESSION_COOKIE_AGE": env.integer("DJANGO_SESSION_SECONDS", 36000, minimum=300, maximum=30 * 86400),
        # Login throttling (django-axes): this many failed logins for one user name from one address lock that
        # pair out for LOGIN_LOCKOUT_MINUTES; a success before then starts the count again.
        "LOGIN_FAILURE_LIMIT": env.integer("LOGIN_FAILURE_LIMIT", 5, minimum=1, maximum=1000),
        "LOGIN_LOCKOUT_MINUTES": env.integer("LOGIN_LOCKOUT_MINUTES", 15, minimum=1, maximum=7 * 1440),
        "DEBUG": env.boolean("DJANGO_DEBUG", False),
        "ALLOWED_HOSTS": [h for h in env.str("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]").split(",") if h],
        # HTTPS hardening (secure cookies, redirect to https, HSTS): on by default outside the embedded mode,
        # which serves the demo over plain http on 127.0.0.1. DJANGO_SECURE=false for a plain-http cluster.
        "SECURE": env.boolean("DJANGO_SECURE", not env.str("DATABASE_URL", "sqlite:").lower().startswith("sqlite")),
        "HSTS_SECONDS": env.integer("DJANGO_HSTS_SECONDS", 31536000, minimum=0, maximum=10 * 31536000),
        # Behind a TLS proxy: the header it sets for https requests, e.g. X-Forwarded-Proto (trust it only
        # when the proxy strips it from clients), and the https origins CSRF accepts for POSTs.
        "SECURE_PROXY_SSL_HEADER": env.str("DJANGO_SECURE_PROXY_SSL_HEADER", ""),
        "CSRF_TRUSTED_ORIGINS": [o for o in env.str("DJANGO_CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()],
        # Where the pages' "?" links find the user guide: this app serves the site `make docs` built at /guide/.
        "GUIDE_URL": env.str("GUIDE_URL", "/guide/").rstrip("/") + "/",
        # Optional single sign-on with OpenID Connect (crawladmin.sso): on when OIDC_RP_CLIENT_ID is set.
        **_oidc(),
    }


_OIDC_ENDPOINTS = (
    "OIDC_OP_AUTHORIZATION_ENDPOINT",
    "OIDC_OP_TOKEN_ENDPOINT",
    "OIDC_OP_USER_ENDPOINT",
    "OIDC_OP_JWKS_ENDPOINT",
)


def _loopback_url(url: str) -> bool:
    """Whether the URL's host is this machine (localhost, 127.0.0.0/8, ::1): a provider stub in tests."""
    import ipaddress
    from urllib.parse import urlsplit

    try:
        host = urlsplit(url).hostname or ""
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _oidc() -> dict:
    client_id = env.str("OIDC_RP_CLIENT_ID", "")
    if not client_id:
        return {"OIDC_ENABLED": False}
    out = {
        "OIDC_ENABLED": True,
        "OIDC_RP_CLIENT_ID": client_id,
        "OIDC_RP_CLIENT_SECRET": env.str("OIDC_RP_CLIENT_SECRET", ""),
        "OIDC_RP_SIGN_ALGO": env.choice("OIDC_RP_SIGN_ALGO", "RS256", ("RS256", "ES256", "HS256")),
        "OIDC_RP_SCOPES": env.str("OIDC_RP_SCOPES", "openid email profile"),
        "OIDC_GROUPS_CLAIM": env.str("OIDC_GROUPS_CLAIM", "groups"),
        "OIDC_VIEWER_GROUPS": [g.strip() for g in env.str("OIDC_VIEWER_GROUPS", "").split(",") if g.strip()],
        "OIDC_OPERATOR_GROUPS": [g.strip() for g in env.str("OIDC_OPERATOR_GROUPS", "").split(",") if g.strip()],
        "OIDC_SERVER_GROUP_PREFIX": env.str("OIDC_SERVER_GROUP_PREFIX", ""),
        # A first login may take over the local account with the same e-mail only when the provider says the
        # address is verified and this says so; otherwise users are found by the provider's subject alone.
        "OIDC_LINK_VERIFIED_EMAIL": env.boolean("OIDC_LINK_VERIFIED_EMAIL", False),
        # Seconds a login is trusted before the provider is asked again (silently): a user removed or moved in
        # the directory loses access or changes groups within this time (mozilla_django_oidc's SessionRefresh).
        "OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS": env.integer(
            "OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS", 900, minimum=60, maximum=86400
        ),
        "OIDC_TIMEOUT": env.number("OIDC_TIMEOUT", 10.0, minimum=0.1, maximum=120.0),
    }
    for name in _OIDC_ENDPOINTS:
        out[name] = env.url(name, "", ("https", "http"))
        if not out[name]:
            raise ConfigError(f"{name} must be set when OIDC_RP_CLIENT_ID is")
        if out[name].lower().startswith("http://") and not _loopback_url(out[name]):
            raise ConfigError(f"{name} must be an https:// URL (plain http only to a provider on this machine)")
    if not out["OIDC_RP_CLIENT_SECRET"]:
        raise ConfigError("OIDC_RP_CLIENT_SECRET must be set when OIDC_RP_CLIENT_ID is")
    return out
