"""In-memory stand-ins for the security tests."""

from __future__ import annotations

import redis


class MemoryFailureStore:
    """The log-in throttle's counters in a dict (a fixed window per key; time does not pass)."""

    def __init__(self) -> None:
        self.counters: dict[str, tuple[int, int]] = {}

    def counts(self, keys: list[str]) -> list[tuple[int, int]]:
        return [self.counters.get(key, (0, 0)) for key in keys]

    def add(self, keys: list[str], *, window: int) -> None:
        for key in keys:
            count, ttl = self.counters.get(key, (0, window))
            self.counters[key] = (count + 1, ttl)

    def clear(self, key: str) -> None:
        self.counters.pop(key, None)


class DownFailureStore:
    """A store whose Redis is unreachable."""

    def counts(self, keys: list[str]) -> list[tuple[int, int]]:
        raise redis.ConnectionError("connection refused")

    def add(self, keys: list[str], *, window: int) -> None:
        raise redis.ConnectionError("connection refused")

    def clear(self, key: str) -> None:
        raise redis.ConnectionError("connection refused")
