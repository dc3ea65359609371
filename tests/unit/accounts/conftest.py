"""The cast of the access tests, as stories: an owner with a private collection ("vault"), a member
who reads it through a group ("team"), an outsider with no grant, an anonymous visitor, and an admin.
"commons" is public. Owner, member and outsider are staff and auditors, so that what they see differs
only by their collections, never by their roles."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.contrib.auth.models import AnonymousUser, User
from django.test import Client

from apps.accounts.roles import AUDITOR
from apps.accounts.services import collection_ensure, collection_grant, group_member_set, role_set

PRIVATE, PUBLIC = "vault", "commons"


@dataclass(frozen=True)
class Cast:
    owner: User
    member: User
    outsider: User
    admin: User
    visitor: AnonymousUser

    def client(self, persona: str) -> Client:
        """A client logged in as ``persona`` (the visitor's is not logged in)."""
        client = Client()
        if persona != "visitor":
            client.force_login(getattr(self, persona))
        return client


@pytest.fixture
def cast(db: None) -> Cast:
    # No passwords (hashing one takes a while): the tests log in with force_login.
    owner, member, outsider = (User.objects.create_user(name, is_staff=True) for name in PEOPLE)
    admin = User.objects.create_superuser("root")
    collection_ensure(name=PUBLIC, public=True)
    collection_ensure(name=PRIVATE, owner=owner)
    collection_grant(collection=PRIVATE, group="team")
    group_member_set(username="member", group="team")
    for user in (owner, member, outsider):
        role_set(username=user.username, role=AUDITOR)
    return Cast(owner, member, outsider, admin, AnonymousUser())


PEOPLE = ("owner", "member", "outsider")
INSIDERS = ("owner", "member", "admin")  # who may read the vault
OUTSIDERS = ("outsider", "visitor")


@pytest.fixture(autouse=True)
def login_throttle_in_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """Log-in tests count failures in memory, never in whatever Redis happens to run."""
    from apps.accounts import throttle
    from tests.unit.security.fakes import MemoryFailureStore

    store = MemoryFailureStore()
    monkeypatch.setattr(throttle, "failure_store", lambda: store)
