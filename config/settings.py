"""Concord settings, read from the environment (django-environ).

Every setting has a safe local default so that ``make run`` works with nothing configured: an
embedded SQLite database, an in-memory cache and Celery tasks run in-process. Production sets
``DJANGO_DEBUG=false``, ``DJANGO_SECRET_KEY``, ``DJANGO_ALLOWED_HOSTS``, ``DATABASE_URL`` and
``REDIS_URL`` (see docker-compose.yml); with DEBUG off the secure cookie/HSTS settings switch on,
so ``manage.py check --deploy`` passes.
"""

from datetime import timedelta
from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DEBUG = env.bool("DJANGO_DEBUG", default=True)
_DEV_SECRET = "django-insecure-concord-local-development-only-never-in-production"
SECRET_KEY = env.str("DJANGO_SECRET_KEY", default=_DEV_SECRET if DEBUG else environ.Env.NOTSET)
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])

# The task types this installation ships: each one package under task_types/ (a Django app, so
# its templates and static files are found with it), listed here by hand so a half-written
# folder never ships. ``manage.py check`` (studies/checks.py) refuses a listed package that
# registers no task type, and a package under TASK_TYPES_DIR that is not listed.
TASK_TYPES_DIR = BASE_DIR / "task_types"
TASK_TYPE_APPS = [
    "task_types.argument_structure",
    "task_types.citation_recovery",
    "task_types.claim_review",
    "task_types.questionnaire",
    "task_types.ranking",
    "task_types.stance",
]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "knox",  # API tokens, stored hashed and expiring (projects/auth.py)
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    # Concord's apps, bottom layer first (docs/architecture.md; enforced by lint-imports).
    "projects",
    "webhooks",
    "annotation",
    "crowd",
    "llm_judges",
    "agreement",
    "studies",
    *TASK_TYPE_APPS,
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "core.middleware.RefuseTraceMiddleware",  # TRACE/CONNECT: 405 before any view or login
    "core.middleware.ApiErrorsAsJsonMiddleware",  # /api/ errors are JSON, debug pages included
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # The annotator's language: ?lang= (kept in the session), the session, Accept-Language.
    "core.middleware.LanguageMiddleware",
    # Before anything reads the body: a request larger than its address takes is a 413 from
    # its Content-Length (only import uploads of a project's researchers may be large).
    "studies.middleware.RequestSizeLimitMiddleware",
    "core.middleware.RefuseNulMiddleware",  # a NUL in a query or form: 400, never a 500
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # A Refusal raised in a page view: its code's status, plain text (JSON under /api/).
    "core.middleware.RefusalMiddleware",
    # Last: turns a login refused by the lock (projects/auth.py) into a 429.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "annotation.crowd_session.crowd_worker",
            ],
        },
    },
]

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}")}
DATABASES["default"]["ATOMIC_REQUESTS"] = False
# Seconds a database connection is kept for the next request (0: one per request); checked
# before reuse, so a restarted PostgreSQL costs no failed request.
DATABASES["default"]["CONN_MAX_AGE"] = env.int(
    "DJANGO_CONN_MAX_AGE", default=DATABASES["default"].get("CONN_MAX_AGE", 0)
)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # A small team on the embedded database: WAL lets readers go on while one writes; writes
    # start with BEGIN IMMEDIATE so two writers queue on the busy timeout instead of one failing
    # with "database is locked" when its read transaction tries to become a write.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        init_command="PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        transaction_mode="IMMEDIATE",
        timeout=20,
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env.str("REDIS_URL", default="")
# Where people reach this server; used in links made outside a request (the demo's crowd link).
CONCORD_BASE_URL = env.str("CONCORD_BASE_URL", default="http://127.0.0.1:8000/")
if REDIS_URL:
    CACHES = {"default": {"BACKEND": "core.redis_cache.RedisCache", "LOCATION": REDIS_URL}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
    # A new password revokes the account's API tokens (sessions are logged out by Django).
    {"NAME": "projects.tokens.TokensEndWithThePassword"},
]
LOGIN_URL = "login"
# Invitation links (projects/members.py) expire after this many days unless the researcher
# chooses otherwise; password-reset links after PASSWORD_RESET_TIMEOUT seconds (Django's, 3 days).
CONCORD_INVITATION_DAYS = env.int("CONCORD_INVITATION_DAYS", default=7)
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"
# Failed logins allowed per (username, client address) within the window before refusal, and per
# client address over all usernames (password spraying). Every login path (login page, admin
# login, API token) shares the count: django-axes, configured in projects/auth.py, keeps it in
# the database, so logins work without Redis.
LOGIN_RATE_LIMIT = env.int("CONCORD_LOGIN_RATE_LIMIT", default=5)
LOGIN_ADDRESS_LIMIT = env.int("CONCORD_LOGIN_ADDRESS_LIMIT", default=20)
LOGIN_RATE_WINDOW_SECONDS = env.int("CONCORD_LOGIN_RATE_WINDOW", default=300)
# Behind a reverse proxy: the META key holding the client address (e.g. HTTP_X_FORWARDED_FOR).
CONCORD_CLIENT_IP_HEADER = env.str("CONCORD_CLIENT_IP_HEADER", default="")
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # first: refuses every authenticate() while locked
    "projects.auth.AnyCaseModelBackend",  # Django's ModelBackend, usernames ignoring case
]
AXES_HANDLER = "projects.auth.LoginAttempts"
AXES_LOCKOUT_PARAMETERS = "projects.auth.lockout_parameters"
AXES_FAILURE_LIMIT = "projects.auth.failure_limit"
AXES_COOLOFF_TIME = "projects.auth.cool_off"
AXES_USERNAME_CALLABLE = "projects.auth.canonical_username"
AXES_CLIENT_IP_CALLABLE = "projects.auth.client_address"
AXES_LOCKOUT_CALLABLE = "projects.auth.lockout_response"
AXES_RESET_ON_SUCCESS = True
AXES_DISABLE_ACCESS_LOG = True  # failures only; no record of every successful login
AXES_VERBOSE = False

