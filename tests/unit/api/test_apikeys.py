"""API keys: made once and stored hashed, checked in constant time, expired and revoked keys refused,
the middleware acting as the key's user without CSRF, failed checks throttled like log-ins."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from apps.accounts import apikeys
from apps.accounts.models import ApiKey
from tests.unit.api.conftest import bearer, keyed

pytestmark = pytest.mark.django_db


def test_a_key_is_stored_only_as_its_digest_and_checks_back_to_its_user() -> None:
    user = User.objects.create_user("kim")
    made = apikeys.key_create(user=user, name="laptop", expires_days=30)
    stored = ApiKey.objects.get(pk=made.key.key_id)
    assert made.secret.startswith(f"rkg_{stored.key_id}_")
    assert made.secret not in str(stored.__dict__.values())
    assert len(stored.digest) == 64 and stored.name == "laptop"
    assert stored.expires_at is not None and stored.expires_at > timezone.now() + timedelta(days=29)
    checked = apikeys.key_check(made.secret)
    assert checked is not None and checked.user == user and checked.last_used_at is not None


@pytest.mark.parametrize("mangle", [lambda s: s[:-1] + ("A" if s[-1] != "A" else "B"), lambda s: s + "x", str.upper])
def test_a_changed_key_checks_as_nothing(mangle: object) -> None:
    made = apikeys.key_create(user=User.objects.create_user("kim"))
    assert apikeys.key_check(mangle(made.secret)) is None  # type: ignore[operator]
    assert apikeys.key_check("") is None and apikeys.key_check("rkg_nothing") is None


def test_revoked_expired_and_inactive_keys_are_refused() -> None:
    user = User.objects.create_user("kim")
    revoked, expired, live = (apikeys.key_create(user=user) for _ in range(3))
    apikeys.key_revoke(key_id=revoked.key.key_id)
    ApiKey.objects.filter(pk=expired.key.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert apikeys.key_check(revoked.secret) is None
    assert apikeys.key_check(expired.secret) is None
    assert apikeys.key_check(live.secret) is not None
    User.objects.filter(pk=user.pk).update(is_active=False)
    assert apikeys.key_check(live.secret) is None
    states = [apikeys.key_state(ApiKey.objects.get(pk=k.key.pk)) for k in (revoked, expired, live)]
    assert states == ["revoked", "expired", "active"]


def test_a_user_revokes_only_their_own_keys() -> None:
    own = apikeys.key_create(user=User.objects.create_user("kim"))
    other = apikeys.key_create(user=User.objects.create_user("lee"))
    with pytest.raises(apikeys.ApiKeyError):
        apikeys.key_revoke(key_id=other.key.key_id, user=own.key.user)
    assert apikeys.key_check(other.secret) is not None


def test_bad_names_and_expiries_are_refused() -> None:
    user = User.objects.create_user("kim")
    with pytest.raises(apikeys.ApiKeyError, match="longer"):
        apikeys.key_create(user=user, name="x" * 101)
    with pytest.raises(apikeys.ApiKeyError, match="days"):
        apikeys.key_create(user=user, expires_days=0)
    assert not ApiKey.objects.exists()


def test_the_command_prints_the_key_last_lists_without_it_and_revokes() -> None:
    User.objects.create_user("kim")
    out = StringIO()
    call_command("apikeys", "create", "kim", "--name", "ci", "--expires", "7", stdout=out)
    secret = out.getvalue().strip().splitlines()[-1]
    key = apikeys.key_check(secret)
    assert key is not None and key.name == "ci"
    listing = StringIO()
    call_command("apikeys", "list", "kim", stdout=listing)
    assert key.key_id in listing.getvalue() and secret not in listing.getvalue() and "active" in listing.getvalue()
    call_command("apikeys", "revoke", key.key_id, stdout=StringIO())
    assert apikeys.key_check(secret) is None
    with pytest.raises(CommandError, match="no user"):
        call_command("apikeys", "create", "nobody", stdout=StringIO())


def test_a_bearer_key_acts_as_its_user_and_needs_no_csrf_token() -> None:
    _user, key = keyed("kim")
    client = Client(enforce_csrf_checks=True)
    page = client.get("/account/keys/", **bearer(key))
    assert page.status_code == 200 and b"kim" in page.content
    made = client.post("/account/keys/", {"name": "second"}, **bearer(key))
    assert made.status_code == 200 and ApiKey.objects.filter(name="second").exists()
    assert client.post("/account/keys/", {"name": "third"}).status_code in (302, 403)  # no key, no session


def test_unknown_keys_get_401_and_too_many_get_429_with_retry_after(settings: object) -> None:
    client = Client()
    for _ in range(settings.LOGIN_MAX_FAILURES_PER_IP):  # type: ignore[attr-defined]
        refused = client.get("/api/v1/collections", HTTP_AUTHORIZATION="Bearer rkg_wrong")
        assert refused.status_code == 401
        assert refused.json()["error"] == "invalid_api_key" and "Bearer" in refused["WWW-Authenticate"]
    _user, key = keyed("kim")
    throttled = client.get("/api/v1/collections", **bearer(key))
    assert throttled.status_code == 429 and int(throttled["Retry-After"]) > 0


def test_openai_paths_get_openai_shaped_refusals() -> None:
    refused = Client().get("/v1/models", HTTP_AUTHORIZATION="Bearer nope")
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "invalid_api_key"


def test_the_keys_page_shows_a_new_key_once_and_revokes() -> None:
    user = User.objects.create_user("kim")
    client = Client()
    client.force_login(user)
    made = client.post("/account/keys/", {"name": "script", "expires": "10"})
    assert made.status_code == 200 and made["Cache-Control"].startswith("max-age=0")
    key = ApiKey.objects.get(user=user)
    secret = made.content.decode().split('<code id="new-key">')[1].split("</code>")[0]
    assert apikeys.key_check(secret) is not None
    again = client.get("/account/keys/")
    assert secret not in again.content.decode() and key.key_id in again.content.decode()
    assert client.post("/account/keys/", {"expires": "0"}).status_code == 400
    gone = client.post(f"/account/keys/{key.key_id}/revoke/", follow=True)
    assert b"is revoked" in gone.content and apikeys.key_check(secret) is None
    other = apikeys.key_create(user=User.objects.create_user("lee"))
    client.post(f"/account/keys/{other.key.key_id}/revoke/")
    assert apikeys.key_check(other.secret) is not None
