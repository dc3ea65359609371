"""Log-in throttle: failed log-ins counted per username and per client address, in Redis.

Every gunicorn worker (and every web machine) shares the counters, so the limit holds however the
requests are spread. Each counter is a fixed window: the first failure starts it, it expires
``LOGIN_WINDOW_SECONDS`` later. Once a counter reaches its limit, further attempts for that username
(whether it exists or not: the username is counted, not the account) or from that address are
refused with HTTP 429 until the window ends, even with the right password.

The username is stored hashed (SHA-256 of its case-folded form), so Redis holds no user names.
When Redis cannot be reached the throttle fails *open*: the log-in goes on and a warning is
logged (docs/access.md says why).
"""

from __future__ import annotations

import functools
import hashlib
import logging
from dataclasses import dataclass
from typing import Protocol

import redis
from django.conf import settings

logger = logging.getLogger(__name__)

KEY_PREFIX = "ragkg:login-failures:"


class FailureStore(Protocol):
    """Counters that expire: the throttle's storage (Redis; an in-memory fake in unit tests)."""

    def counts(self, keys: list[str]) -> list[tuple[int, int]]:
        """(count, seconds left) for each key; (0, 0) for a key that is not set."""
        ...

    def add(self, keys: list[str], *, window: int) -> None:
        """Add one to each key; a new key expires ``window`` seconds from now."""
        ...

    def clear(self, key: str) -> None: ...


class RedisFailureStore:
    def __init__(self, client: redis.Redis[bytes]) -> None:
        self.client = client

    def counts(self, keys: list[str]) -> list[tuple[int, int]]:
        pipe = self.client.pipeline(transaction=False)
        for key in keys:
            pipe.get(key)
            pipe.ttl(key)
        values = pipe.execute()
        return [(int(values[i] or 0), max(0, int(values[i + 1]))) for i in range(0, len(values), 2)]

    def add(self, keys: list[str], *, window: int) -> None:
        pipe = self.client.pipeline(transaction=True)
        for key in keys:
            pipe.incr(key)
            pipe.expire(key, window, nx=True)
        pipe.execute()

    def clear(self, key: str) -> None:
        self.client.delete(key)


@functools.cache
def _client(url: str, timeout: float) -> redis.Redis[bytes]:
    return redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)


def failure_store() -> FailureStore:
    return RedisFailureStore(_client(settings.REDIS_URL, settings.LOGIN_THROTTLE_TIMEOUT))


@dataclass(frozen=True)
class Refusal:
    """A log-in attempt refused by the throttle, and for how long."""

    retry_after: int

    @property
    def message(self) -> str:
        minutes = max(1, -(-self.retry_after // 60))
        unit = "minute" if minutes == 1 else "minutes"
        return f"Too many failed log-in attempts. Try again in {minutes} {unit}."


def username_key(username: str) -> str:
    digest = hashlib.sha256(username.strip().casefold().encode("utf-8", "surrogatepass")).hexdigest()
    return f"{KEY_PREFIX}user:{digest}"


def address_key(address: str) -> str:
    return f"{KEY_PREFIX}ip:{address}"


def _limits(username: str, address: str) -> list[tuple[str, int]]:
    pairs = [
        (username_key(username), settings.LOGIN_MAX_FAILURES),
        (address_key(address), settings.LOGIN_MAX_FAILURES_PER_IP),
    ]
    return [(key, limit) for key, limit in pairs if limit > 0]


def login_refusal(*, username: str, address: str, store: FailureStore | None = None) -> Refusal | None:
    """A Refusal when the username or the address has used up its failures; None otherwise (or if
    the store is down: fail open)."""
    limits = _limits(username, address)
    if not limits:
        return None
    try:
        counts = (store or failure_store()).counts([key for key, _ in limits])
    except redis.RedisError as exc:
        logger.warning("log-in throttle unavailable, letting the attempt through: %s", exc)
        return None
    waits = [
        ttl or settings.LOGIN_WINDOW_SECONDS
        for (count, ttl), (_, limit) in zip(counts, limits, strict=True)
        if count >= limit
    ]
    return Refusal(retry_after=max(waits)) if waits else None


def login_failed(*, username: str, address: str, store: FailureStore | None = None) -> None:
    """Count one failed log-in against the username and the address."""
    keys = [key for key, _ in _limits(username, address)]
    if not keys:
        return
    try:
        (store or failure_store()).add(keys, window=settings.LOGIN_WINDOW_SECONDS)
    except redis.RedisError as exc:
        logger.warning("log-in throttle unavailable, failure not counted: %s", exc)


def login_succeeded(*, username: str, store: FailureStore | None = None) -> None:
    """A successful log-in clears the username's failures (the address keeps its count)."""
    try:
        (store or failure_store()).clear(username_key(username))
    except redis.RedisError as exc:
        logger.warning("log-in throttle unavailable, failures not cleared: %s", exc)


def key_address_key(address: str) -> str:
    return f"{KEY_PREFIX}key-ip:{address}"


def key_refusal(*, address: str, store: FailureStore | None = None) -> Refusal | None:
    """A Refusal when ``address`` has sent too many unknown API keys (the log-in limits per address)."""
    limit = settings.LOGIN_MAX_FAILURES_PER_IP
    if limit <= 0:
        return None
    try:
        ((count, ttl),) = (store or failure_store()).counts([key_address_key(address)])
    except redis.RedisError as exc:
        logger.warning("API key throttle unavailable, letting the request through: %s", exc)
        return None
    return Refusal(retry_after=ttl or settings.LOGIN_WINDOW_SECONDS) if count >= limit else None


def key_failed(*, address: str, store: FailureStore | None = None) -> None:
    """Count one failed API key check against the address."""
    if settings.LOGIN_MAX_FAILURES_PER_IP <= 0:
        return
    try:
        (store or failure_store()).add([key_address_key(address)], window=settings.LOGIN_WINDOW_SECONDS)
    except redis.RedisError as exc:
        logger.warning("API key throttle unavailable, failure not counted: %s", exc)
