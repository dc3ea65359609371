"""Personas of the API unit tests: users with keys, the key throttle in memory."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, User

from apps.accounts import apikeys, throttle
from apps.accounts.models import CollectionGrant
from apps.accounts.services import collection_ensure
from tests.unit.security.fakes import MemoryFailureStore


@pytest.fixture(autouse=True)
def failures(monkeypatch: pytest.MonkeyPatch) -> MemoryFailureStore:
    store = MemoryFailureStore()
    monkeypatch.setattr(throttle, "failure_store", lambda: store)
    return store


def keyed(username: str, *roles: str, reads: tuple[str, ...] = ()) -> tuple[User, str]:
    user = User.objects.create_user(username)
    for role in roles:
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    for name in reads:
        CollectionGrant.objects.create(collection=collection_ensure(name=name), user=user)
    return user, apikeys.key_create(user=user, name="test").secret


def bearer(key: str) -> dict[str, Any]:
    return {"HTTP_AUTHORIZATION": f"Bearer {key}"}
