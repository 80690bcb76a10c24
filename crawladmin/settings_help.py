"""What each setting does, in one place: the generated settings reference (`manage.py reference`) reads
it beside the types, defaults and ranges that crawladmin.settings_env declares, and a test fails when a setting
has no entry here. Markdown, a sentence or a few: what it does and when to change it."""

from __future__ import annotations

HELP: dict[str, str] = {
    "CRAWLADMIN_DATA_DIR": ("where the embedded database and key live"),
    "DATABASE_URL": (
        "the PostgreSQL database of the cluster, as a `postgres://` URL with its user, password, host, port "
        "and database"
    ),
    "CELERY_BROKER_URL": ("`redis://host:6379/0` for the cluster"),
    "DB_RANDOM_PAGE_COST": (
        "PostgreSQL's `random_page_cost` for crawladmin's connections (its working set is in memory; the "
        "server's default 4 planned a batch's URL lookup as a table scan); 0 keeps the server's own"
    ),
    "TIME_ZONE": (
        "the operator's zone (an IANA name, e.g. `Europe/Berlin`): every time the pages show is in it, named;"
        " the load profiles' hours of day are its hours"
    ),
    "CRAWLER_NUM": ("this worker's crawler number: it also consumes `load.c<N>`, where servers pinned to N go"),
    "CRAWL_CONNECT_TIMEOUT": ("seconds to connect to a server (seed 001's per-phase timeouts)"),
    "CRAWL_HEADER_TIMEOUT": ("seconds from the request sent to the answer's headers"),
    "CRAWL_DNS_TIMEOUT": (
        "seconds for a name lookup, in the crawler and in the monitor (both look names up on resolver threads"
        " with this deadline: getaddrinfo has none, and libcurl's connect timeout would only cover it as part"
        " of connecting); over it: failure kind `dns`"
    ),
    "CRAWL_BODY_TIMEOUT": ("seconds for the whole body, however slowly it trickles"),
    "CRAWL_FETCH_ENGINE": (
        "the HTTP stack of the load agent and the scans: `engine`, the libcurl multi engine the monitor also "
        "uses (`crawler/engine.py`, one thread per process drives every transfer), or `threads`, the "
        "requests/urllib3 `Fetcher` on each worker thread (`crawler/fetch.py`), kept for comparison and as a "
        "fallback"
    ),
    "CRAWL_MAX_BODY_BYTES": ("bodies are cut there (after decompression) and recorded as `too_large`"),
    "CRAWL_MAX_REDIRECTS": ("length of a redirect chain"),
    "CRAWL_DELAY_THRESHOLD": ("seconds; slower valid responses are *delay*"),
    "CRAWL_DEFAULT_DELAY": ("seconds between request starts to one server; robots.txt Crawl-delay, capped"),
    "CRAWL_MAX_DELAY": ("seconds between request starts to one server; robots.txt Crawl-delay, capped"),
    "CRAWL_SERVER_CONCURRENCY": ("requests in flight per server, cluster-wide"),
    "CRAWL_NR1_BACKOFF": ("seconds before a NoResponse URL is checked again"),
    "CRAWL_NR2_BACKOFF": ("seconds before a NoResponse URL is checked again"),
    "CRAWL_ALLOW_PRIVATE": ("CIDRs exempt from the private-address guard, e.g. `127.0.0.0/8`"),
    "CRAWL_USER_AGENT": ("sent with every request, matched in robots.txt"),
    "CRAWL_MAX_DEPTH": ("links followed from a seed"),
    "CRAWL_SCOPE": ("default scope of seeds; links followed off the seed's domain"),
    "CRAWL_OFFSITE_DEPTH": ("default scope of seeds; links followed off the seed's domain"),
    "CRAWL_MAX_URL_LENGTH": ("longer links are ignored"),
    "CRAWL_MERGE_HOSTS": ("merge host names on one IP serving one home page"),
    "CRAWL_MERGE_BY_ADDRESS": (
        "resolve a new server when it is created; one on a known site's address, scheme and port fetches its "
        "home page alone first and becomes that site's alias when the home page is the same (seed 003); "
        "false: only the home-page check after a normal fetch"
    ),
    "CRAWL_CHECK_RESOURCES": (
        "record the images, stylesheets and scripts of pages and check them (HEAD, GET when HEAD is refused);"
        " never stored or parsed"
    ),
    "CRAWL_OBEY_NOFOLLOW": ("do not follow `rel=nofollow` links (recorded either way, with the reason)"),
    "CRAWL_CHECK_FRAGMENTS": (
        "which `#fragment`s must name an element of their page: `site` (links within one server), `all`, `off`"
    ),
    "CRAWL_BATCH_SIZE": (
        "URLs of one server claimed at a time by a load task (it claims again while its budget allows)"
    ),
    "CRAWL_LEASE_SECONDS": ("how long a claim holds before the reconciler frees it"),
    "CRAWL_TASK_BUDGET": ("seconds a load task works on one server before handing it back"),
    "CRAWL_REDISPATCH_AFTER": ("seconds after which a dispatched but unclaimed server is sent again (lost message)"),
    "CRAWL_ROBOTS_TTL": ("seconds robots.txt is cached"),
    "CRAWL_SITEMAP_TTL": ("seconds before a server's sitemaps are read again"),
    "CRAWL_SITEMAPS": ("read each server's sitemaps (robots.txt `Sitemap:` lines, `/sitemap.xml`) on its load visit"),
    "CRAWL_SITEMAP_DOMAIN": (
        "robots.txt Sitemap: lines are followed on the server's own host; true: also on other hosts of its "
        "registered domain (sitemaps.example.org for www.example.org)."
    ),
    "ARCHIVE_KEEP_ERROR_BODIES_DAYS": (
        "bodies of the answers kept for the archive without a page (redirects, 4xx/5xx pages, resource "
        "checks, robots.txt and sitemap fetches); beat drops older ones daily (`crawladmin: drop old archived"
        " error bodies`), their heads stay; 0 keeps them"
    ),
    "CRAWL_ROBOTS_RETRY": ("seconds a server whose robots.txt did not answer counts as not responding"),
    "CRAWL_DISPATCH_INTERVAL": (
        "seconds between the dispatcher's rounds (beat, or the embedded loop): each round sends the servers "
        "with due work to the load queue"
    ),
    "CRAWL_EMBEDDED_THREADS": ("threads of the embedded worker"),
    "CRAWL_REVISIT_AFTER": (
        "seconds after its last check a Visited URL may be re-checked by the active scan (a floor; the "
        "staleness score decides)"
    ),
    "CRAWL_ACTIVE_SCAN_CAPACITY": (
        "the cap on m, the URLs one active sweep sends (m itself is measured) / URLs one inactive sweep sends"
    ),
    "CRAWL_INACTIVE_SCAN_CAPACITY": (
        "the cap on m, the URLs one active sweep sends (m itself is measured) / URLs one inactive sweep sends"
    ),
    "CRAWL_SCHEDULER": ("server order: `random`, `sorting` or `hybrid`"),
    "CRAWL_PAUSE_LOOKAHEAD": (
        "hours Hybrid-Sorting looks ahead at an hour boundary (1: the paper's rule); 0: never pause"
    ),
    "CRAWL_PAUSE_MARGIN": ("how much less loaded a later hour must be to pause for it (0: the paper's rule)"),
    "CRAWL_LOAD_SLOTS": ("the robots: load slots cluster-wide (sum of the load workers' concurrency)"),
    "CRAWL_LOAD_PREFETCH": ("servers queued in the broker beyond the free load slots"),
    "CRAWL_STALENESS_PERIOD": ("seconds per staleness period (set it to the active sweep's interval)"),
    "CRAWL_RECRAWL_CYCLE": ("seconds of the recrawl cycle, the paper's horizon T periods; T − t is what is left of it"),
    "CRAWL_THROUGHPUT_DAYS": ("days of GETs a server's throughput per hour of day is measured over (the cost's g)"),
    "CRAWL_RECRAWL_POLICY": (
        "`staleness` (s from the changes found), `staleness-plain` (the paper's s), or for comparison `round-"
        "robin`, `change-frequency`, `importance`"
    ),
    "MONITOR_INTERVAL": ("seconds between a monitor's checks (a monitor's own `interval_s` overrides it)"),
    "MONITOR_DELAY_THRESHOLD": (
        "seconds; a monitor's answer slower than this counts as *delay* (a monitor's own `delay_threshold_s` "
        "overrides it)"
    ),
    "MONITOR_FAIL_AFTER": (
        "failed check rounds in a row before a server is confirmed down (a monitor's own `fail_after` overrides it)"
    ),
    "MONITOR_RECOVER_AFTER": ("good check rounds in a row before a confirmed-down server is confirmed up again"),
    "MONITOR_RAW_RETENTION_DAYS": ("the default of `CHECK_RETENTION_DAYS` (kept for existing deployments)"),
    "MONITOR_ROLLUP_RETENTION_DAYS": ("hourly rollups (uptime, load profiles)"),
    "CHECK_RETENTION_DAYS": (
        "raw status checks of every agent (crawl and monitor); beat drops older ones daily (`monitoring: "
        "prune old checks and rollups`)"
    ),
    "CHECK_PARTITION_DAYS": ("PostgreSQL: days of checks per partition of `crawladmin_statuscheck`"),
    "CHECK_PARTITIONS_AHEAD": (
        "PostgreSQL: days of partitions beat keeps made ahead (`crawladmin: status-check partitions ahead`, hourly)"
    ),
    "MONITOR_PROFILE_DAYS": ("how far back the 24-hour load profiles look"),
    "MONITOR_BATCH_SIZE": ("servers one monitor task checks"),
    "MONITOR_THREADS": ("checks in flight at once in one monitor task"),
    "MONITOR_RETRIES": (
        "a check that ends in disconnect or delay is tried again at once, in the same round, up to this many "
        "times before it counts (seed 002's retry count); `MONITOR_FAIL_AFTER` then asks for that many failed"
        " rounds in a row"
    ),
    "MONITOR_PING_BASE_URL": ("the address heartbeat jobs reach this app at: ping URLs are `<this>/ping/<token>`"),
    "MONITOR_PING_RATE": ("pings a minute one heartbeat token may send; more are answered 429"),
    "MONITOR_PING_BODY_BYTES": ("bytes of a heartbeat ping's body kept with the ping (the rest is cut)"),
    "MONITOR_RDAP_BASE_URL": (
        "one RDAP server that answers for every domain (empty: IANA's bootstrap file says which registry "
        "serves each top-level domain)"
    ),
    "MONITOR_RDAP_BOOTSTRAP_URL": (
        "IANA's RDAP bootstrap file, which says which registry answers for a top-level domain"
    ),
    "MONITOR_RDAP_CACHE_HOURS": ("hours a registry's RDAP answer about a domain is kept before it is asked again"),
    "RANK_BLOCK": ("what a BlockRank block is: a `site`, a registered `domain`, or a link `community`"),
    "RANK_DAMPING": ("PageRank's damping factor"),
    "RANK_TOLERANCE": ("the L1 residual at which the global PageRank iteration stops"),
    "RANK_LOCAL_TOLERANCE": ("the L1 residual at which each block's local PageRank stops (BlockRank)"),
    "RANK_MAX_ITERATIONS": ("the iteration cap of every PageRank run"),
    "RANK_TIME_LIMIT": ("seconds one `rank` run may take before it stops with what it has"),
    "SEARCH_RANK_WEIGHT": (
        "how much a page's stored BlockRank weighs beside its text relevance in search (0 orders by text alone)"
    ),
    "SEARCH_INDEX": (
        "whether the extract agent keeps the full-text index (off: pages extracted meanwhile are not found by search)"
    ),
    "SEARCH_INDEX_DELAY": (
        "seconds within which a page the extract agent stored is found by search (PostgreSQL builds the index in "
        "batches, a beat job every 2 s; SQLite at once)"
    ),
    "ANALYZER_NATIONAL_TLD": ("the national top-level domain the analyzer counts pages under (seed 001 counted `.kr`)"),
    "ANALYZER_NATIONAL_CIDRS": ("the national IP ranges the analyzer counts servers in, as CIDRs"),
    "ALERTS_GROUP_WINDOW": ("seconds an event waits for others to share its message"),
    "ALERTS_MAX_ATTEMPTS": ("delivery attempts before a notification is `failed`"),
    "ALERTS_RETRY_BASE": ("seconds before the first retry; doubles each time, capped at an hour"),
    "ALERTS_LEASE_SECONDS": (
        "a claimed batch not recorded by then (a killed sender) is claimed again; at least `ALERTS_SEND_TIMEOUT` + 5"
    ),
    "ALERTS_SEND_TIMEOUT": ("seconds for one delivery in all (connect, send, the whole answer)"),
    "ALERTS_SEND_PARALLEL": ("messages delivered at once, one child process each; more wait for the next run"),
    "ALERTS_ALLOW_PRIVATE": ("CIDRs an Apprise destination may reach although private, e.g. `10.0.0.0/8`"),
    "ALERTS_REMINDER_HOURS": ("while a server stays down, its down event is sent again this often"),
    "ALERTS_CERT_DAYS": ("days left at which a certificate's coming expiry is told"),
    "ALERTS_DOMAIN_DAYS": ("Days left at which a monitored domain's coming registration expiry is told, once each."),
    "EMAIL_HOST": ("SMTP for e-mail alerts; unset EMAIL_HOST: no plain e-mail channels."),
    "EMAIL_PORT": ("the SMTP server's port for e-mail alerts"),
    "EMAIL_HOST_USER": ("the SMTP user name for e-mail alerts (empty: no login)"),
    "EMAIL_HOST_PASSWORD": ("the SMTP password for e-mail alerts; never logged"),
    "EMAIL_USE_TLS": ("STARTTLS to the SMTP server"),
    "DEFAULT_FROM_EMAIL": ("the sender address of e-mail alerts and reports"),
    "CRAWLADMIN_API_TOKEN": ("bearer token for `/api/` and `/metrics` (a logged-in session works too)"),
    "DJANGO_SECRET_KEY": ("required with PostgreSQL: 50 characters at least (random; one line and exit otherwise)"),
    "DJANGO_SESSION_SECONDS": ("how long a login lasts"),
    "LOGIN_FAILURE_LIMIT": (
        "failed logins for one user name from one address before that pair is locked out (429), and for how long"
    ),
    "LOGIN_LOCKOUT_MINUTES": (
        "failed logins for one user name from one address before that pair is locked out (429), and for how long"
    ),
    "DJANGO_DEBUG": ("Django's debug pages; never on a server others can reach"),
    "DJANGO_ALLOWED_HOSTS": ("comma list of the host names the web app answers to"),
    "DJANGO_SECURE": (
        "HTTPS hardening: secure cookies, HSTS, redirect to https (not for `/healthz`, `/api/`, `/metrics`, "
        "`/static/`); set `false` to serve a cluster over plain http (e.g. through an SSH tunnel)"
    ),
    "DJANGO_HSTS_SECONDS": ("the Strict-Transport-Security max-age sent when `DJANGO_SECURE` is on"),
    "DJANGO_SECURE_PROXY_SSL_HEADER": (
        "behind a TLS proxy: its https header (e.g. `X-Forwarded-Proto`) and the https origins allowed to POST"
    ),
    "DJANGO_CSRF_TRUSTED_ORIGINS": (
        "behind a TLS proxy: its https header (e.g. `X-Forwarded-Proto`) and the https origins allowed to POST"
    ),
    "GUIDE_URL": (
        'where the pages\' "?" links find the user guide: the default `/guide/` is the site `make docs` built, '
        "served by this app; a URL of a copy hosted elsewhere works too"
    ),
    "OIDC_RP_CLIENT_ID": (
        "single sign-on with OpenID Connect: this application's client id at the provider; set, it turns "
        "single sign-on on"
    ),
    "OIDC_RP_CLIENT_SECRET": ("single sign-on: the client secret (required with a client id); never logged"),
    "OIDC_RP_SIGN_ALGO": ("single sign-on: the algorithm the provider signs ID tokens with"),
    "OIDC_RP_SCOPES": ("single sign-on: the scopes asked for"),
    "OIDC_GROUPS_CLAIM": ("single sign-on: the claim that lists a user's directory groups"),
    "OIDC_VIEWER_GROUPS": ("single sign-on: comma list of directory groups whose members become viewers"),
    "OIDC_OPERATOR_GROUPS": ("single sign-on: comma list of directory groups whose members become operators"),
    "OIDC_SERVER_GROUP_PREFIX": (
        "single sign-on: directory groups named with this prefix plus a server group limit their members to "
        "that server group (empty: none)"
    ),
    "OIDC_LINK_VERIFIED_EMAIL": (
        "single sign-on: a first login may take over the local account with the same e-mail only when the "
        "provider says the address is verified and this is true; otherwise users are found by the provider's "
        "subject alone"
    ),
    "OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS": (
        "single sign-on: seconds a login is trusted before the provider is asked again, so a user removed "
        "from the directory loses access within this time"
    ),
    "OIDC_TIMEOUT": ("single sign-on: seconds for each request to the provider"),
    "OIDC_OP_AUTHORIZATION_ENDPOINT": (
        "single sign-on: the provider's authorization endpoint (https; plain http only on this machine)"
    ),
    "OIDC_OP_TOKEN_ENDPOINT": ("single sign-on: the provider's token endpoint"),
    "OIDC_OP_USER_ENDPOINT": ("single sign-on: the provider's user-info endpoint"),
    "OIDC_OP_JWKS_ENDPOINT": ("single sign-on: the provider's signing keys (JWKS) endpoint"),
    "JOBS_STALL_MINUTES": (
        "minutes without a page done after which a running job (not paused, inside its window) tells "
        "`job.stalled`, once a run"
    ),
    "CRAWL_PARSE_TIMEOUT": (
        "seconds one stored page's parse (HTML or PDF, in a child process) may take; past it the child is "
        "killed and the page is classified `parse:time`"
    ),
    "CRAWL_PARSE_MEMORY_MB": ("memory one page's parse may add; past it the page is classified `parse:memory`"),
    "CRAWL_BACKOFF_BASE": (
        "a 429 or 503 without Retry-After: seconds of the first back-off (doubled per repeat, ±10 %); a held "
        "server's probe window too"
    ),
    "CRAWL_BACKOFF_MAX": ("the longest back-off after repeated 429 / 503 answers without Retry-After"),
    "CRAWL_BACKOFF_FORGIVE": (
        "seconds without a 429 / 503 after which the back-off starts again from `CRAWL_BACKOFF_BASE`"
    ),
    "CRAWL_RETRY_AFTER_MAX": ("the longest Retry-After honoured, in seconds"),
    "CRAWL_PACE_FACTOR": (
        "a server's delay is at least this factor × the p95 time to first byte of its last `CRAWL_PACE_WINDOW` "
        "answers (up to `CRAWL_MAX_DELAY`; a pace under 50 ms is none); 0 turns the pacing off"
    ),
    "CRAWL_PACE_WINDOW": (
        "how many of a server's last answers its pace (p95 response time, timeouts and 5xx) is read over"
    ),
    "EVIDENCE_BODY_BYTES": ("bytes of a failing answer's body the monitor keeps as an incident's evidence"),
    "EVIDENCE_MAX_BYTES": ("bytes of evidence kept per incident at most (heads, body, timings)"),
    "EVIDENCE_RETENTION_DAYS": ("days an incident's evidence and its archive exchanges are kept; 0 keeps them"),
    "ARCHIVE_REPLAY_URL": (
        "a pywb collection's address (`http://host:8080/crawl/`): the incident page links the replay of the "
        "failing answer and the last good capture there"
    ),
    "ALERTS_BASE_URL": (
        "the address people reach this app at, for the links in alerts (the incident page); empty: that of "
        "`MONITOR_PING_BASE_URL`"
    ),
    "ALERTS_NO_EXCERPT_GROUPS": (
        "server groups whose alerts do not quote what the server answered (the body excerpt): a comma list"
    ),
    "CRAWL_RENDER_CHROMIUM": ("the Chromium the render agent drives (empty: the system's `chromium`, if installed)"),
    "CRAWL_RENDER": (
        "render pages built by JavaScript in headless Chromium (queue `render`): `auto` when cheap signals or"
        " the host's samples say a page needs it, `always`, `never`; a job's `render` key overrides it. "
        "Default `auto` when Chromium is found, `never` otherwise (`manage.py demo` says which)"
    ),
    "CRAWL_RENDER_PAGE_SECONDS": (
        "seconds one page's render may take; past it the browser is replaced and the page keeps what its raw body gave"
    ),
    "CRAWL_RENDER_PAGES_PER_BROWSER": ("pages a browser renders before it is restarted"),
    "CRAWL_RENDER_BROWSER_MEMORY_MB": ("memory a browser may use before it is restarted"),
    "CRAWL_RENDER_BROWSERS": ("browsers per render worker process"),
    "CRAWL_RENDER_SETTLE_MS": (
        "milliseconds a rendered page is given, after it loads, for its scripts to write the page"
    ),
    "CRAWL_RENDER_REQUESTS": ("requests one page's render may make (sub-resources, XHR) before the rest are refused"),
    "CRAWL_RENDER_ATTEMPTS": ("renders of a page tried before it is given up with the reason"),
}
