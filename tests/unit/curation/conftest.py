"""The curator persona for the curation pages (the outsider is in tests/unit/conftest.py) and the stand-in graph
the views get instead of Neo4j."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from apps.curation import views
from tests.unit.curation.fakes import FakeDriver


@pytest.fixture
def curator_user(db: None) -> User:
    user = User.objects.create_user("cora")
    user.groups.add(Group.objects.get_or_create(name="curator")[0])
    return user


@pytest.fixture
def curator(client: Client, curator_user: User) -> Client:
    client.force_login(curator_user)
    return client


@pytest.fixture
def graph(monkeypatch: pytest.MonkeyPatch) -> FakeDriver:
    """The driver the curation views use; tests add the statements they expect."""
    driver = FakeDriver()
    monkeypatch.setattr(views, "get_driver", lambda: driver)
    return driver
