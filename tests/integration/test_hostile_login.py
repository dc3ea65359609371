"""The log-in throttle against the real Redis: the counters are shared (two clients standing in for
two gunicorn workers see the same count), expire with their window, and a stopped Redis fails open."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest
import redis
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client
from pytest_django.fixtures import Settings

from apps.accounts import throttle

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


@pytest.fixture
def names(live_services: None, settings: Settings) -> Iterator[tuple[str, str]]:
    """A fresh username and client address for this test; their counters are removed after it."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.LOGIN_MAX_FAILURES = 3
    settings.LOGIN_MAX_FAILURES_PER_IP = 100
    settings.LOGIN_WINDOW_SECONDS = 900
    username, address = f"user-{uuid.uuid4().hex[:8]}", f"10.9.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250}"
    User.objects.create_user(username, password="right")
    url = settings.REDIS_URL  # a test may point the throttle elsewhere
    yield username, address
    throttle._client.cache_clear()
    client = redis.Redis.from_url(url)
    client.delete(throttle.username_key(username), throttle.address_key(address))


def attempt(username: str, address: str, password: str = "wrong") -> int:
    return (
        Client(REMOTE_ADDR=address).post("/accounts/login/", {"username": username, "password": password}).status_code
    )


def test_failures_on_one_worker_count_on_the_other(names: tuple[str, str]) -> None:
    username, address = names
    assert [attempt(username, address) for _ in range(3)] == [200, 200, 200]
    throttle._client.cache_clear()  # a second worker: its own connection pool, the same Redis
    response = Client(REMOTE_ADDR=address).post("/accounts/login/", {"username": username, "password": "right"})
    assert response.status_code == 429
    assert 890 <= int(response["Retry-After"]) <= 900
    stored = redis.Redis.from_url(settings.REDIS_URL).get(throttle.username_key(username))
    assert stored == b"3"


def test_the_window_expires(names: tuple[str, str], settings: Settings) -> None:
    username, address = names
    settings.LOGIN_WINDOW_SECONDS = 2
    assert [attempt(username, address) for _ in range(4)] == [200, 200, 200, 429]
    time.sleep(2.5)
    assert attempt(username, address, "right") == 302


def test_a_stopped_redis_fails_open(names: tuple[str, str], settings: Settings) -> None:
    username, address = names
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    assert [attempt(username, address) for _ in range(5)] == [200] * 5
    assert attempt(username, address, "right") == 302
