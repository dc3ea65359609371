"""The events of one answer's generation, carried by a Redis stream.

The gpu worker appends ``started``, ``token`` (one per text piece), ``generated`` (the final text, or
"Not found in your documents", before attribution), then ``done`` or ``error``;
readers (the ``ask`` command, the web view) read from the start, so a reader that arrives late
misses nothing. Each stream expires ``ANSWER_STREAM_TTL`` seconds after its last event.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Iterator
from typing import Any

import redis
from django.conf import settings

STARTED, TOKEN, GENERATED, DONE, ERROR = "started", "token", "generated", "done", "error"
FINAL = frozenset({DONE, ERROR})


@functools.cache
def _client(url: str) -> redis.Redis[bytes]:
    return redis.Redis.from_url(url, socket_timeout=10, socket_connect_timeout=2)


def stream_key(answer_id: str) -> str:
    return f"ragkg:answer:{answer_id}"


def stop_key(answer_id: str) -> str:
    return f"ragkg:answer:{answer_id}:stop"


def stop_request(answer_id: str) -> None:
    """Ask the worker generating the answer to stop (it checks between pieces); kept for the stream's TTL."""
    _client(settings.REDIS_URL).set(stop_key(answer_id), b"1", ex=settings.ANSWER_STREAM_TTL)


def stop_requested(answer_id: str) -> bool:
    return bool(_client(settings.REDIS_URL).exists(stop_key(answer_id)))


def event_publish(answer_id: str, event: str, **data: Any) -> None:
    client = _client(settings.REDIS_URL)
    key = stream_key(answer_id)
    client.xadd(key, {"event": event, "data": json.dumps(data)})
    client.expire(key, settings.ANSWER_STREAM_TTL)


def events_read(answer_id: str, *, first_timeout: float, timeout: float) -> Iterator[tuple[str, dict[str, Any]]]:
    """The answer's events in order until a final one. Yields ``("timeout", {"waiting_for": ...})``
    and stops when no ``started`` came within ``first_timeout`` seconds, or the generation ran
    longer than ``timeout`` seconds after it started."""
    client = _client(settings.REDIS_URL)
    key, last, started = stream_key(answer_id), "0-0", False
    begun = time.monotonic()  # reset when the worker starts: queueing is not generation time
    while True:
        limit = (timeout if started else first_timeout) - (time.monotonic() - begun)
        if limit <= 0:
            yield "timeout", {"waiting_for": "generation" if started else "worker"}
            return
        reply = client.xread({key: last}, count=100, block=max(1, int(min(limit, 1.0) * 1000)))
        for _key, entries in reply or []:
            for entry_id, fields in entries:
                last = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
                event = fields[b"event"].decode()
                if not started and event != ERROR:
                    started, begun = True, time.monotonic()
                yield event, json.loads(fields[b"data"])
                if event in FINAL:
                    return
