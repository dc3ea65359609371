"""Personas shared by the unit tests of the pages: a user without any role, and an auditor."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from apps.accounts.models import CollectionGrant
from apps.accounts.services import collection_ensure


@pytest.fixture
def outsider(client: Client, db: None) -> Client:
    """Logged in, with no role and no collection."""
    client.force_login(User.objects.create_user("otto"))
    return client


@pytest.fixture
def auditor(client: Client, db: None) -> Client:
    """Logged in with the auditor role, reading the "demo" collection (where the pages' tests put their answers
    and documents)."""
    user = User.objects.create_user("audrey")
    user.groups.add(Group.objects.get_or_create(name="auditor")[0])
    CollectionGrant.objects.create(collection=collection_ensure(name="demo"), user=user)
    client.force_login(user)
    return client


@pytest.fixture(autouse=True)
def workers_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unit tests never ask real Celery workers which queues they consume: the answer is "unknown"
    (callers go on as if a worker were there) unless a test fakes one (``consumers_fake``)."""
    from apps.core import workers

    workers.consumers_forget()
    monkeypatch.setattr(workers, "consumers_ask", lambda **_: workers.UNKNOWN)
