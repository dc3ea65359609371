"""Which Celery workers consume which queue, asked of the workers themselves, bounded and cached.

``queue_consumers`` answers from one broadcast (``inspect().active_queues()``) with a short timeout
(``RAGKG_WORKER_CHECK_TIMEOUT``), reused for ``RAGKG_WORKER_CHECK_TTL`` seconds by the process; the
broadcast runs in a helper thread under a hard deadline, and the broker's Redis is pinged first
(one-second socket timeouts), so a request is never held by it for more than about a second. When
the workers cannot be asked (Redis down, no reply in time from the broker) the answer is "unknown"
(``known`` False), and callers go on as if a worker were there: queueing then fails with the
broker's own message. ``workers_detail`` adds each worker's processes and running tasks, for the
health checks.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from apps.core.admission import broker_client

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Consumers:
    """The workers that answered, by queue; ``known`` False when they could not be asked."""

    known: bool
    by_queue: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    slots: Mapping[str, int] = field(default_factory=dict)  # worker -> processes (workers_detail only)
    busy: Mapping[str, int] = field(default_factory=dict)  # worker -> tasks running (workers_detail only)

    def of(self, queue: str) -> tuple[str, ...]:
        return self.by_queue.get(queue, ())

    def missing(self, queue: str) -> bool:
        """True only when the workers were asked and none consumes ``queue``."""
        return self.known and not self.of(queue)

    @property
    def workers(self) -> tuple[str, ...]:
        return tuple(sorted({worker for names in self.by_queue.values() for worker in names}))


UNKNOWN = Consumers(known=False)

_pool = ThreadPoolExecutor(max_workers=6, thread_name_prefix="worker-check")
_cache: dict[str, tuple[float, Consumers]] = {}
_cache_lock = threading.Lock()
_refreshing: set[str] = set()
STALE = 4
CONFIRM = 4


def _broker_reachable() -> bool:
    try:
        return bool(broker_client().ping())
    except Exception as exc:  # redis raises RedisError and OSError subclasses
        logger.info("workers not asked: the broker is unreachable (%s)", exc)
        return False


def _result(future: Future[Any], timeout: float) -> Any:
    """The future's value; None when it has not answered within ``timeout`` + 1 s or raised."""
    try:
        return future.result(timeout=timeout + 1.0)
    except FutureTimeout:
        logger.warning("the Celery workers did not answer within %.1f s", timeout + 1.0)
    except Exception as exc:  # kombu raises OperationalError and friends
        logger.warning("could not ask the Celery workers: %s", exc)
    return None


def _inspect(method: str, timeout: float) -> Callable[[], Any]:
    def call() -> Any:
        from ragkg.celery import app

        return getattr(app.control.inspect(timeout=timeout), method)() or {}

    return call


def _by_queue(replies: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    by_queue: dict[str, list[str]] = {}
    for worker, queues in replies.items():
        for queue in queues or []:
            by_queue.setdefault(str(queue.get("name")), []).append(str(worker))
    return {queue: tuple(sorted(names)) for queue, names in by_queue.items()}


def consumers_ask(*, timeout: float | None = None) -> Consumers:
    """Ask the workers now (one broadcast) which queues they consume; never raises."""
    wait = settings.WORKER_CHECK_TIMEOUT if timeout is None else timeout
    if not _broker_reachable():
        return UNKNOWN
    replies = _result(_pool.submit(_inspect("active_queues", wait)), wait)
    return UNKNOWN if replies is None else Consumers(known=True, by_queue=_by_queue(replies))


def _refresh(key: str) -> Consumers:
    answer = consumers_ask()
    with _cache_lock:
        _refreshing.discard(key)
        if answer.known:
            _cache[key] = (time.monotonic(), answer)
    return answer


def queue_consumers(*, max_age: float | None = None) -> Consumers:
    """``consumers_ask``'s answer, reused for ``max_age`` seconds (``RAGKG_WORKER_CHECK_TTL``). An
    answer up to ``STALE`` times older is still given while a helper thread asks again, so only the
    first call of a process (or one after a long quiet spell) waits for the broadcast. An unknown
    answer is not kept."""
    ttl = settings.WORKER_CHECK_TTL if max_age is None else max_age
    key = settings.CELERY_BROKER_URL
    with _cache_lock:
        cached = _cache.get(key)
        age = time.monotonic() - cached[0] if cached is not None else None
        if cached is not None and age is not None and age <= ttl:
            return cached[1]
        if cached is not None and age is not None and age <= STALE * ttl:
            if key not in _refreshing:
                _refreshing.add(key)
                _pool.submit(_refresh, key)
            return cached[1]
    return _refresh(key)


def queue_unserved(queue: str) -> bool:
    """Whether no worker consumes ``queue``: said only when the workers answered twice, the second
    time waiting ``CONFIRM`` times longer (a worker slow to reply on a loaded machine is not taken
    for a missing one); the second answer is kept."""
    if not queue_consumers().missing(queue):
        return False
    confirmed = consumers_ask(timeout=settings.WORKER_CHECK_TIMEOUT * CONFIRM)
    if confirmed.known:
        with _cache_lock:
            _cache[settings.CELERY_BROKER_URL] = (time.monotonic(), confirmed)
    return confirmed.missing(queue)


def consumers_forget() -> None:
    """Drop the kept answer (tests; after starting or stopping a worker)."""
    with _cache_lock:
        _cache.clear()


def workers_detail(*, timeout: float | None = None) -> Consumers:
    """``consumers_ask`` with each worker's processes and running tasks (three broadcasts at once)."""
    wait = settings.WORKER_CHECK_TIMEOUT if timeout is None else timeout
    if not _broker_reachable():
        return UNKNOWN
    asked = {method: _pool.submit(_inspect(method, wait)) for method in ("active_queues", "stats", "active")}
    replies, stats, active = (_result(asked[method], wait) for method in ("active_queues", "stats", "active"))
    if replies is None:
        return UNKNOWN
    slots = {str(w): int((info.get("pool") or {}).get("max-concurrency", 0)) for w, info in (stats or {}).items()}
    busy = {str(worker): len(tasks or []) for worker, tasks in (active or {}).items()}
    return Consumers(known=True, by_queue=_by_queue(replies), slots=slots, busy=busy)
