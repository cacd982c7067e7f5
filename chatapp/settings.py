"""Django settings, all taken from the environment (see README's table and ``chatapp/env.py``).

With nothing configured, clearloop runs in demo mode: SQLite (WAL) in ``data/``, a Redis that the
app starts itself, the built-in demo model. ``DEBUG`` defaults to on only in that demo mode.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

from chatapp.env import env_bool, env_float, env_int, env_list, env_origins, env_str, env_url
from chatapp.env_providers import anthropic_provider, openai_provider
from chatapp.sso_settings import oidc_apps, role_map

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(env_str("CLEARLOOP_DATA_DIR", str(BASE_DIR / "data")) or "data").resolve()

DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY: required when DEBUG is off")
    SECRET_KEY = "clearloop-insecure-demo-key-only-for-debug-mode-0123456789abcdef"  # noqa: S105
elif not DEBUG and (
    len(SECRET_KEY) < 50 or len(set(SECRET_KEY)) < 5 or SECRET_KEY.startswith("django-insecure-")
):
    # It signs sessions and derives the key that encrypts stored provider keys (review L12). The
    # thresholds are Django's own (check security.W009), made an error instead of a warning.
    raise ImproperlyConfigured(
        "SECRET_KEY: too weak for production (DEBUG off): use at least 50 characters with at least 5 "
        "different ones, not starting with 'django-insecure-'. Generate one with: python -c "
        "'import secrets; print(secrets.token_urlsafe(50))'"
    )

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_origins("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "channels",
    "django_htmx",
    "chatapp.axes_app.AxesConfig",  # django-axes, named in the admin's language
    # Only for its static files: the browsable API page is served from here, not from a CDN.
    "ninja",
    # Single sign-on with OpenID Connect (docs/sso.md): only the social login flow is used.
    "allauth",
    "allauth.account",
    "allauth.socialaccount",
    "allauth.socialaccount.providers.openid_connect",
    "chatapp",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # The versioned JavaScript catalogue, like a static file: before sessions and locale (js_catalog.py).
    "chatapp.js_catalog.CatalogMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # The UI language from the language cookie or Accept-Language (after sessions, before common).
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # A signed-in person's own language choice wins over the browser's (chatapp/services/languages.py).
    "chatapp.middleware.UserLanguageMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into its lockout response.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "chatapp.urls"
ASGI_APPLICATION = "chatapp.asgi.application"

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
                "django.template.context_processors.csp",
                "chatapp.context_processors.roles",
            ],
        },
    }
]

# --- database -------------------------------------------------------------------------------
DATABASE_URL = env_url("DATABASE_URL", None, schemes=("postgres", "postgresql", "sqlite"))
# On PostgreSQL every process draws its connections from a bounded psycopg pool (Django >= 5.1).
# Under ASGI every request runs in a thread of its own: without a pool, 100 simultaneous sends opened
# 100 connections and PostgreSQL (max_connections 100) refused the rest with OperationalError. With
# the pool a burst waits up to DB_POOL_TIMEOUT s for a free connection instead. Per process and per
# alias at most DB_POOL_MAX_SIZE connections (see docs/performance.md for the sizing rule).
DB_POOL_MAX_SIZE = env_int("DB_POOL_MAX_SIZE", 16, minimum=0)
if DATABASE_URL:
    _pooled = DB_POOL_MAX_SIZE > 0 and DATABASE_URL.startswith("postgres")
    DATABASES = {
        "default": dj_database_url.parse(
            DATABASE_URL,
            # A pool and persistent connections exclude each other in Django; without a pool the
            # worker, whose few DB threads live for the whole process, may keep its connections.
            conn_max_age=0 if _pooled else env_int("DB_CONN_MAX_AGE", 0, minimum=0),
            # With a pool this makes psycopg check a connection before handing it out.
            conn_health_checks=True,
        )
    }
    if DATABASE_URL.startswith("postgres") and env_bool("DB_PREPARED_STATEMENTS", True):
        # The worker's and the send's hot statements bind their parameters server-side
        # (chatapp/bound_cursor.py): prepared on a connection's first use, PostgreSQL parses and
        # plans each once per connection instead of at every step (docs/performance.md, session 18).
        # The ORM's own statements bind client-side and are never prepared. Turn off behind a pooler
        # that cannot keep prepared statements (PgBouncer in transaction mode before 1.21, or without
        # max_prepared_statements).
        DATABASES["default"].setdefault("OPTIONS", {})["prepare_threshold"] = 0
    if _pooled:
        DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
            "min_size": min(DB_POOL_MAX_SIZE, env_int("DB_POOL_MIN_SIZE", 2, minimum=0)),
            "max_size": DB_POOL_MAX_SIZE,
            "timeout": env_float("DB_POOL_TIMEOUT", 30.0, minimum=0.1),
        }
else:
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(DATA_DIR / "clearloop.sqlite3"),
            # WAL lets the web process read while the worker writes; IMMEDIATE avoids lock upgrades.
            "OPTIONS": {
                "init_command": (
                    "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=10000;"
                ),
                "transaction_mode": "IMMEDIATE",
                "timeout": 20,
            },
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USES_POSTGRES = DATABASES["default"]["ENGINE"].endswith("postgresql")
# Streamed delta frames are written through their own connections that do not wait for fsync: one
# round trip per frame instead of four, and a PostgreSQL crash can lose at most the last few frames
# (the durable events a run is rebuilt from still go through "default").
DELTA_DB = "default"
if USES_POSTGRES:
    _fast: dict[str, Any] = {**DATABASES["default"], "TEST": {"MIRROR": "default"}}
    _fast["OPTIONS"] = {**_fast.get("OPTIONS", {}), "options": "-c synchronous_commit=off"}
    DATABASES["deltas"] = _fast  # type: ignore[assignment]  # a plain dict, as Django reads it
    DELTA_DB = "deltas"

# --- redis, channels, celery -----------------------------------------------------------------
EMBEDDED_REDIS_PORT = env_int("CLEARLOOP_EMBEDDED_REDIS_PORT", 6399, minimum=1)
REDIS_URL = env_url("REDIS_URL", None, schemes=("redis", "rediss", "unix"))
EMBEDDED_REDIS = REDIS_URL is None
if EMBEDDED_REDIS:
    REDIS_URL = f"redis://127.0.0.1:{EMBEDDED_REDIS_PORT}/0"

CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        # No socket timeout: an idle consumer's blocking read must not time out and drop the socket.
        "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": None}], "capacity": 1500, "expiry": 30},
    }
}

CELERY_BROKER_URL = REDIS_URL
# Results are only used by the short MCP look-ups of the chat page; runs report through the database.
CELERY_RESULT_BACKEND = REDIS_URL
CELERY_RESULT_EXPIRES = 300
# One result backend per process, not one per thread: every send runs in a new ASGI thread, and
# building a backend there (it reads package metadata from disk) was part of every send's cost.
CELERY_RESULT_BACKEND_THREAD_SAFE = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Longer than any run segment we expect, so Redis does not redeliver a task that is still running;
# short enough that a task lost with a dead worker comes back within the hour.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600, minimum=1)
}
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_TASK_ALWAYS_EAGER = False
# A separate queue name lets several deployments (or test sessions) share one Redis.
CELERY_TASK_DEFAULT_QUEUE = env_str("CLEARLOOP_QUEUE", "clearloop")

# --- clearloop ----------------------------------------------------------------------------------
PORT = env_int("PORT", 8000, minimum=1)
DEMO_MODE = env_bool("CLEARLOOP_DEMO", DEBUG)
DEMO_MODEL_URL = env_url("DEMO_MODEL_URL", f"http://127.0.0.1:{PORT}/demo-llm/v1", schemes=("http", "https"))
DEMO_MODEL_TOKENS_PER_SECOND = env_float("DEMO_MODEL_TOKENS_PER_SECOND", 40.0, minimum=0)
DEMO_MCP_PORT = env_int("CLEARLOOP_DEMO_MCP_PORT", 8765, minimum=1)
MAX_MESSAGE_BYTES = env_int("CLEARLOOP_MAX_MESSAGE_BYTES", 100_000, minimum=1)
# The rendered markdown each web process keeps (chatapp/rendered.py): about this many MB of HTML.
# How many exchanges a conversation page opens with; the earlier ones come as the person scrolls up (0: all).
PAGE_EXCHANGES = env_int("CLEARLOOP_PAGE_EXCHANGES", 30, minimum=0)
MARKDOWN_CACHE_BYTES = env_int("CLEARLOOP_MARKDOWN_CACHE_MB", 32, minimum=0) * 1024 * 1024
RUN_MAX_DELIVERIES = env_int("CLEARLOOP_RUN_MAX_DELIVERIES", 3, minimum=1)
RUN_SWEEP_SECONDS = env_int("CLEARLOOP_RUN_SWEEP_SECONDS", 2, minimum=1)
RUN_QUEUED_GRACE_SECONDS = env_int("CLEARLOOP_RUN_QUEUED_GRACE_SECONDS", 20, minimum=1)
WORKER_HEARTBEAT_SECONDS = env_float("CLEARLOOP_WORKER_HEARTBEAT_SECONDS", 1.0, minimum=0.1)
WORKER_DEAD_SECONDS = env_float("CLEARLOOP_WORKER_DEAD_SECONDS", 6.0, minimum=1)
RUN_LEASE_SECONDS = env_int("CLEARLOOP_RUN_LEASE_SECONDS", 120, minimum=2)
# A tool call that reports progress may run this long in all (each report allows another idle period).
TOOL_MAX_SECONDS = env_int("CLEARLOOP_TOOL_MAX_SECONDS", 600, minimum=1)
# How long a tool call waits for the user to open or decline a link its MCP server sent.
TOOL_LINK_WAIT_SECONDS = env_int("CLEARLOOP_TOOL_LINK_WAIT_SECONDS", 300, minimum=1)
MAX_RUNS_IN_FLIGHT_PER_USER = env_int("CLEARLOOP_MAX_RUNS_IN_FLIGHT_PER_USER", 4, minimum=1)
MAX_SENDS_PER_MINUTE_PER_USER = env_int("CLEARLOOP_MAX_SENDS_PER_MINUTE_PER_USER", 20, minimum=1)
MAX_WEBSOCKETS_PER_USER = env_int("CLEARLOOP_MAX_WEBSOCKETS_PER_USER", 20, minimum=1)
# Approvers' pages hear of queue changes over /ws/approvals/; only while that socket is down do they
# poll the count, this often (docs/interface.md).
APPROVALS_POLL_SECONDS = env_int("CLEARLOOP_APPROVALS_POLL_SECONDS", 60, minimum=5)
# Failed API key checks one client address may make per minute before it gets 429 (docs/api.md).
API_KEY_FAILURES_PER_MINUTE = env_int("CLEARLOOP_API_KEY_FAILURES_PER_MINUTE", 20, minimum=1)
# How long a non-streaming OpenAI-compatible request waits for its run before answering 504.
API_COMPLETION_WAIT_SECONDS = env_int("CLEARLOOP_API_COMPLETION_WAIT_SECONDS", 600, minimum=1)
# Below daphne's 1 MiB websocket message limit; see chatapp/frame_limits.py.
FRAME_MAX_BYTES = env_int("CLEARLOOP_FRAME_MAX_BYTES", 256 * 1024, minimum=16 * 1024)
# A string at least this long in a run's stored rows (events, rounds, tool calls, messages) is stored once, by
# its sha256, and referenced from the rows (chatapp/blobs.py).
LARGE_VALUE_MIN_CHARS = env_int("CLEARLOOP_LARGE_VALUE_MIN_CHARS", 8192, minimum=256)
# How many runs one worker process carries at once: an admission limit (chatapp/worker/carrier.py),
# not a thread count. The runs share the process's one asyncio loop; the Celery task only admits a
# run and returns. Set from the measured capacity: docs/performance.md.
WORKER_RUNS = env_int("CLEARLOOP_WORKER_RUNS", 200, minimum=1)
# Celery threads per worker: they take leases and answer the chat page's MCP look-ups, no run holds
# one. While the worker is full, up to this many run messages wait in it for a slot.
WORKER_THREADS = env_int("CLEARLOOP_WORKER_THREADS", 8, minimum=2)
# How many run ends one worker stores at once (the rest wait their turn on its loop). An end is a
# transaction plus its audit record, ~5 ms of the GIL; when hundreds of runs end together, eight DB
# threads doing that starved the loop relaying every other run's tokens (docs/performance.md,
# session 17). Nothing waits on an end but the run's own "succeeded" frame.
WORKER_END_SLOTS = env_int("CLEARLOOP_WORKER_END_SLOTS", 2, minimum=1)
# While the worker's asyncio loop runs this many ms late, runs start one at a time instead of side by
# side, so a burst of starts does not hold back the streams already running (chatapp/worker/
# start_pacer.py). 1 ms: in effect "whenever runs are streaming"; 200 runs sent at once, token lag p99
# 77-104 ms at 1, 96-212 at 3, 145-258 at 10 and 30 (docs/performance.md, session 17). 0: never paced.
WORKER_PACE_LAG_MS = env_float("CLEARLOOP_WORKER_PACE_LAG_MS", 1.0, minimum=0)
# On a warm shutdown, how long the carried runs get to end before they are handed back unfinished.
WORKER_DRAIN_SECONDS = env_float("CLEARLOOP_WORKER_DRAIN_SECONDS", 10.0, minimum=0)
# The GIL's switch interval in daphne and the worker, in ms (CPython's default: 5): their asyncio loop
# gets the GIL back sooner from threads doing ORM work (chatapp/gil.py, docs/performance.md).
GIL_SWITCH_MS = env_float("CLEARLOOP_GIL_SWITCH_MS", 0.5, minimum=0.05)
# Freeze the objects daphne and the worker made while starting, so the garbage collector's full passes
# skip them (chatapp/gc_freeze.py: a 150-178 ms pause each, 18-21 ms frozen).
GC_FREEZE = env_bool("CLEARLOOP_GC_FREEZE", True)
# A websocket whose client has this much unread data waiting is dropped (it back-fills on reconnect).
WS_SEND_BUFFER_BYTES = env_int("CLEARLOOP_WS_SEND_BUFFER_BYTES", 4 * 2**20, minimum=65536)
# 50 ms: a frame costs about the same whatever its size; 50 ms keeps a token's wait within target 4's
# 100 ms p99 (docs/performance.md, 2026-12-01)
STREAM_COALESCE_MS = env_int("CLEARLOOP_STREAM_COALESCE_MS", 50, minimum=0)
WORKSPACE_ROOT = Path(env_str("CLEARLOOP_WORKSPACE_ROOT", str(DATA_DIR / "workspaces")) or "").resolve()
# Uploads into a conversation's workspace (issue 11): per file, per conversation, which kinds.
UPLOAD_MAX_BYTES = env_int("CLEARLOOP_UPLOAD_MAX_BYTES", 25 * 1024 * 1024, minimum=1)
WORKSPACE_MAX_BYTES = env_int("CLEARLOOP_WORKSPACE_MAX_BYTES", 200 * 1024 * 1024, minimum=1)
UPLOAD_ALLOWED_TYPES = [
    t.lower().lstrip(".")
    for t in env_list(
        "CLEARLOOP_UPLOAD_TYPES",
        "txt,md,csv,tsv,json,jsonl,yaml,yml,xml,html,log,py,js,ts,sql,ini,toml,pdf,docx,xlsx,pptx,"
        "png,jpg,jpeg,gif,webp".split(","),
    )
]
# Django keeps small uploads in memory and streams larger ones to a temporary file.
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
# How long "Undo" brings a deleted conversation back (it stays stored for auditors either way).
UNDO_DELETE_SECONDS = env_int("CLEARLOOP_UNDO_DELETE_SECONDS", 600, minimum=1)
# Share links open for signed-in users only, unless the admin allows links anyone may open.
PUBLIC_SHARE_LINKS = env_bool("CLEARLOOP_PUBLIC_SHARE_LINKS", False)
FIELD_ENCRYPTION_KEY = env_str("CLEARLOOP_ENCRYPTION_KEY")
# A provider's key variable must match this (issue 16, M8): no other setting can be read through it.
PROVIDER_KEY_ENV_PATTERN = env_str(
    "CLEARLOOP_PROVIDER_KEY_ENV_PATTERN", r"CLEARLOOP_KEY_[A-Z0-9_]+|[A-Z][A-Z0-9_]*_API_KEY"
)

OPENAI_BASE_URL = env_url("OPENAI_BASE_URL", "https://api.openai.com/v1", schemes=("http", "https"))
OPENAI_API_KEY = env_str("OPENAI_API_KEY")
OPENAI_MODEL = env_str("OPENAI_MODEL")
OPENAI_API = env_str("OPENAI_API", "chat")
if OPENAI_API not in ("chat", "responses"):
    raise ImproperlyConfigured(f"OPENAI_API: expected 'chat' or 'responses', got {OPENAI_API!r}")
ANTHROPIC_BASE_URL = env_url("ANTHROPIC_BASE_URL", "https://api.anthropic.com", schemes=("http", "https"))
ANTHROPIC_API_KEY = env_str("ANTHROPIC_API_KEY")
ANTHROPIC_MODEL = env_str("ANTHROPIC_MODEL")
# Which provider "Default" means when no admin has flagged one (an explicit choice, by name:
# an environment provider never becomes the default just by being configured).
DEFAULT_PROVIDER = env_str("CLEARLOOP_DEFAULT_PROVIDER")
# Knobs of the environment providers (README, "Provider knobs"); checked here, written by
# services.providers.ensure_env_providers.
OPENAI_PROVIDER = (
    openai_provider(OPENAI_BASE_URL or "", OPENAI_API, OPENAI_MODEL or "") if OPENAI_MODEL else None
)
ANTHROPIC_PROVIDER = anthropic_provider(ANTHROPIC_MODEL) if ANTHROPIC_MODEL else None
# The currency the price tables are entered in (a label: prices are never converted).
COST_CURRENCY = env_str("CLEARLOOP_COST_CURRENCY", "USD")

# --- auth, static, security ------------------------------------------------------------------
# Login throttling (review M5): django-axes counts failed logins per username and client address and
# locks that pair out for AXES_COOLOFF_MINUTES after AXES_FAILURE_LIMIT failures (HTTP 429).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_ENABLED = env_bool("AXES_ENABLED", True)
AXES_FAILURE_LIMIT = env_int("AXES_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_float("AXES_COOLOFF_MINUTES", 15.0, minimum=0.01))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_HTTP_RESPONSE_CODE = 429
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
# Behind a proxy the client address comes from X-Forwarded-For (see USE_X_FORWARDED_PROTO).
AXES_IPWARE_PROXY_COUNT = env_int("AXES_PROXY_COUNT", 0, minimum=0) or None
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "chat"
LOGOUT_REDIRECT_URL = "login"

# Single sign-on (docs/sso.md): django-allauth's OpenID Connect provider, several at once, PKCE on.
PASSWORD_LOGIN = env_bool("CLEARLOOP_PASSWORD_LOGIN", True)
OIDC_GROUPS_CLAIM = env_str("CLEARLOOP_OIDC_GROUPS_CLAIM", "groups") or ""
OIDC_ROLE_MAP = role_map()
SOCIALACCOUNT_PROVIDERS = {
    "openid_connect": {"OAUTH_PKCE_ENABLED": True, "APPS": oidc_apps(OIDC_GROUPS_CLAIM)}
}
SOCIALACCOUNT_ADAPTER = "chatapp.sso.SsoAdapter"
SOCIALACCOUNT_AUTO_SIGNUP = True
SOCIALACCOUNT_LOGIN_ON_GET = False  # the button POSTs (a GET could be forged by any page)
SOCIALACCOUNT_EMAIL_AUTHENTICATION = False  # never attach an SSO login to a local account by e-mail
SOCIALACCOUNT_EMAIL_VERIFICATION = "none"
SOCIALACCOUNT_STORE_TOKENS = False
ACCOUNT_ADAPTER = "chatapp.sso.ClosedSignupAdapter"
ACCOUNT_EMAIL_VERIFICATION = "none"
ACCOUNT_LOGIN_METHODS = {"username"}
ACCOUNT_SIGNUP_FIELDS = ["username*"]
AUTH_PASSWORD_VALIDATORS = (
    []
    if DEBUG
    else [
        {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
        {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    ]
)

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "staticfiles"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
WHITENOISE_USE_FINDERS = True

# The UI in English and Simplified Chinese (docs/interface.md, "Languages"): the browser's
# Accept-Language picks one until the person chooses with the switch in the header.
LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
LANGUAGE_COOKIE_NAME = "clearloop_language"
LANGUAGE_COOKIE_AGE = 365 * 24 * 3600
LANGUAGE_COOKIE_SAMESITE = "Lax"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF, CSP.NONCE],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
}
SECURE_CONTENT_TYPE_NOSNIFF = True
SESSION_COOKIE_HTTPONLY = True
# Django's database sessions; their per-request read is written out once (chatapp/session_store.py).
SESSION_ENGINE = "chatapp.session_store"
X_FRAME_OPTIONS = "DENY"
if not DEBUG:
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000, minimum=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    if env_bool("USE_X_FORWARDED_PROTO", False):
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

LOG_LEVEL = env_str("LOG_LEVEL", "INFO")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"redact": {"()": "chatapp.logging.RedactSecretsFilter"}},
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain", "filters": ["redact"]}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "httpx": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
        "mcp": {"level": "WARNING"},
        "daphne": {"level": "WARNING"},
        "axes": {"level": "WARNING"},
    },
}
