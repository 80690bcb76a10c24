"""The one settings module, driven by the environment.

With no environment at all it runs the embedded default: SQLite in WAL mode and Celery on an
in-process `memory://` broker. `DATABASE_URL` and `CELERY_BROKER_URL` switch to PostgreSQL and Redis.
A bad value stops the start with a message naming the variable. The variables themselves, their types,
defaults and ranges, are crawladmin.settings_env's table; this module makes Django's settings of them.
"""

from __future__ import annotations

import os
import secrets
import sys
import tempfile
from datetime import timedelta
from pathlib import Path

import dj_database_url

from crawladmin.settings_env import BASE_DIR, _load, env
from crawlcore import queues
from crawler.config import ConfigError

try:
    _cfg = _load()
except ConfigError as exc:
    # A message naming the variable and nothing else: a traceback through Django's settings import says
    # nothing more to an operator, and hides the one line that matters.
    sys.exit(f"bad setting: {exc}")

DATA_DIR: Path = _cfg["DATA_DIR"]
DATABASE_URL: str = _cfg["DATABASE_URL"]
EMBEDDED = DATABASE_URL.startswith("sqlite")
CELERY_BROKER_URL: str = _cfg["CELERY_BROKER_URL"]
CELERY_EMBEDDED = CELERY_BROKER_URL.startswith("memory")

# Every CRAWL_*, MONITOR_* and CHECK_* value (and CRAWLER_NUM, and the others of these prefixes) becomes a
# setting of the same name.
globals().update(
    {
        name: value
        for name, value in _cfg.items()
        if name.startswith(
            ("CRAWL", "MONITOR_", "CHECK_", "RANK_", "ANALYZER_", "ALERTS_", "EMAIL_", "SEARCH_", "JOBS_")
            + ("ARCHIVE_", "EVIDENCE_", "PROFILE_")
        )
    }
)