# E-mail (password reset): printed to the console unless EMAIL_HOST names an SMTP server.
EMAIL_HOST = env.str("EMAIL_HOST", default="")
EMAIL_BACKEND = env.str(
    "EMAIL_BACKEND",
    default="django.core.mail.backends.smtp.EmailBackend"
    if EMAIL_HOST
    else "django.core.mail.backends.console.EmailBackend",
)
EMAIL_PORT = env.int("EMAIL_PORT", default=587)
EMAIL_HOST_USER = env.str("EMAIL_HOST_USER", default="")
EMAIL_HOST_PASSWORD = env.str("EMAIL_HOST_PASSWORD", default="")
EMAIL_USE_TLS = env.bool("EMAIL_USE_TLS", default=True)
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="Concord <concord@localhost>")
SERVER_EMAIL = DEFAULT_FROM_EMAIL

LANGUAGE_CODE = "en"
# The languages of the annotator pages (docs/i18n.md); researcher pages are in English. Shared
# strings are in locale/, each task type's in task_types/<slug>/locale/ (found as app locales).
LANGUAGES = [("en", "English"), ("de", "Deutsch")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 20 * 1024 * 1024

REST_FRAMEWORK = {
    "EXCEPTION_HANDLER": "core.errors.exception_handler",
    "DEFAULT_PARSER_CLASSES": [
        "core.parsers.SafeJSONParser",  # deep nesting and huge integers: a 400, not a 500
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Token first: a missing or revoked token is a 401 with WWW-Authenticate: Token.
        "projects.tokens.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # Request rates (projects/throttles.py): per account and per anonymous address; over them
    # a JSON 429 with code too_many_requests.
    "DEFAULT_THROTTLE_CLASSES": [
        "projects.throttles.AccountRate",
        "projects.throttles.AddressRate",
    ],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "core.schema.AutoSchema",  # documents every error answer
    # "format" is a domain word here (import/export formats), not DRF's renderer override.
    "URL_FORMAT_OVERRIDE": None,
}
# API requests allowed per signed-in account and per anonymous client address ("number/period",
# period one of s, min, h, day; empty: no limit). Generous: a script or the bench stays below.
CONCORD_API_RATE_USER = env.str("CONCORD_API_RATE_USER", default="6000/min")
CONCORD_API_RATE_ANONYMOUS = env.str("CONCORD_API_RATE_ANONYMOUS", default="600/min")
# API tokens (``POST /api/auth/token/``): only a hash is stored; each expires after this many hours.
REST_KNOX = {
    "TOKEN_TTL": timedelta(hours=env.int("CONCORD_API_TOKEN_TTL_HOURS", default=24)),
    "AUTH_HEADER_PREFIX": "Token",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Concord API",
    "DESCRIPTION": "Annotation platform for fact-checking and LLM-evaluation research.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI from our own static files: /api/docs/ works offline and loads nothing from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# Celery: a real broker when REDIS_URL is set; otherwise tasks run in-process (eager).
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = REDIS_URL or None
# Uploads (import files and mapping files) above this size are refused with a 413. 512 MiB: a
# 100k-item study file (about 130 MB of JSONL) with room to spare; uploads are stored in 1 MiB
# parts, never whole in memory. Only the import forms and endpoints take bodies this large, and
# only from a project's researchers (studies.middleware); every other request above
# DATA_UPLOAD_MAX_MEMORY_SIZE is refused from its Content-Length before it is read.
CONCORD_MAX_UPLOAD_BYTES = env.int("CONCORD_MAX_UPLOAD_BYTES", default=512 * 2**20)
# One record of an import (a JSON Lines line, a CSV cell) may have at most this many characters:
# an item is sent whole to each annotator it is shown to. 2 Mi: about a hundred times the
# largest record of the source studies (22 kB), room for long documents as evidence.
CONCORD_MAX_RECORD_CHARS = env.int("CONCORD_MAX_RECORD_CHARS", default=2 * 2**20)
# The Label Studio import of the project page and the API runs in the request: an export with
# more tasks than this is refused with a message (split it, or run manage.py import_label_studio).
# 5,000 ranking tasks took 21 s (6.3 s of CPU) at load 6 on PostgreSQL: under gunicorn's 120 s.
CONCORD_LABEL_STUDIO_WEB_TASKS = env.int("CONCORD_LABEL_STUDIO_WEB_TASKS", default=10_000)
# Failed import jobs keep their upload this many days (to retry or inspect), then it is cleared.
CONCORD_FAILED_IMPORT_RETENTION_DAYS = env.int("CONCORD_FAILED_IMPORT_RETENTION_DAYS", default=7)
# An import job queued, or running without progress, this many minutes is flagged on its page
# and in the API ("stalled"): no worker has taken it, or its worker may have stopped.
CONCORD_IMPORT_STALL_MINUTES = env.int("CONCORD_IMPORT_STALL_MINUTES", default=10)
CELERY_BEAT_SCHEDULE = {
    "purge-failed-import-uploads": {
        "task": "studies.purge_failed_imports",
        "schedule": 24 * 3600,
    },
    # Webhook deliveries that are due and were not taken (a lost task, a broker that was away).
    "webhooks-send-due": {"task": "webhooks.send_due", "schedule": 60},
}
# Answers whose export columns a task type stores (argument structure: its rows' metrics need
# the scorer's model) have them made on a worker this often, so that exports only read them.

CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
# `make run`: eager judge runs go on a thread of the dev server, so starting one never blocks the
# page (core/background.py). Tests leave it off and run eager tasks inline.
CONCORD_EAGER_IN_BACKGROUND = CELERY_TASK_ALWAYS_EAGER and env.bool(
    "CONCORD_EAGER_IN_BACKGROUND", default=False
)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = 15 * 60
CELERY_TASK_SOFT_TIME_LIMIT = 14 * 60
# Seconds before Redis hands an unacknowledged task (its worker died) to another worker; tests use
# a few seconds to see redelivery quickly. Must exceed the longest task (judge tasks: soft limit).
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env.int("CONCORD_CELERY_VISIBILITY_TIMEOUT", default=3600),
    # A broker that does not answer is given up on in seconds: a request that queues a task
    # (an import) answers 503 instead of hanging (issue 24: a 500 after 19 s).
    "socket_connect_timeout": 2,
    "socket_timeout": 5,
}
CELERY_BROKER_CONNECTION_TIMEOUT = 2
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 2,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.2,
}

# Webhooks (webhooks/): researchers' URLs may not reach private, loopback or link-local
# addresses (as model endpoints); staff list the hosts that may (a receiver on the same network,
# tests). Each attempt waits CONCORD_WEBHOOK_TIMEOUT seconds at most; failed ones are retried
# after CONCORD_WEBHOOK_RETRY_SECONDS, doubled each time (at most an hour), up to
# CONCORD_WEBHOOK_MAX_ATTEMPTS attempts; CONCORD_WEBHOOK_QUEUE: their Celery queue (empty: default).
CONCORD_WEBHOOK_PRIVATE_HOSTS = env.list("CONCORD_WEBHOOK_PRIVATE_HOSTS", default=[])
CONCORD_WEBHOOK_TIMEOUT = env.float("CONCORD_WEBHOOK_TIMEOUT", default=5.0)
CONCORD_WEBHOOK_RETRY_SECONDS = env.float("CONCORD_WEBHOOK_RETRY_SECONDS", default=30.0)
CONCORD_WEBHOOK_MAX_ATTEMPTS = env.int("CONCORD_WEBHOOK_MAX_ATTEMPTS", default=8)
CONCORD_WEBHOOK_QUEUE = env.str("CONCORD_WEBHOOK_QUEUE", default="")

# Crowd-platform actions (crowd/platforms.py): approve, reject, return and bonus on Prolific and
# MTurk from quality-control results. Keys are the staff's, from the environment only; without a
# key nothing is sent. The base URLs are the real APIs; tests point them at local stub servers.
CONCORD_PROLIFIC_TOKEN = env.str("CONCORD_PROLIFIC_TOKEN", default="")
CONCORD_PROLIFIC_API_URL = env.str(
    "CONCORD_PROLIFIC_API_URL", default="https://api.prolific.com/api/v1/"
)
CONCORD_MTURK_ACCESS_KEY_ID = env.str("CONCORD_MTURK_ACCESS_KEY_ID", default="")
CONCORD_MTURK_SECRET_ACCESS_KEY = env.str("CONCORD_MTURK_SECRET_ACCESS_KEY", default="")
# A project's ``mturk_sandbox`` crowd setting picks one of these two.
CONCORD_MTURK_ENDPOINT = env.str(
    "CONCORD_MTURK_ENDPOINT", default="https://mturk-requester.us-east-1.amazonaws.com"
)
CONCORD_MTURK_SANDBOX_ENDPOINT = env.str(
    "CONCORD_MTURK_SANDBOX_ENDPOINT",
    default="https://mturk-requester-sandbox.us-east-1.amazonaws.com",
)
CONCORD_CROWD_ACTION_TIMEOUT = env.float("CONCORD_CROWD_ACTION_TIMEOUT", default=20.0)
# The Celery queue of the sending task (empty: the default queue).
CONCORD_CROWD_QUEUE = env.str("CONCORD_CROWD_QUEUE", default="")
# The largest bonus one worker may get in one action, in the project's currency.
CONCORD_CROWD_MAX_BONUS = env.str("CONCORD_CROWD_MAX_BONUS", default="20.00")

# Annotation workflow
CONCORD_RESERVATION_MINUTES = env.int("CONCORD_RESERVATION_MINUTES", default=60)

# Judges (llm_judges): queue for judge tasks (empty: Celery's default queue) and the soft time
# limit of one batch task, in seconds.
CONCORD_JUDGE_QUEUE = env.str("CONCORD_JUDGE_QUEUE", default="")
CONCORD_JUDGE_SOFT_TIME_LIMIT = env.int("CONCORD_JUDGE_SOFT_TIME_LIMIT", default=600)
# An active run none of whose batches has shown a sign of life (a heartbeat, written every
# few seconds while a batch works) for this long is lost (its worker was killed, or the broker
# lost its tasks): starting the judge again takes it over instead of answering 409.
CONCORD_JUDGE_LOST_AFTER_SECONDS = env.int("CONCORD_JUDGE_LOST_AFTER_SECONDS", default=300)
# A periodic task (Celery beat) ends lost runs and starts their judges again this often; the run
# page flags an active run silent for CONCORD_JUDGE_STALE_AFTER_SECONDS before that.
CONCORD_JUDGE_RESUME_EVERY_SECONDS = env.int("CONCORD_JUDGE_RESUME_EVERY_SECONDS", default=60)
CONCORD_JUDGE_STALE_AFTER_SECONDS = env.int("CONCORD_JUDGE_STALE_AFTER_SECONDS", default=60)
# Local-model judges (embedding, NLI) compute on the workers' CPUs. A run of one is dealt into a
# multiple of CONCORD_JUDGE_WORKER_PROCESSES tasks of equal size (never above the judge's
# items_per_task), so the worker's pool processes (``celery worker -c N``) finish together.
CONCORD_JUDGE_WORKER_PROCESSES = env.int("CONCORD_JUDGE_WORKER_PROCESSES", default=2)
# torch intra-op threads per process. 0: in a Celery pool process, cores // pool processes (at
# least 1), so processes x threads never exceeds the cores; elsewhere torch's default.
CONCORD_TORCH_THREADS = env.int("CONCORD_TORCH_THREADS", default=0)
# On: Celery pool processes load all-MiniLM-L6-v2 when they start (~620 MB each, on every worker).
# Off (the default): a process loads it on its first embedding batch and keeps it. Turn it on for
# workers that serve embedding judges. The most texts whose vectors an embedding judge's task
# keeps (each encoded once per task): CONCORD_EMBEDDING_CACHE_TEXTS.
CONCORD_EMBEDDING_PRELOAD = env.bool("CONCORD_EMBEDDING_PRELOAD", default=False)
CONCORD_EMBEDDING_CACHE_TEXTS = env.int("CONCORD_EMBEDDING_CACHE_TEXTS", default=20_000)
# Answers whose export columns a task type stores (argument structure: its rows' metrics need
# the scorer's embedding model) have them made this often on the judges' workers, so that
# exports only read them (studies.prepare_export_columns).
CONCORD_EXPORT_PREPARE_EVERY_SECONDS = env.int("CONCORD_EXPORT_PREPARE_EVERY_SECONDS", default=60)
CELERY_BEAT_SCHEDULE["prepare-export-columns"] = {
    "task": "studies.prepare_export_columns",
    "schedule": CONCORD_EXPORT_PREPARE_EVERY_SECONDS,
    "options": {
        "expires": CONCORD_EXPORT_PREPARE_EVERY_SECONDS,  # no pile-up while no worker listens
        **({"queue": CONCORD_JUDGE_QUEUE} if CONCORD_JUDGE_QUEUE else {}),
    },
}
CELERY_BEAT_SCHEDULE["resume-lost-judge-runs"] = {
    "task": "llm_judges.resume_lost_runs",
    "schedule": CONCORD_JUDGE_RESUME_EVERY_SECONDS,
    "options": {
        "expires": CONCORD_JUDGE_RESUME_EVERY_SECONDS,  # no pile-up while no worker listens
        **({"queue": CONCORD_JUDGE_QUEUE} if CONCORD_JUDGE_QUEUE else {}),
    },
}

if not DEBUG:
    SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=True)
    SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env.int("DJANGO_SECURE_HSTS_SECONDS", default=31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_CONTENT_TYPE_NOSNIFF = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("DJANGO_LOG_LEVEL", default="INFO")},
    # One line per judge call (openai's client, httpx / httpx2) and per successful login (axes) drown
    # what matters; failed logins, lockouts and failed calls are warnings and still show.
    "loggers": {
        "openai": {"level": env.str("CONCORD_HTTP_LOG_LEVEL", default="WARNING")},
        "httpx": {"level": env.str("CONCORD_HTTP_LOG_LEVEL", default="WARNING")},
        "httpx2": {"level": env.str("CONCORD_HTTP_LOG_LEVEL", default="WARNING")},
        "axes": {"level": env.str("CONCORD_AXES_LOG_LEVEL", default="WARNING")},
    },
}
