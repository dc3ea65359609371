"""API keys: create, check, list and revoke a user's keys (``Authorization: Bearer KEY``).

A key is ``rkg_<key_id>_<secret>``; only its SHA-256 is stored, so a key is shown once, when it is
made. ``key_check`` finds the key by its public id and compares digests in constant time; an unknown,
malformed, expired or revoked key, or one whose user is inactive, checks as None (the caller counts the
failure against the client's address: apps/accounts/throttle.py).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.utils import timezone

from apps.accounts.models import ApiKey

PREFIX = "rkg_"
_SHAPE = re.compile(r"^rkg_([a-z0-9]{12})_([A-Za-z0-9_-]{43})$")
MAX_NAME = 100
MAX_DAYS = 3650


class ApiKeyError(ValueError):
    """A key cannot be made or revoked as asked (the message says why)."""


@dataclass(frozen=True)
class NewKey:
    """A key just made: ``secret`` is the whole key, shown once and never stored."""

    key: ApiKey
    secret: str


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("ascii")).hexdigest()


def key_create(*, user: User, name: str = "", expires_days: int | None = None) -> NewKey:
    name = name.strip()
    if len(name) > MAX_NAME:
        raise ApiKeyError(f"the name is longer than {MAX_NAME} characters")
    if expires_days is not None and not 1 <= expires_days <= MAX_DAYS:
        raise ApiKeyError(f"expiry is 1 to {MAX_DAYS} days")
    key_id = "".join(secrets.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(12))
    secret = f"{PREFIX}{key_id}_{secrets.token_urlsafe(32)}"
    expires_at = timezone.now() + timedelta(days=expires_days) if expires_days else None
    key = ApiKey.objects.create(key_id=key_id, user=user, name=name, digest=_digest(secret), expires_at=expires_at)
    return NewKey(key=key, secret=secret)


def key_check(secret: str) -> ApiKey | None:
    """The live key ``secret`` is, with its user; None for anything else."""
    shape = _SHAPE.match(secret.strip())
    if shape is None:
        return None
    key = ApiKey.objects.select_related("user").filter(key_id=shape.group(1)).first()
    if key is None or not hmac.compare_digest(key.digest, _digest(secret.strip())):
        return None
    now = timezone.now()
    if key.revoked_at is not None or (key.expires_at is not None and key.expires_at <= now):
        return None
    if not key.user.is_active:
        return None
    if key.last_used_at is None or now - key.last_used_at > timedelta(minutes=1):  # one write a minute at most
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        key.last_used_at = now
    return key


def keys_of(user: User | None = None) -> QuerySet[ApiKey]:
    keys = ApiKey.objects.select_related("user")
    return keys if user is None else keys.filter(user=user)


def key_revoke(*, key_id: str, user: User | None = None) -> ApiKey:
    """Revoke a key (only ``user``'s own when given); revoking twice keeps the first time."""
    key = keys_of(user).filter(key_id=key_id.strip()).first()
    if key is None:
        raise ApiKeyError(f"no key {key_id!r}")
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])
    return key


def key_state(key: ApiKey) -> str:
    if key.revoked_at is not None:
        return "revoked"
    if key.expires_at is not None and key.expires_at <= timezone.now():
        return "expired"
    return "active"


def user_by_name(username: str) -> User:
    user = User.objects.filter(username=username).first()
    if user is None:
        raise ApiKeyError(f"no user {username!r}")
    return user