def _private_file_create(path: Path, content: bytes) -> None:
    """Create `path` readable by its owner only from the first byte on (a chmod after writing leaves a
    window in which anyone may read it), holding `content` whole: it is written under a temporary name
    (mkstemp creates with mode 0600) and linked into place, so two processes starting at once neither
    read a half-written file nor overwrite each other's (the second link fails; its file is dropped)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(content)
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
    finally:
        os.unlink(tmp)


# A secret key from the environment in production; in the embedded mode one is generated once and
# kept in the data directory, so sessions survive restarts and no key is ever committed.
DEFAULT_FROM_EMAIL = _cfg["DEFAULT_FROM_EMAIL"]
EMAIL_TIMEOUT = int(_cfg["ALERTS_SEND_TIMEOUT"]) or 1

SECRET_KEY = _cfg["SECRET_KEY"]
MIN_SECRET_KEY = 50  # Django's own deployment check asks as much (security.W009)
if not EMBEDDED and (len(SECRET_KEY) < MIN_SECRET_KEY or len(set(SECRET_KEY)) < 5):
    # Sessions, password-reset links and CSRF tokens are signed with it: a short key can be guessed offline.
    sys.exit(
        f"bad setting: DJANGO_SECRET_KEY must be set, at least {MIN_SECRET_KEY} characters of random text, "
        "when DATABASE_URL is not SQLite"
    )
if not SECRET_KEY:
    DATA_DIR.mkdir(mode=0o700, parents=True, exist_ok=True)
    _key_file = DATA_DIR / "secret_key"
    if not _key_file.exists():
        _private_file_create(_key_file, secrets.token_urlsafe(50).encode())
    SECRET_KEY = _key_file.read_text().strip()

DEBUG = _cfg["DEBUG"]
ALLOWED_HOSTS = _cfg["ALLOWED_HOSTS"]

# --- HTTPS (`manage.py check --deploy` is clean with these on) ----------------------------------
SECURE = _cfg["SECURE"]
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = SECURE
SECURE_SSL_REDIRECT = SECURE
# Machine endpoints are not redirected: a script or health probe speaking plain http has already sent its
# token by the time a redirect could answer, so a redirect protects nothing and only breaks the probe.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^api/", r"^metrics$", r"^static/"]
SECURE_HSTS_SECONDS = _cfg["HSTS_SECONDS"] if SECURE else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE_HSTS_PRELOAD = SECURE
SECURE_CONTENT_TYPE_NOSNIFF = True
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_AGE = _cfg["SESSION_COOKIE_AGE"]
X_FRAME_OPTIONS = "DENY"
if _cfg["SECURE_PROXY_SSL_HEADER"]:
    SECURE_PROXY_SSL_HEADER = ("HTTP_" + _cfg["SECURE_PROXY_SSL_HEADER"].upper().replace("-", "_"), "https")
CSRF_TRUSTED_ORIGINS = [o.strip() for o in _cfg["CSRF_TRUSTED_ORIGINS"]]

# Login throttling: axes' backend comes first and refuses a locked-out user name and address before any
# password is checked (its middleware, last below, answers 429). Attempts are rows in the database, so the
# count holds across web processes and machines.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = _cfg["LOGIN_FAILURE_LIMIT"]
AXES_COOLOFF_TIME = timedelta(minutes=_cfg["LOGIN_LOCKOUT_MINUTES"])
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]  # one user's lockout does not lock out everyone
AXES_RESET_ON_SUCCESS = True
AXES_DISABLE_ACCESS_LOG = True  # failed attempts are kept; successful logins are not logged again here

GUIDE_URL: str = _cfg["GUIDE_URL"]
# The user guide's site, as `make docs` builds it (mkdocs.yml's site_dir), served at /guide/ (crawladmin.guide).
GUIDE_SITE_DIR = BASE_DIR / "var" / "site"
OIDC_ENABLED = _cfg["OIDC_ENABLED"]
if OIDC_ENABLED:
    globals().update({name: value for name, value in _cfg.items() if name.startswith("OIDC_")})
    AUTHENTICATION_BACKENDS = [
        "axes.backends.AxesStandaloneBackend",
        "crawladmin.sso.DirectoryGroupsOIDCBackend",
        "django.contrib.auth.backends.ModelBackend",  # local accounts (the admin's) keep working
    ]
    LOGIN_REDIRECT_URL = "/dashboard/"
    LOGOUT_REDIRECT_URL = "/dashboard/login/"
    OIDC_CREATE_USER = True

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_celery_beat",
    "axes",
    "rest_framework",  # the REST API /api/v1/ (crawladmin.api_v1)
    "drf_spectacular",  # its OpenAPI schema, /api/v1/schema (crawladmin.api_schema)
    "drf_spectacular_sidecar",  # Swagger UI's files for /api/v1/docs, served from here (no CDN)
    "crawlcore",
    "monitoring",
    "ranking",
    "analyzer",
    "alerts",
    "reports",
    "archive",
    "search",
    "dashboard",
    "crawladmin",  # the shell, last: its commands tie the apps above together
]
if OIDC_ENABLED:
    INSTALLED_APPS.append("mozilla_django_oidc")

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "crawladmin.middleware.StaticFilesMiddleware",  # WhiteNoise (collectstatic at image build; finders elsewhere)
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "crawladmin.middleware.JunkParametersMiddleware",
    "crawladmin.middleware.AdminLookupRangeMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]
if OIDC_ENABLED:
    # A single sign-on session asks the provider again (prompt=none) once its ID token is older than
    # OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS; local logins are left alone.
    MIDDLEWARE.append("mozilla_django_oidc.middleware.SessionRefresh")
MIDDLEWARE.append("axes.middleware.AxesMiddleware")  # last, as axes asks

ROOT_URLCONF = "crawladmin.urls"

# The REST API /api/v1/ (crawladmin.api_v1): per-user bearer tokens or a session, JSON errors.
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "crawladmin.api_auth.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["crawladmin.api_auth.ReadOrOperate"],
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "EXCEPTION_HANDLER": "crawladmin.api_auth.errors",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
# The API's schema (/api/v1/schema) and its pages (/api/v1/docs), for readers of the API only.
SPECTACULAR_SETTINGS = {
    "TITLE": "crawladmin API",
    "DESCRIPTION": "Servers, monitors of every kind, channels, maintenance, mutes, status pages, incidents, jobs "
    "and reports. Authorization: Bearer <token> (manage.py api_token USER). Lists page with ?limit= (at most "
    "1000) and ?offset=. Errors answer {error, detail, fields}.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["crawladmin.api_auth.ReadOrOperate"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "crawladmin.api_schema.error_answers",
    ],
}
WSGI_APPLICATION = "crawladmin.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],  # the project-wide layout, login and shared partials; app pages stay in apps
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "dashboard.context.time_zone",
                "dashboard.context.guide",
            ],
        },
    },
]


def _databases() -> dict:
    db = dj_database_url.parse(DATABASE_URL, conn_max_age=0 if EMBEDDED else 60, conn_health_checks=not EMBEDDED)
    if db["ENGINE"].endswith("postgresql"):
        # The crawl's prepared statements (crawlcore.db.prepared) are planned for their values each time: a
        # generic plan made while a fast-growing table was small (a sequential scan) would be kept as the
        # table grows. What they save is the parse and analysis of big statements, not the planning.
        options = db.setdefault("OPTIONS", {})
        options["options"] = f"{options.get('options', '')} -c plan_cache_mode=force_custom_plan".strip()
        if _cfg["DB_RANDOM_PAGE_COST"]:
            options["options"] += f" -c random_page_cost={_cfg['DB_RANDOM_PAGE_COST']:g}"
    if EMBEDDED:
        name = Path(db["NAME"])
        name.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if str(name) not in ("", ":memory:") and not name.exists():
            # Created here, empty and owner-only, before SQLite opens it: SQLite would create it with the
            # umask's mode (world-readable), and it gives the -wal and -shm files the database's mode.
            _private_file_create(name, b"")
        db["OPTIONS"] = {
            # Worker threads write concurrently: WAL lets readers go on during a write, the busy
            # timeout makes writers wait instead of failing, and IMMEDIATE takes the write lock at
            # BEGIN so two transactions cannot both read, then deadlock upgrading to write.
            "timeout": 30,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=30000;",
        }
    return {"default": db}


DATABASES = _databases()
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# The status checks' covering index (INCLUDE columns) is a PostgreSQL feature; on SQLite Django builds it
# without them and says so at every `migrate`. Nothing to act on in the embedded mode: not a warning there.
SILENCED_SYSTEM_CHECKS = ["models.W040"] if EMBEDDED else []

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
FORMAT_MODULE_PATH = ["crawladmin.formats"]  # the admin writes times as the dashboard does (crawladmin/formats/en)
TIME_ZONE: str = _cfg["TIME_ZONE"]
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
# Compressed but not hashed: unlike the manifest storage it never fails to render a page when
# collectstatic has not run (the embedded mode, tests).
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
# WhiteNoise serves the apps' static files straight from their directories too, so the dashboard's
# charts load where collectstatic never ran: `manage.py demo`, runserver in the embedded mode, a fresh
# checkout (DEBUG is off by default, so Django's own static serving is off). The image collects them.
WHITENOISE_USE_FINDERS = True
LOGIN_URL = "admin:login"

# --- Celery ----------------------------------------------------------------------------------
CELERY_TASK_IGNORE_RESULT = True  # state lives in the database, not in a result backend
CELERY_RESULT_BACKEND = None
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = TIME_ZONE
CELERY_ENABLE_UTC = True
# --- Reliability (the README's Operations section explains each value) ---
# At-least-once delivery; the database makes effects exactly-once (guarded claims, unique rows). A message
# is acknowledged when its task ends, so a task whose worker dies comes back: at once when only a pool
# process died (reject on worker lost), after the visibility timeout when the whole worker died. Both
# redeliver a poison message that kills its worker every time, so crawladmin.celery caps deliveries.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
# A worker holds no more messages than it runs: a killed worker strands nothing else, and a waiting
# message goes to whichever worker is free.
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# A task never outlives its lease: it stops claiming at CRAWL_TASK_BUDGET, its last request ends by the
# fetcher's own deadlines (connect + headers + body), and the hard limit ends it well before the lease
# (CRAWL_LEASE_SECONDS, 300 s) expires and the reconciler hands its work to someone else.
_REQUEST_DEADLINE = _cfg["CRAWL_CONNECT_TIMEOUT"] + _cfg["CRAWL_HEADER_TIMEOUT"] + _cfg["CRAWL_BODY_TIMEOUT"]
CELERY_TASK_SOFT_TIME_LIMIT = int(_cfg["CRAWL_TASK_BUDGET"] + _REQUEST_DEADLINE + 30)
CELERY_TASK_TIME_LIMIT = CELERY_TASK_SOFT_TIME_LIMIT + 30
CELERY_BROKER_TRANSPORT_OPTIONS = {
    # Redis hands an unacknowledged message to another worker after this long. Longer than any agent's
    # task may run (the hard limit), or a slow task would run twice; far shorter than Redis' default hour.
    # Nothing waits for it anyway: the database's leases and the reconciler recover the work itself.
    "visibility_timeout": CELERY_TASK_TIME_LIMIT + 60,
    # How often each worker looks for such messages (kombu's default is about every 100 s).
    "unacked_restore_interval": 10,
    "unacked_restore_throttle": 1,
    # A broker that vanishes without closing the connection (a machine gone, a NAT timeout) is noticed.
    "socket_connect_timeout": 5,
    "socket_timeout": 30,
    "socket_keepalive": True,
    "health_check_interval": 10,
}
if CELERY_BROKER_URL.startswith("redis://"):
    # kombu's Redis transport with acknowledgements that survive a broker restart (see crawladmin.celery).
    # Not for rediss://, whose TLS defaults kombu derives from the scheme's name.
    CELERY_BROKER_TRANSPORT = "crawladmin.celery:RedisTransport"
if CELERY_EMBEDDED:
    # The in-memory transport polls its queues; its default of 1 s idles the embedded worker between tasks.
    CELERY_BROKER_TRANSPORT_OPTIONS = {"polling_interval": 0.01}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None  # a worker or beat waits for the broker however long it is away
# Publishing (after commit, from tasks and beat) rides out a broker restart of ~20 s before it gives up;
# a message lost then is re-sent from the database (dispatcher, reconciler, sweeps).
CELERY_TASK_PUBLISH_RETRY = True
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 12, "interval_start": 0, "interval_step": 0.5, "interval_max": 2}
# On a lost broker connection running tasks finish (they cannot be cancelled in a thread pool anyway):
# their ack may fail and the message come back, which then finds its work done.
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
# Workers keep their database connections across tasks, as the web app keeps them across requests
# (CONN_MAX_AGE with health checks; crawladmin.celery closes a broken or expired one around each task).
# Celery's Django fixup would otherwise close every connection before and after each task: a new
# PostgreSQL backend per task, 9,000-13,000 of them in one benchmark crawl, whose start-up cost the
# database more CPU than the tasks' own queries. The fixup still recycles them every
# CELERY_DB_REUSE_MAX tasks of a worker process.
CELERY_DB_REUSE_MAX = 1000
CELERY_TASK_DEFAULT_QUEUE = queues.DEFAULT_QUEUE.value
CELERY_TASK_ROUTES = queues.celery_task_routes()
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {
        "crawladmin": {"handlers": ["console"], "level": env.str("CRAWLADMIN_LOG_LEVEL", "WARNING")},
        "tasks": {"handlers": ["console"], "level": env.str("CRAWLADMIN_LOG_LEVEL", "WARNING")},
    },
}
