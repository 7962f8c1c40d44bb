"""Settings for every environment, read from the environment (12-factor).

With no variable set the project runs on embedded defaults: a SQLite file under `var/`, local
media under `var/media/`, a file-system Celery broker under `var/celery/` (no server needed), DEBUG
on and a development secret key. `config.settings.production` refuses to start without the real
values. Every variable is listed in README.md ("Configuration").
"""
import json as _json
from pathlib import Path

import dj_database_url

from .env import env_bool, env_float, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent.parent
# The folders under VAR_DIR are created when Django starts (common/localdirs.py), never at import.
VAR_DIR = Path(env_str("VAR_DIR", str(BASE_DIR / "var")) or BASE_DIR / "var")

DEBUG = env_bool("DEBUG", True)
SECRET_KEY = env_str("SECRET_KEY") or "dev-only-insecure-key-change-me-in-production-0123456789"
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
# Public base URL of the product, used in links sent to crowd platforms and printed by the demo.
SITE_URL = env_str("SITE_URL", "http://127.0.0.1:8000")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files, served as our own static files
    # Our apps, in dependency order: campaigns <- generation <- annotation <- autolabel <- metrics.
    "campaigns",
    "generation",
    "annotation",
    "autolabel",  # machine labels; depends on annotation, metrics may read it
    "metrics",
    "crowd",  # MTurk and Prolific; depends on annotation
    "console",  # researcher pages; imports every app, nothing imports it
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "common.middleware.RequestBodyLimitMiddleware",
    "common.middleware.InputSanityMiddleware",
    "common.middleware.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "common.throttle.ThrottleMiddleware",
    "common.middleware.ServiceUnavailableMiddleware",
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
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# DATABASE_URL: postgres://user:pass@host:5432/name in production and CI; a SQLite file when unset.
DATABASES = {
    "default": dj_database_url.config(
        default=f"sqlite:///{VAR_DIR / 'db.sqlite3'}",
        conn_max_age=env_int("CONN_MAX_AGE", 60),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Several processes (web, worker) share the file: wait for locks instead of failing at once.
    DATABASES["default"].setdefault("OPTIONS", {})["timeout"] = 20
    # Writers take the database lock at BEGIN: SQLite has no row locks, so the HIT engine relies on
    # one writer at a time (and a reader never fails to upgrade to a writer mid-transaction).
    DATABASES["default"]["OPTIONS"]["transaction_mode"] = "IMMEDIATE"
elif DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and env_bool("DATABASE_PREPARED_STATEMENTS", True):
    # Server-side prepared statements for the statements that ask for them (the HIT engine's hot paths,
    # labels and token auth, through annotation/prepared.py); Django's own queries are bound on the
    # client and never prepared. The threshold is psycopg's auto-prepare count, out of reach here: only explicit `prepare=True`.
    # Turn off behind a pooler that cannot keep them (PgBouncer < 1.21 in transaction mode).
    DATABASES["default"].setdefault("OPTIONS", {})["prepare_threshold"] = 2**31 - 1
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# Comparisons with significance tests (GET /api/reports/compare/?test=permutation, docs/metrics.md):
# the most draws a request may ask for (400 naming `draws` above).
COMPARE_MAX_DRAWS = env_int("COMPARE_MAX_DRAWS", 20_000)
# The request work budget (common/budget.py): the report, compare and the dataset export estimate
# their seconds before any work starts; above REQUEST_WORK_BUDGET_S a worker does it (202 with
# progress); options that would cost more than REQUEST_WORKER_MAX_S even there are a 400 naming them.
REQUEST_WORK_BUDGET_S = env_float("REQUEST_WORK_BUDGET_S", 5.0)
REQUEST_WORKER_MAX_S = env_float("REQUEST_WORKER_MAX_S", 600.0)
# A campaign opened by a worker (annotation/services/opening.py) whose worker wrote no progress for this
# long is taken as lost: the next open request queues a new worker (the lost one, if it ever runs, stops).
CAMPAIGN_OPEN_STALE_S = env_float("CAMPAIGN_OPEN_STALE_S", 120.0)
# Validate every built report against its JSON Schema (metrics/sections/schema.py); on in the tests.
REPORT_SCHEMA_CHECK = env_bool("REPORT_SCHEMA_CHECK", False)
# Outbound requests to URLs from outside the code (common/outbound.py): private, loopback and
# link-local addresses are refused unless listed here (CIDRs, e.g. a lab's own model server).
OUTBOUND_PRIVATE_ALLOWLIST = env_list("OUTBOUND_PRIVATE_ALLOWLIST", [])
OUTBOUND_MAX_BYTES = env_int("OUTBOUND_MAX_BYTES", 50 * 1024 * 1024)
# The openai backend: the deployment's key (OPENAI_API_KEY, read by the worker) is only ever sent to a
# URL under one of these bases. A spec's `backend.api_base` must lie under one of them (400 otherwise),
# and the worker checks again at send time. OPENAI_API_BASE (the default base) is always allowed.
OPENAI_API_BASE = env_str("OPENAI_API_BASE", "https://api.openai.com") or "https://api.openai.com"
OPENAI_API_BASES = list(dict.fromkeys([*env_list("OPENAI_API_BASES", ["https://api.openai.com"]), OPENAI_API_BASE]))
# Machine labellers (autolabel/, docs/autolabel.md). Models load from a hub name or a local path;
# AUTOLABEL_MODEL_DIR is tried first for a relative name (air-gapped GPU hosts keep weights there).
AUTOLABEL_MODEL_DIR = env_str("AUTOLABEL_MODEL_DIR", "") or ""
AUTOLABEL_DEVICE = env_str("AUTOLABEL_DEVICE", "auto") or "auto"
AUTOLABEL_FP16 = env_bool("AUTOLABEL_FP16", True)
AUTOLABEL_BATCH_SIZE = env_int("AUTOLABEL_BATCH_SIZE", 32)           # images per embedding forward pass
AUTOLABEL_TASK_QUESTIONS = env_int("AUTOLABEL_TASK_QUESTIONS", 256)  # questions per Celery message
# The `vlm` labeller's endpoints: only these, named in the spec by name, never a URL from the spec.
# JSON {"name": {"base": "https://host/v1", "key_env": "ENV_VAR_WITH_THE_KEY"}}; the key is read from
# the named environment variable by the worker at call time and sent only under `base`.
AUTOLABEL_VLM_ENDPOINTS = _json.loads(env_str("AUTOLABEL_VLM_ENDPOINTS", "{}") or "{}")
AUTOLABEL_VLM_TIMEOUT_S = env_int("AUTOLABEL_VLM_TIMEOUT_S", 60)
# PostgreSQL fast paths and their portable twins (common/fastpath.py); FASTPATH_<NAME>=false runs the
# portable version of one path. ANNOTATION_SQL_ENGINE=false is the older name of FASTPATH_HIT_ENGINE.
FASTPATHS = {
    "hit_engine": env_bool("FASTPATH_HIT_ENGINE", env_bool("ANNOTATION_SQL_ENGINE", True)),
    "token_auth": env_bool("FASTPATH_TOKEN_AUTH", True),
    "report_extract": env_bool("FASTPATH_REPORT_EXTRACT", True),
    "answers_csv": env_bool("FASTPATH_ANSWERS_CSV", True),
    "mturk_import": env_bool("FASTPATH_MTURK_IMPORT", True),
    "image_import": env_bool("FASTPATH_IMAGE_IMPORT", True),
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
    {"NAME": "common.accounts.SubstantialPasswordValidator"},  # no whitespace-only / padded passwords
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(VAR_DIR / "staticfiles")) or VAR_DIR / "staticfiles")
STATICFILES_DIRS = [BASE_DIR / "static"]

# Media storage: local files by default; S3 (django-storages, boto3) when MEDIA_STORAGE=s3.
MEDIA_URL = env_str("MEDIA_URL", "/media/")
MEDIA_ROOT = Path(env_str("MEDIA_ROOT", str(VAR_DIR / "media")) or VAR_DIR / "media")
MEDIA_STORAGE = env_str("MEDIA_STORAGE", "local")
if MEDIA_STORAGE == "s3":
    _media_storage = {
        "BACKEND": "common.s3_media.S3MediaStorage",  # presigned URLs reused for a short window
        "OPTIONS": {
            "bucket_name": env_str("S3_BUCKET", "t2i-bias-audit"),
            "endpoint_url": env_str("S3_ENDPOINT_URL") or None,
            "region_name": env_str("S3_REGION") or None,
            "default_acl": None,
            "querystring_auth": True,  # signed URLs: object keys are never enough to read an image
            "querystring_expire": env_int("S3_URL_EXPIRE_SECONDS", 3600),
            "file_overwrite": False,
        },
    }
elif MEDIA_STORAGE == "local":
    # Served by an authenticated view with signed URLs (common/media.py, annotation/media_views.py).
    _media_storage = {"BACKEND": "common.media.MediaStorage"}
else:
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured(f"MEDIA_STORAGE={MEDIA_STORAGE!r}: use 'local' or 's3'.")
# Local media URLs are signed and expire like S3's (default: the S3 setting); the front server may send
# the files: MEDIA_SERVE_HEADER = X-Accel-Redirect (nginx, internal location MEDIA_ACCEL_PREFIX) or X-Sendfile.
MEDIA_URL_EXPIRE_SECONDS = env_int("MEDIA_URL_EXPIRE_SECONDS", env_int("S3_URL_EXPIRE_SECONDS", 3600))
MEDIA_SERVE_HEADER = env_str("MEDIA_SERVE_HEADER", "") or ""
MEDIA_ACCEL_PREFIX = env_str("MEDIA_ACCEL_PREFIX", "/protected-media/") or "/protected-media/"
if MEDIA_SERVE_HEADER not in ("", "X-Accel-Redirect", "X-Sendfile"):
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured(f"MEDIA_SERVE_HEADER={MEDIA_SERVE_HEADER!r}: use X-Accel-Redirect, X-Sendfile or nothing.")
STORAGES = {
    "default": _media_storage,
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"
        if not DEBUG
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}

# Celery: Redis when REDIS_URL is set; otherwise a file-system broker that needs no server.
REDIS_URL = env_str("REDIS_URL", "") or ""
if REDIS_URL:
    CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", REDIS_URL)
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
else:
    CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://")
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
if CELERY_BROKER_URL == "filesystem://":
    _queue_dir = VAR_DIR / "celery" / "queue"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_queue_dir),
        "data_folder_out": str(_queue_dir),
        "processed_folder": str(VAR_DIR / "celery" / "processed"),
        # kombu keeps exchange bindings here (default: ./control in the working directory).
        "control_folder": str(VAR_DIR / "celery" / "control"),
        "store_processed": False,
        "polling_interval": 0.1,  # a worker checks the folder often: batches follow each other quickly
    }
