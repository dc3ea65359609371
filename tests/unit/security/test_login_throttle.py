"""Log-in brute force: after RAGKG_LOGIN_MAX_FAILURES failures a username (existing or not) or a
client address gets HTTP 429 with Retry-After, the same answer either way; Redis down fails open."""

from __future__ import annotations

import logging

import pytest
from django.contrib.auth.models import User
from django.test import Client
from pytest_django.fixtures import Settings

from apps.accounts import throttle
from tests.unit.security.fakes import DownFailureStore, MemoryFailureStore

LOGIN = "/accounts/login/"


@pytest.fixture
def alice(db: None, settings: Settings) -> User:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.LOGIN_MAX_FAILURES = 3
    settings.LOGIN_MAX_FAILURES_PER_IP = 6
    settings.LOGIN_WINDOW_SECONDS = 900
    return User.objects.create_user("alice", password="correct horse")


def attempt(username: str, password: str = "wrong", address: str = "10.0.0.1") -> int:
    response = Client(REMOTE_ADDR=address).post(LOGIN, {"username": username, "password": password})
    return response.status_code


def test_failures_up_to_the_limit_get_the_form_again_then_429(alice: User) -> None:
    assert [attempt("alice") for _ in range(3)] == [200, 200, 200]
    response = Client(REMOTE_ADDR="10.0.0.1").post(LOGIN, {"username": "alice", "password": "wrong"})
    assert response.status_code == 429
    assert response["Retry-After"] == "900"
    assert "Too many failed log-in attempts. Try again in 15 minutes." in response.content.decode()


def test_the_right_password_is_refused_too_while_blocked(alice: User) -> None:
    for _ in range(3):
        attempt("alice", address="10.0.0.2")
    assert attempt("alice", "correct horse", address="10.0.0.3") == 429


def test_an_unknown_username_gets_the_same_answers(alice: User) -> None:
    known = [attempt("alice", address="10.1.0.1") for _ in range(4)]
    unknown = [attempt("nobody", address="10.1.0.2") for _ in range(4)]
    assert known == unknown == [200, 200, 200, 429]
    body = Client(REMOTE_ADDR="10.1.0.3").post(LOGIN, {"username": "nobody", "password": "x"}).content.decode()
    assert "Too many failed log-in attempts" in body and "nobody" not in body.split("<form")[0]


def test_usernames_are_counted_case_insensitively(alice: User) -> None:
    for name in ("alice", "ALICE", " Alice"):
        attempt(name, address="10.2.0.1")
    assert attempt("aLiCe", address="10.2.0.9") == 429


def test_one_address_is_refused_after_its_own_limit_across_usernames(alice: User) -> None:
    codes = [attempt(f"user{n}", address="10.3.0.1") for n in range(7)]
    assert codes == [200] * 6 + [429]
    assert attempt("alice", "correct horse", address="10.3.0.2") == 302


def test_success_clears_the_usernames_failures(alice: User) -> None:
    attempt("alice", address="10.4.0.1")
    attempt("alice", address="10.4.0.1")
    assert attempt("alice", "correct horse", address="10.4.0.1") == 302
    assert [attempt("alice", address="10.4.0.2") for _ in range(3)] == [200, 200, 200]


def test_usernames_are_stored_hashed(alice: User, failures: MemoryFailureStore) -> None:
    attempt("alice", address="10.5.0.1")
    assert failures.counters and not any("alice" in key for key in failures.counters)


def test_get_and_csrf_failures_are_not_counted(alice: User, failures: MemoryFailureStore) -> None:
    assert Client().get(LOGIN).status_code == 200
    assert Client(enforce_csrf_checks=True).post(LOGIN, {"username": "alice", "password": "x"}).status_code == 403
    assert failures.counters == {}


def test_zero_turns_the_throttle_off(alice: User, settings: Settings) -> None:
    settings.LOGIN_MAX_FAILURES = 0
    settings.LOGIN_MAX_FAILURES_PER_IP = 0
    assert {attempt("alice") for _ in range(5)} == {200}


def test_redis_down_fails_open_and_logs(
    alice: User, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(throttle, "failure_store", DownFailureStore)
    with caplog.at_level(logging.WARNING, logger="apps.accounts.throttle"):
        assert [attempt("alice") for _ in range(5)] == [200] * 5
        assert attempt("alice", "correct horse") == 302
    assert "log-in throttle unavailable" in caplog.text


def test_retry_after_is_what_is_left_of_the_window(alice: User, failures: MemoryFailureStore) -> None:
    failures.counters[throttle.username_key("alice")] = (3, 61)
    refusal = throttle.login_refusal(username="alice", address="10.6.0.1")
    assert refusal is not None and refusal.retry_after == 61
    assert refusal.message == "Too many failed log-in attempts. Try again in 2 minutes."
