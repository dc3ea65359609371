"""Admission control: refuse work the server cannot take now with a clear 503, instead of queueing it.

Two checks here, both cheap:

* ``InflightLimit``: how many expensive requests (``expensive``: asks, question posts, uploads)
  one web process runs at once (``RAGKG_MAX_INFLIGHT``). A request over the limit is refused at
  once by ``AdmissionMiddleware``; cheap pages (health, static files, audit views, answer pages
  and their streams) are never counted nor refused, so they always find a free thread.
* ``queue_admit``: the depth of a Celery queue (the length of its Redis lists) before a
  generation or an ingestion job is queued (``RAGKG_MAX_GPU_QUEUE``, ``RAGKG_MAX_INGEST_QUEUE``).
  It runs before anything is recorded, so a refused request leaves no Answer or job behind.

``apps.answers.admission`` adds a third for questions with generation: the wait a new one would
have for a generation slot, estimated from the running generations and the recent ones' length.

All raise or answer ``Busy``; the middleware turns it into a 503 (JSON for ``/api/``, the 503
page otherwise) with ``Retry-After``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import NoReturn

import redis
from django.conf import settings
from django.http import HttpRequest
from redis import RedisError

logger = logging.getLogger(__name__)

# Kombu's Redis transport keeps a queue's prioritised messages in extra lists named
# ``<queue>\x06\x16<priority>`` (priority steps 3, 6, 9); plain messages go to ``<queue>``.
PRIORITY_SEPARATOR = "\x06\x16"
PRIORITY_STEPS = (3, 6, 9)
EXPENSIVE_POSTS = (
    "/api/ask",
    "/",
    "/ask/",
    "/curation/documents/upload/",
    "/api/v1/ask",
    "/api/v1/documents",
    "/v1/chat/completions",
    "/mcp",
)


class Busy(Exception):
    """The server cannot take the work now: ``message`` for the user, ``retry_after`` seconds,
    ``reason`` for the logs, ``kind`` for JSON clients (``busy``, or ``no_worker`` when no worker
    consumes the queue the work needs)."""

    def __init__(self, message: str, *, retry_after: int, reason: str, kind: str = "busy") -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after
        self.reason = reason
        self.kind = kind


def busy_message(what: str, retry_after: int) -> str:
    return f"The server is busy ({what}); nothing was recorded. Please retry in {retry_after} s."


def expensive(request: HttpRequest) -> bool:
    """Requests that retrieve, generate or ingest: the ones admission control may refuse."""
    return request.method == "POST" and request.path in EXPENSIVE_POSTS


class InflightLimit:
    """A per-process count of running expensive requests, at most ``limit`` (0: no limit)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.running = 0
        self._lock = threading.Lock()

    def acquire(self) -> bool:
        with self._lock:
            if self.limit and self.running >= self.limit:
                return False
            self.running += 1
            return True

    def release(self) -> None:
        with self._lock:
            self.running = max(0, self.running - 1)


def queue_depth(client: redis.Redis[bytes], queue: str) -> int:
    """Messages waiting in a Celery queue (its plain and prioritised Redis lists)."""
    names = [queue, *(f"{queue}{PRIORITY_SEPARATOR}{step}" for step in PRIORITY_STEPS)]
    pipe = client.pipeline(transaction=False)
    for name in names:
        pipe.llen(name)
    return sum(int(n) for n in pipe.execute())


_clients: dict[str, redis.Redis[bytes]] = {}
_clients_lock = threading.Lock()


def broker_client() -> redis.Redis[bytes]:
    url = settings.CELERY_BROKER_URL
    with _clients_lock:
        if url not in _clients:
            _clients[url] = redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1)
        return _clients[url]


def queue_admit(
    queue: str,
    *,
    limit: int,
    what: str,
    client_of: Callable[[], redis.Redis[bytes]] | None = None,
) -> int:
    """Raise Busy when ``queue`` already holds ``limit`` messages or more (0: no limit); else return
    the depth (0 when there is no limit). An unreachable Redis admits (depth 0): queueing then fails
    with the broker's own clear message."""
    if not limit:
        return 0
    try:
        depth = queue_depth((client_of or broker_client)(), queue)
    except (RedisError, OSError) as exc:
        logger.warning("queue depth of %r unknown (%s); admitting", queue, exc)
        return 0
    if depth >= limit:
        busy_raise(what, reason=f"queue {queue!r} holds {depth} (limit {limit})")
    return depth


def busy_raise(what: str, *, reason: str, message: str | None = None, retry_after: int | None = None) -> NoReturn:
    """Refuse the request: Busy with the user's sentence (``busy_message`` of ``what`` unless
    ``message`` is given) and ``retry_after`` (``SHED_RETRY_AFTER`` unless given)."""
    retry = settings.SHED_RETRY_AFTER if retry_after is None else retry_after
    raise Busy(message or busy_message(what, retry), retry_after=retry, reason=reason)