else:
    # A task must be re-delivered if its worker dies: visibility timeout longer than any task.
    # A SIGKILLed worker's unacked message comes back after the visibility timeout, found by the
    # periodic sweep (every interval x throttle seconds) or by a worker starting up.
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600),
        "unacked_restore_interval": env_int("CELERY_UNACKED_RESTORE_INTERVAL", 10),
        "unacked_restore_throttle": env_int("CELERY_UNACKED_RESTORE_THROTTLE", 10),
        # An unreachable broker fails a publish in seconds (the request answers, the sweeper catches up).
        "socket_connect_timeout": env_int("CELERY_BROKER_CONNECT_TIMEOUT_S", 5),
        "socket_timeout": env_int("CELERY_BROKER_SOCKET_TIMEOUT_S", 30),
    }
CELERY_TASK_DEFAULT_QUEUE = "default"
# Generation tasks go to GPU hosts (`celery -A config worker -Q generation --concurrency 1`);
# everything else (imports, reports, syncs) to the default queue.
CELERY_TASK_ROUTES = {
    "generation.images_generate": {"queue": "generation"},
    "autolabel.labels_compute": {"queue": "generation"},  # models on the GPU hosts
    "*": {"queue": "default"},
}
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Periodic tasks (celery beat). Annotation: expired HIT leases back to the pool (also done at the
# start of every HIT request), and auto-approval of submitted HITs after the campaign's delay.
CELERY_BEAT_SCHEDULE = {
    "annotation-leases-reclaim": {"task": "annotation.leases_reclaim", "schedule": 60.0},
    "annotation-assignments-auto-approve": {"task": "annotation.assignments_auto_approve", "schedule": 3600.0},
    # Lost work is found and queued again (docs/generation.md, "Queueing and the sweeper").
    "generation-sweep": {"task": "generation.sweep", "schedule": float(env_int("GENERATION_SWEEP_INTERVAL_S", 60))},
    "campaigns-prompts-sweep": {"task": "campaigns.prompts_sweep",
                                "schedule": float(env_int("GENERATION_SWEEP_INTERVAL_S", 60))},
}

# Campaign design limits (campaigns/spec/), checked before a spec is expanded: 400 naming the field.
MAX_IMAGES_PER_CAMPAIGN = env_int("MAX_IMAGES_PER_CAMPAIGN", 100_000)
MAX_PROMPTS_PER_CAMPAIGN = env_int("MAX_PROMPTS_PER_CAMPAIGN", 100_000)
SPEC_MAX_SAMPLES = env_int("SPEC_MAX_SAMPLES", 1000)
SPEC_MAX_IDENTITIES = env_int("SPEC_MAX_IDENTITIES", 1000)
SPEC_MAX_ATTRIBUTES = env_int("SPEC_MAX_ATTRIBUTES", 1000)
SPEC_MAX_CONTEXTS = env_int("SPEC_MAX_CONTEXTS", 1000)
SPEC_MAX_GENDERS = env_int("SPEC_MAX_GENDERS", 100)
SPEC_MAX_TEXT_CHARS = env_int("SPEC_MAX_TEXT_CHARS", 2000)
# Larger designs are expanded by Celery tasks, never in a request: prompts (campaign create) and
# images (generate) above these counts; an expansion with no progress for the stall time is re-queued.
CAMPAIGN_INLINE_MAX_PROMPTS = env_int("CAMPAIGN_INLINE_MAX_PROMPTS", 5000)
GENERATION_INLINE_MAX_IMAGES = env_int("GENERATION_INLINE_MAX_IMAGES", 5000)
CAMPAIGN_EXPANSION_STALL_S = env_int("CAMPAIGN_EXPANSION_STALL_S", 600)

# Generation (see docs/generation.md).
GENERATION_MAX_RETRIES = env_int("GENERATION_MAX_RETRIES", 8)  # transient errors, with exponential backoff
GENERATION_RETRY_BACKOFF_MAX_S = env_int("GENERATION_RETRY_BACKOFF_MAX_S", 600)
# A `running` image whose claim is older than this is queued again by `generate` (its message was lost).
GENERATION_RUNNING_STALE_S = env_int("GENERATION_RUNNING_STALE_S", 2 * env_int("CELERY_VISIBILITY_TIMEOUT", 3600))
# Queueing is "enqueue on commit + sweeper" (docs/generation.md): pending images that never reached the
# broker (it was down at commit) are queued by the sweeper after the grace time; pending images queued
# longer than the stall time ago, while the generation queue is empty, lost their message and are queued
# again. The campaign's progress shows such images as stalled.
GENERATION_ENQUEUE_GRACE_S = env_int("GENERATION_ENQUEUE_GRACE_S", 60)
GENERATION_STALL_S = env_int("GENERATION_STALL_S", 600)
IMPORT_MAX_FILE_BYTES = env_int("IMPORT_MAX_FILE_BYTES", 50 * 1024 * 1024)   # per image file
IMPORT_MAX_ARCHIVE_BYTES = env_int("IMPORT_MAX_ARCHIVE_BYTES", 2 * 1024 ** 3)  # zip, uncompressed total
IMPORT_MAX_PIXELS = env_int("IMPORT_MAX_PIXELS", 40_000_000)                  # per image (decompression bombs)
# Uploaded files, per endpoint kind (common/uploads.py: read in chunks, 413 naming the field past it).
UPLOAD_LIMITS = {
    "csv": env_int("UPLOAD_MAX_CSV_BYTES", 100 * 1024 * 1024),          # MTurk batches, machine labels, manifests
    "references": env_int("UPLOAD_MAX_REFERENCES_BYTES", 1024 * 1024),  # references CSV
    "spec": env_int("UPLOAD_MAX_SPEC_BYTES", 1024 * 1024),              # the console's spec file
    "archive": env_int("UPLOAD_MAX_ARCHIVE_BYTES", 1024 ** 3),          # campaign archives, image zips (compressed)
}
# Campaign archive import (annotation/archive.py): uncompressed total, one member, compression ratio, rows.
ARCHIVE_MAX_TOTAL_BYTES = env_int("ARCHIVE_MAX_TOTAL_BYTES", 2 * 1024 ** 3)
ARCHIVE_MAX_MEMBER_BYTES = env_int("ARCHIVE_MAX_MEMBER_BYTES", 1024 ** 3)
ARCHIVE_MAX_RATIO = env_int("ARCHIVE_MAX_RATIO", 100)
ARCHIVE_MAX_ROWS = env_int("ARCHIVE_MAX_ROWS", 5_000_000)
# /csp-report/ (common/views.py): reports per client address and in total per minute.
CSP_REPORT_RATE = env_int("CSP_REPORT_RATE", 30)
CSP_REPORT_RATE_TOTAL = env_int("CSP_REPORT_RATE_TOTAL", 600)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "annotation.authentication.TokenAuthentication",  # + the annotator profile in the same query
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # JSON (+ form / multipart) everywhere; YAML only on the spec endpoints (common.parsers.SPEC_PARSERS).
    "DEFAULT_PARSER_CLASSES": [
        "common.parsers.JSONParser",
        "common.parsers.FormParser",
        "common.parsers.MultiPartParser",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "common.errors.exception_handler",
    "DEFAULT_PAGINATION_CLASS": "common.pagination.PageNumberPagination",
    "DEFAULT_THROTTLE_CLASSES": ["common.throttling.AnnotatorRateThrottle", "common.throttling.AnonymousRateThrottle"],
    "PAGE_SIZE": 100,
}
# Rate limits (common/throttling.py), "N/second|minute|hour|day": per annotator on every API call,
# per IP for unauthenticated calls (sign-up). Generous: a fast annotator makes ~2 calls per HIT.
THROTTLE_RATES = {
    "annotator": env_str("THROTTLE_ANNOTATOR", "600/minute"),
    "anon": env_str("THROTTLE_ANON", "120/minute"),
}
# One throttle policy for logins and sign-ups (common/throttle.py; docs/security.md "Login throttling"):
# per-username exponential back-off after LOGIN_THROTTLE_FAILURES failures (a wait, never a lockout),
# failed logins per client address per window, account creations per client address per window.
LOGIN_THROTTLE_FAILURES = env_int("LOGIN_THROTTLE_FAILURES", 5)
LOGIN_THROTTLE_BASE_DELAY_S = env_int("LOGIN_THROTTLE_BASE_DELAY_S", 15)
LOGIN_THROTTLE_MAX_DELAY_S = env_int("LOGIN_THROTTLE_MAX_DELAY_S", 900)
LOGIN_THROTTLE_WINDOW_S = env_int("LOGIN_THROTTLE_WINDOW_S", 900)
LOGIN_THROTTLE_ADDRESS_FAILURES = env_int("LOGIN_THROTTLE_ADDRESS_FAILURES", 50)
SIGNUP_THROTTLE_PER_ADDRESS = env_int("SIGNUP_THROTTLE_PER_ADDRESS", 20)
SIGNUP_THROTTLE_WINDOW_S = env_int("SIGNUP_THROTTLE_WINDOW_S", 3600)
LOGIN_THROTTLE_PATHS = [r"^/api/auth/token/$", r"^/accounts/login/$", r"^/admin/login/$", r"^/work/\d+/login/$"]
SIGNUP_THROTTLE_PATHS = [r"^/api/annotators/$", r"^/work/\d+/signup/$"]
# The client address behind the TLS proxy (common/clientaddr.py): the number of proxies in front
# that append to TRUSTED_PROXY_HEADER (0: none, REMOTE_ADDR is the client).
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0)
TRUSTED_PROXY_HEADER = env_str("TRUSTED_PROXY_HEADER", "X-Forwarded-For")
# Request bodies: JSON/YAML/form bodies and multipart uploads (413 above these; common/middleware.py).
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("MAX_BODY_BYTES", 5 * 1024 * 1024)
MAX_UPLOAD_BYTES = env_int("MAX_UPLOAD_BYTES", 1024 ** 3)
DATA_UPLOAD_MAX_NUMBER_FIELDS = 2000
# Structured bodies (common/inputs.py): JSON and YAML nesting depth; YAML (spec uploads only) also
# its size and node count. Aliases are always refused.
REQUEST_MAX_DEPTH = env_int("REQUEST_MAX_DEPTH", 64)
YAML_MAX_BYTES = env_int("YAML_MAX_BYTES", 1024 * 1024)
YAML_MAX_NODES = env_int("YAML_MAX_NODES", 200_000)
DATA_UPLOAD_MAX_NUMBER_FILES = env_int("MAX_UPLOAD_FILES", 5000)

