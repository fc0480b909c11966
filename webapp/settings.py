"""Django settings for Folio, read from the environment (see README "Configuration").

Defaults are the embedded ones: SQLite under ``var/``, files under ``var/media``, a Redis
broker on localhost (``make run`` starts an embedded one and points FOLIO_BROKER_URL at it).
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Any

import dj_database_url

from model.config import (
    ConfigError,
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_int_list,
    env_list,
    env_str,
)
from model.engines import auto as auto_defaults
from model.quality import review as review_defaults
from webapp.public_url import public_url
from webapp.secret_key import secret_key
from webapp.storage_config import default_storage_config, storage_kind

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("FOLIO_VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("FOLIO_DEBUG", False)
# The embedded mode (`make run`): no DATABASE_URL, everything under var/ on one machine.
EMBEDDED = not env_str("DATABASE_URL")
# A deployment's own key, or it does not start; the embedded mode's is made once per install.
SECRET_KEY = secret_key(var_dir=VAR_DIR, embedded=EMBEDDED)
ALLOWED_HOSTS = env_list("FOLIO_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("FOLIO_CSRF_TRUSTED_ORIGINS", [])

# How many proxies of this deployment stand in front of the web process, each appending to
# X-Forwarded-For (webapp/core/clients.py). 0, the default: the header is ignored and the
# connecting address is the client; a wrong count lets clients pick their own address.
FOLIO_TRUSTED_PROXIES = env_int("FOLIO_TRUSTED_PROXIES", 0, minimum=0)
# Behind TLS (FOLIO_HTTPS=1, docs/SECURITY.md): cookies only over HTTPS, HSTS, plain HTTP
# redirected (probes and scrapers excepted: they come from inside, over plain HTTP). A proxy
# that terminates TLS says so in X-Forwarded-Proto, believed only from trusted proxies.
FOLIO_HTTPS = env_bool("FOLIO_HTTPS", False)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = FOLIO_HTTPS
SECURE_SSL_REDIRECT = FOLIO_HTTPS and env_bool("FOLIO_HTTPS_REDIRECT", True)
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz(/web)?$", r"^metrics$"]
SECURE_HSTS_SECONDS = env_int(
    "FOLIO_HSTS_SECONDS", 365 * 24 * 3600 if FOLIO_HTTPS else 0, minimum=0
)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("FOLIO_HSTS_SUBDOMAINS", True)
# Preloading is a commitment only the domain's owner can make (security.W021 says so).
SECURE_HSTS_PRELOAD = env_bool("FOLIO_HSTS_PRELOAD", False)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if FOLIO_TRUSTED_PROXIES else None
SILENCED_SYSTEM_CHECKS = ["security.W021"]
if not SECURE_HSTS_INCLUDE_SUBDOMAINS:
    SILENCED_SYSTEM_CHECKS.append("security.W005")  # the operator's own choice
if not FOLIO_HTTPS:
    # Served over plain HTTP by the operator's choice (the loopback default, or a private
    # network): Django's HTTPS-only advice does not apply, and folio.W010 warns when the
    # public URL says https while FOLIO_HTTPS is off.
    SILENCED_SYSTEM_CHECKS += ["security.W004", "security.W008", "security.W012", "security.W016"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files, served locally: nothing from a CDN
    "django_prometheus",
    "webapp.core",
    "webapp.accounts",
    "webapp.jobs",
    "webapp.webhooks",
    "webapp.results",
    "webapp.reader",
    "webapp.ui",
]

MIDDLEWARE = [
    # First: an oversized body is refused before anything reads it.
    "webapp.core.upload_limits.RequestSizeLimitMiddleware",
    "django_prometheus.middleware.PrometheusBeforeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "webapp.ui.middleware.ContentSecurityPolicyMiddleware",
    "webapp.core.surfaces.SurfacesMiddleware",
    "django_prometheus.middleware.PrometheusAfterMiddleware",
]

ROOT_URLCONF = "webapp.urls"
WSGI_APPLICATION = "webapp.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "webapp.accounts.context_processors.signup",
            ],
        },
    },
]

# --- database -------------------------------------------------------------------------------
DATABASE_URL = env_str("DATABASE_URL")
if not DATABASE_URL:
    VAR_DIR.mkdir(parents=True, exist_ok=True)
DATABASES = {
    "default": dj_database_url.parse(
        DATABASE_URL or f"sqlite:///{VAR_DIR / 'folio.sqlite3'}",
        conn_max_age=env_int("FOLIO_DB_CONN_MAX_AGE", 60, minimum=0),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The web process and the workers write at once: wait for the lock instead of failing,
    # take it at BEGIN (no upgrade deadlocks), and let readers run beside a writer (WAL).
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    # Tests share their database with worker processes, so it must be a file, not :memory:.
    DATABASES["default"]["TEST"] = {"NAME": f"{DATABASES['default']['NAME']}-test"}
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- files ----------------------------------------------------------------------------------
MEDIA_ROOT = Path(env_str("FOLIO_MEDIA_ROOT", str(VAR_DIR / "media")))
if EMBEDDED:
    # `make run`: uploads and results readable by this user only (Django's default is 0644).
    FILE_UPLOAD_PERMISSIONS = 0o600
    FILE_UPLOAD_DIRECTORY_PERMISSIONS = 0o700
STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
# FOLIO_STORAGE: "filesystem" (MEDIA_ROOT, one host) or "s3" (a bucket every host shares);
# webapp/storage_config.py checks the chosen storage's settings here, at start.
FOLIO_STORAGE = storage_kind()
STORAGES: dict[str, dict[str, Any]] = {
    "default": default_storage_config(media_root=MEDIA_ROOT),
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

# Uploads above this size are refused before anything is stored.
FOLIO_MAX_UPLOAD_BYTES = env_int("FOLIO_MAX_UPLOAD_BYTES", 100 * 1024 * 1024, minimum=1)
FOLIO_MAX_PAGES = env_int("FOLIO_MAX_PAGES", 2000, minimum=1)
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
# A file part is stopped as soon as it passes FOLIO_MAX_UPLOAD_BYTES (webapp/core/upload_limits.py).
FILE_UPLOAD_HANDLERS = [
    "webapp.core.upload_limits.CappedUploadHandler",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]

# Fetching documents from URLs (Reader API, chat image_url) and delivering webhooks.
# Host names and CIDR networks that may be reached although they are private.
FOLIO_SSRF_ALLOW = env_list("FOLIO_SSRF_ALLOW", [])
FOLIO_FETCH_TIMEOUT = env_int("FOLIO_FETCH_TIMEOUT", 30, minimum=1)
FOLIO_FETCH_MAX_REDIRECTS = env_int("FOLIO_FETCH_MAX_REDIRECTS", 5, minimum=0)

# --- Reader API and OpenAI-compatible endpoint ---------------------------------------------
# Seconds a Reader request waits for its job when it sends no X-Timeout (at most 180).
FOLIO_READER_TIMEOUT = env_int("FOLIO_READER_TIMEOUT", 120, minimum=1)
# Requests of one web process that may wait on their job at once (X-Timeout, event streams,
# chat); beyond them a request answers at once with its poll link (webapp/jobs/waiting.py).
# Half the threads by default, so the other half always answer everyone else.
FOLIO_READER_WAITERS = env_int(
    "FOLIO_READER_WAITERS", max(1, env_int("FOLIO_WEB_THREADS", 4, minimum=1) // 2), minimum=1
)
# Anonymous Reader use: allowed by default, with quotas of its own per client (an IPv4
# address or an IPv6 /64); only accepted requests count (webapp/accounts/services.py).
FOLIO_READER_REQUIRE_KEY = env_bool("FOLIO_READER_REQUIRE_KEY", False)
FOLIO_READER_ANON_REQUESTS_PER_MINUTE = env_int(
    "FOLIO_READER_ANON_REQUESTS_PER_MINUTE", 20, minimum=0
)
FOLIO_READER_ANON_PAGES_PER_DAY = env_int("FOLIO_READER_ANON_PAGES_PER_DAY", 200, minimum=0)
if env_str("FOLIO_READER_ANON_RATE"):
    raise ConfigError(
        "FOLIO_READER_ANON_RATE is no longer read: set FOLIO_READER_ANON_REQUESTS_PER_MINUTE "
        "(and FOLIO_READER_ANON_PAGES_PER_DAY), counted per anonymous client"
    )
# How long the poll link of an anonymous Reader request's 202 works (a signed capability URL).
FOLIO_READER_POLL_SECONDS = env_int("FOLIO_READER_POLL_SECONDS", 24 * 3600, minimum=1)
# The model behind the `openai` engine (same variable as the engine reads).
FOLIO_OPENAI_MODEL = env_str("FOLIO_OPENAI_MODEL", "jinaai/jina-ocr-v1")

# The result cache answers a job from the owner's own earlier readings only; on, from any
# user's (an instant answer then tells a user that someone else read the same file).
FOLIO_RESULT_CACHE_SHARED = env_bool("FOLIO_RESULT_CACHE_SHARED", False)

# --- queue ----------------------------------------------------------------------------------
FOLIO_BROKER_URL = env_str("FOLIO_BROKER_URL") or env_str("REDIS_URL") or "redis://127.0.0.1:6379/0"
FOLIO_DEFAULT_ENGINE = env_str("FOLIO_DEFAULT_ENGINE", "local")
# A job for an engine that no live worker serves is refused at submission (every API); the
# test suite turns it off by default because most tests submit with no worker running.
FOLIO_REFUSE_UNSERVED_ENGINES = env_bool("FOLIO_REFUSE_UNSERVED_ENGINES", True)
# Each worker writes a heartbeat (its queues and capacity) this often; a worker counts as
# serving until its last heartbeat is older than FOLIO_WORKER_SEEN_SECONDS, so a worker starved
# of CPU for a while, or restarted, refuses nothing (webapp/core/workers.py).
FOLIO_WORKER_HEARTBEAT_SECONDS = env_float("FOLIO_WORKER_HEARTBEAT_SECONDS", 5.0, minimum=0.1)
FOLIO_WORKER_SEEN_SECONDS = env_int("FOLIO_WORKER_SEEN_SECONDS", 60, minimum=1)
# Seconds a job may wait with queued pages while no live worker serves its engine (the workers
# left after it was queued); then its waiting pages fail with that reason.
FOLIO_ENGINE_WAIT_LIMIT = env_int("FOLIO_ENGINE_WAIT_LIMIT", 900, minimum=1)
# Output options a request may leave out (docs/QUALITY.md says why these defaults): tables
# "auto" (pipe tables, HTML where cells merge) | "markdown" | "html"; running heads and feet
# "keep" | "drop"; text normalisation "all", "none" or any of "ligatures,hyphenation,whitespace".
# Checked at start-up (folio.E010).
FOLIO_TABLE_FORMAT = env_str("FOLIO_TABLE_FORMAT", "auto")
FOLIO_HEADERS = env_str("FOLIO_HEADERS", "drop")
FOLIO_NORMALIZE = env_str("FOLIO_NORMALIZE", "none")
# A page needs review when its review score (0-1, model.quality.review) reaches this; a request
# may set its own (`review_threshold`). docs/QUALITY.md gives recall and false flags per value.
# The default (model.quality.review.DEFAULT_THRESHOLD) was chosen leaving each document out.
FOLIO_REVIEW_THRESHOLD = env_float(
    "FOLIO_REVIEW_THRESHOLD", review_defaults.DEFAULT_THRESHOLD, minimum=0.0
)
# An `auto` job's page goes to a VLM engine when its local reading's review score reaches this
# (model.engines.auto, whose DEFAULT_THRESHOLD says how it was chosen): lower sends more pages
# to the GPU. docs/QUALITY.md gives the share of pages sent against the failing pages sent.
FOLIO_AUTO_THRESHOLD = env_float(
    "FOLIO_AUTO_THRESHOLD", auto_defaults.DEFAULT_THRESHOLD, minimum=0.01
)
# Counters shared by every web process (rate limits) live in the broker's Redis.
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": (
            "unix://" + FOLIO_BROKER_URL.removeprefix("redis+socket://")
            if FOLIO_BROKER_URL.startswith("redis+socket://")
            else FOLIO_BROKER_URL
        ),
        "KEY_PREFIX": "folio",
    }
}
# Seconds one page may take before the worker gives up on it (soft) and kills it (hard).
FOLIO_PAGE_SOFT_TIME_LIMIT = env_int("FOLIO_PAGE_SOFT_TIME_LIMIT", 300, minimum=1)
FOLIO_PAGE_TIME_LIMIT = env_int("FOLIO_PAGE_TIME_LIMIT", FOLIO_PAGE_SOFT_TIME_LIMIT + 30, minimum=1)
# A page whose worker died this many times is failed instead of handed to yet another worker.
# Seconds a worker may spend drawing one page (in a child process it kills past this); a page
# that takes longer fails at once, unretried (model/page_images.py). The soft limit, if
# shorter, also kills the child: the worker waits for it in Python, where the signal lands.
FOLIO_PAGE_RENDER_TIMEOUT = env_int("FOLIO_PAGE_RENDER_TIMEOUT", 60, minimum=1)
# Seconds a worker may spend building a job's searchable PDF (in a child process it kills past
# this; the build is then refused for those pages, model/layout/searchable_pdf.py), and how
# long a request for it waits for the build before answering 202 with Retry-After.
FOLIO_SEARCHABLE_PDF_TIMEOUT = env_int("FOLIO_SEARCHABLE_PDF_TIMEOUT", 300, minimum=1)
FOLIO_SEARCHABLE_PDF_WAIT = env_float("FOLIO_SEARCHABLE_PDF_WAIT", 10.0, minimum=0.0)
FOLIO_PAGE_MAX_ATTEMPTS = env_int("FOLIO_PAGE_MAX_ATTEMPTS", 3, minimum=1)
# An unacknowledged message is handed out again after this long: longer than the longest page.
FOLIO_BROKER_VISIBILITY_TIMEOUT = env_int(
    "FOLIO_BROKER_VISIBILITY_TIMEOUT", FOLIO_PAGE_TIME_LIMIT + 300, minimum=1
)
# How often beat's reaper looks for pages no worker will finish, and how long a worker node
# that holds pages must miss its pings before they go to other workers (webapp/jobs/liveness.py).
FOLIO_REAP_SECONDS = env_int("FOLIO_REAP_SECONDS", 60, minimum=1)
FOLIO_WORKER_LOST_SECONDS = env_int("FOLIO_WORKER_LOST_SECONDS", 60, minimum=0)
# A prefork worker process is replaced after this many pages (0: never); the new process loads
# its engine again. Measured with bench/memory.py: without it the local engine's processes
# grow by about 50 MiB per 100 scanned pages (memory never returned; its source not yet traced).
FOLIO_WORKER_MAX_TASKS_PER_CHILD = env_int("FOLIO_WORKER_MAX_TASKS_PER_CHILD", 200, minimum=0)

# --- API ------------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "webapp.accounts.authentication.ApiKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "webapp.core.errors.api_exception_handler",
    # DRF's parsers, JSON's bounded in depth (a deeply nested body is a 400, not a 500).
    "DEFAULT_PARSER_CLASSES": [
        "webapp.core.parsers.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "UNAUTHENTICATED_USER": None,
    # Leaves out the browsable API where FOLIO_BROWSABLE_API is off.
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "webapp.core.surfaces.ContentNegotiation",
    # DRF's own client address (any throttle): believe X-Forwarded-For as far as configured.
    "NUM_PROXIES": FOLIO_TRUSTED_PROXIES,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Folio API",
    "DESCRIPTION": "Document OCR: PDFs and page images in, Markdown out.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "webapp.core.schema.document_errors",
    ],
    "ENUM_NAME_OVERRIDES": {
        "JobStatusEnum": "webapp.jobs.models.Job.Status",
        "PageStatusEnum": "webapp.jobs.models.Page.Status",
        "DeliveryStatusEnum": "webapp.webhooks.models.WebhookDelivery.Status",
    },
}

# --- what the public port shows besides the API (webapp/core/surfaces.py, docs/SECURITY.md)
# /metrics: to a bearer token (FOLIO_METRICS_TOKEN, or _FILE) and to the addresses in
# FOLIO_METRICS_ALLOW (CIDR; by default this machine and private networks without a token,
# none with one).
FOLIO_METRICS_TOKEN = env_str("FOLIO_METRICS_TOKEN").strip()
FOLIO_METRICS_ALLOW = env_list(
    "FOLIO_METRICS_ALLOW",
    []
    if FOLIO_METRICS_TOKEN
    else ["127.0.0.0/8", "::1/128", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7"],
)
for _network in FOLIO_METRICS_ALLOW:
    try:
        ipaddress.ip_network(_network, strict=False)
    except ValueError as _exc:
        raise ConfigError(f"FOLIO_METRICS_ALLOW: {_network!r} is not a network ({_exc})") from None
FOLIO_API_DOCS = env_bool("FOLIO_API_DOCS", True)  # /api/docs/, /api/schema/, /v1/openapi.json
FOLIO_BROWSABLE_API = env_bool("FOLIO_BROWSABLE_API", True)  # DRF's HTML pages of the API
FOLIO_ADMIN = env_bool("FOLIO_ADMIN", True)  # /admin/

# --- accounts, quotas, job lifecycle, webhooks -----------------------------------------------
# Sign-up at /account/signup/ (docs/SECURITY.md): "invite" (the default: only with a link
# from `manage.py invite USERNAME`, valid FOLIO_INVITE_DAYS), "open" (anyone, each account
# with fresh quotas) or "closed" (an admin makes the accounts).
FOLIO_SIGNUP = env_choice("FOLIO_SIGNUP", "invite", ("invite", "open", "closed"))
if env_str("FOLIO_SIGNUP_ENABLED"):
    raise ConfigError(
        "FOLIO_SIGNUP_ENABLED is no longer read: set FOLIO_SIGNUP (invite, open, closed)"
    )
FOLIO_INVITE_DAYS = env_int("FOLIO_INVITE_DAYS", 7, minimum=1)
# Failed log-ins: after this many for one account, or from one address (an IPv4 address or
# an IPv6 /64), every log-in there is refused until FOLIO_LOGIN_LOCKOUT_SECONDS have passed
# since the first of them (webapp/accounts/login_throttle.py).
FOLIO_LOGIN_FAILURES = env_int("FOLIO_LOGIN_FAILURES", 5, minimum=1)
FOLIO_LOGIN_FAILURES_PER_ADDRESS = env_int("FOLIO_LOGIN_FAILURES_PER_ADDRESS", 20, minimum=1)
FOLIO_LOGIN_LOCKOUT_SECONDS = env_int("FOLIO_LOGIN_LOCKOUT_SECONDS", 15 * 60, minimum=1)
AUTHENTICATION_BACKENDS = ["webapp.accounts.login_throttle.ThrottledModelBackend"]
LOGIN_URL = "login"
# The browser interface's home: upload and recent jobs.
LOGIN_REDIRECT_URL = "ui-upload"
LOGOUT_REDIRECT_URL = "login"
# Defaults for every user (0: no limit); a user's own limits are set in the admin.
FOLIO_PAGES_PER_DAY = env_int("FOLIO_PAGES_PER_DAY", 10_000, minimum=0)
FOLIO_REQUESTS_PER_MINUTE = env_int("FOLIO_REQUESTS_PER_MINUTE", 120, minimum=0)
# Files and results of a finished job are deleted this long after it finished (0: kept).
FOLIO_RETENTION_HOURS = env_int("FOLIO_RETENTION_HOURS", 7 * 24, minimum=0)
FOLIO_RETENTION_SWEEP_SECONDS = env_int("FOLIO_RETENTION_SWEEP_SECONDS", 3600, minimum=1)
# Links in webhook bodies and invitations are absolute: the address clients reach this service
# at (under `make run`, the port it serves on: webapp/public_url.py).
FOLIO_PUBLIC_URL, FOLIO_PUBLIC_URL_ORIGIN = public_url(var_dir=VAR_DIR, embedded=EMBEDDED)
# Seconds to wait before each retry of a failed delivery; after the last one it is dead.
FOLIO_WEBHOOK_RETRY_SCHEDULE = env_int_list(
    "FOLIO_WEBHOOK_RETRY_SCHEDULE", [5, 300, 1800, 7200, 18000, 36000], minimum=0
)
FOLIO_WEBHOOK_TIMEOUT = env_int("FOLIO_WEBHOOK_TIMEOUT", 10, minimum=1)
# How often beat re-sends deliveries that are due (a lost message or a long back-off).
FOLIO_WEBHOOK_SWEEP_SECONDS = env_int("FOLIO_WEBHOOK_SWEEP_SECONDS", 30, minimum=1)
# After a secret rotation the old secret keeps signing (beside the new one) this long.
FOLIO_WEBHOOK_ROTATION_HOURS = env_int("FOLIO_WEBHOOK_ROTATION_HOURS", 24, minimum=0)
# Redeliveries a user may ask for (DRF rate: N/second|minute|hour|day), each a request sent.
FOLIO_WEBHOOK_REDELIVER_RATE = env_str("FOLIO_WEBHOOK_REDELIVER_RATE", "10/min").strip()
if not re.fullmatch(
    r"[1-9][0-9]*/(s|sec|second|m|min|minute|h|hour|d|day)", FOLIO_WEBHOOK_REDELIVER_RATE
):
    raise ConfigError(
        f"FOLIO_WEBHOOK_REDELIVER_RATE={FOLIO_WEBHOOK_REDELIVER_RATE!r} is not N/second, "
        "N/minute, N/hour or N/day"
    )

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# FOLIO_LOG_FORMAT=json writes one JSON object a line, with job_id and page_id while a page
# is being worked on; the default is plain text for people.
LOG_FORMAT = env_str("FOLIO_LOG_FORMAT", "text")
if LOG_FORMAT not in ("text", "json"):
    raise ConfigError(f"FOLIO_LOG_FORMAT={LOG_FORMAT!r} must be text or json")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"context": {"()": "webapp.core.logcontext.ContextFilter"}},
    "formatters": {
        "text": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        },
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "json" if LOG_FORMAT == "json" else "text",
            "filters": ["context"],
        }
    },
    "root": {"handlers": ["console"], "level": env_str("FOLIO_LOG_LEVEL", "INFO")},
}