# Content-Security-Policy of the annotator pages. Images may also come from the media origin
# (S3 / MinIO: signed URLs) or extra origins in CSP_IMG_SRC (comma-separated).
def _media_origin() -> str:
    from urllib.parse import urlsplit

    if MEDIA_STORAGE != "s3":
        url = urlsplit(MEDIA_URL or "")
        return f"{url.scheme}://{url.netloc}" if url.scheme and url.netloc else ""
    endpoint = env_str("S3_ENDPOINT_URL") or ""
    if endpoint:
        url = urlsplit(endpoint)
        return f"{url.scheme}://{url.netloc}"
    return "https://*.amazonaws.com"


CSP_IMG_SRC = [o for o in ["'self'", "data:", _media_origin(), *env_list("CSP_IMG_SRC", [])] if o]
# The one Content-Security-Policy of every HTML page (common/csp.py, docs/security.md), and the paths
# that widen one directive of it. Scripts are never widened.
CSP_POLICY = {
    "default-src": ["'self'"],
    "img-src": CSP_IMG_SRC,
    "script-src": ["'self'"],
    "style-src": ["'self'"],
    "font-src": ["'self'", "data:"],
    "connect-src": ["'self'"],
    "form-action": ["'self'"],
    "base-uri": ["'none'"],
    "object-src": ["'none'"],
    "frame-ancestors": ["'none'"],
}
CSP_PATH_OVERRIDES = [
    # The ExternalQuestion page posts the finished assignment to MTurk (its view sets frame-ancestors);
    # `setting:NAME` is that setting's list, read per request.
    (r"^/mturk/", {"form-action": ["'self'", "https://www.mturk.com", "https://workersandbox.mturk.com",
                                   "setting:MTURK_SUBMIT_HOSTS_EXTRA"]}),
    # Inline SVG charts (matplotlib presentation styles) and the standalone HTML report's <style>.
    (r"^/(console/campaigns/\d+/report/|console/compare/|api/campaigns/\d+/report/|api/reports/compare/)",
     {"style-src": ["'self'", "'unsafe-inline'"]}),
]
# Where browsers report violations (common.views.csp_report logs them on the `csp` logger); off when empty.
CSP_REPORT_URI = env_str("CSP_REPORT_URI", "") or ""
CONTENT_SECURITY_POLICY = "; ".join(" ".join([k, *v]) for k, v in CSP_POLICY.items())  # the base policy, as sent

SPECTACULAR_SETTINGS = {
    "TITLE": "T2I gender-bias audit API",
    "DESCRIPTION": "Campaigns (PST / GEP designs), generation, annotation and reports.",
    "VERSION": "1",
    # Swagger UI from the installed drf-spectacular-sidecar (static files), never a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# Crowd platforms. MTurk credentials are boto3's usual AWS_* variables.
MTURK_SANDBOX = env_bool("MTURK_SANDBOX", True)
PROLIFIC_COMPLETION_URL = env_str("PROLIFIC_COMPLETION_URL", "https://app.prolific.com/submissions/complete")
# Origins besides www.mturk.com and workersandbox.mturk.com that the MTurk page may post a finished
# assignment to (turkSubmitTo) and be framed by: tests only (a local stand-in for MTurk).
MTURK_SUBMIT_HOSTS_EXTRA = env_list("MTURK_SUBMIT_HOSTS_EXTRA", [])
# Lifetime of the campaign-scoped token written into a crowd work page (annotation/scoped_tokens.py).
CROWD_TOKEN_TTL_S = env_int("CROWD_TOKEN_TTL_S", 4 * 3600)
# An annotator's permanent API token lives this long (0: never expires); logout and a password change
# revoke it, POST /api/auth/token/rotate/ replaces it (annotation/tokens.py).
API_TOKEN_TTL_S = env_int("API_TOKEN_TTL_S", 30 * 86400)

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/console/"
LOGOUT_REDIRECT_URL = "/accounts/login/"
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "INFO"}},
}
