"""`manage.py grant`: grants to users and groups, roles, public/private, and clear errors."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import CommandError, call_command

from apps.accounts.access import readable_collections
from apps.accounts.models import Collection
from apps.accounts.roles import CURATOR, has_role
from apps.accounts.services import collection_ensure

pytestmark = pytest.mark.django_db


def grant(*args: str) -> str:
    out = StringIO()
    call_command("grant", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def ana() -> User:
    collection_ensure(name="research")
    return User.objects.create_user("ana")


def test_a_user_grant_opens_the_collection_and_revoke_closes_it(ana: User) -> None:
    assert readable_collections(ana) == []
    assert "user ana can read research" in grant("--user", "ana", "--collection", "research")
    grant("--user", "ana", "--collection", "research")  # twice is once
    assert readable_collections(ana) == ["research"]
    assert "can no longer read" in grant("--user", "ana", "--collection", "research", "--revoke")
    assert readable_collections(ana) == []


def test_a_group_grant_reaches_the_groups_members(ana: User) -> None:
    assert "(created)" in grant("--group", "team", "--collection", "research")
    assert readable_collections(ana) == []
    assert "ana is in group team" in grant("--group", "team", "--user", "ana")
    assert readable_collections(ana) == ["research"]


def test_revoking_for_a_group_that_does_not_exist_is_an_error_and_creates_nothing(ana: User) -> None:
    with pytest.raises(CommandError, match="No group named 'ghosts'"):
        grant("--group", "ghosts", "--collection", "research", "--revoke")
    assert not Group.objects.filter(name="ghosts").exists()


def test_roles(ana: User) -> None:
    assert "ana is in group curator" in grant("--role", "curator", "--user", "ana")
    assert has_role(ana, CURATOR)
    grant("--role", "curator", "--user", "ana", "--revoke")
    assert not has_role(ana, CURATOR)


def test_public_and_private(ana: User) -> None:
    assert grant("--public", "research").strip() == "research is public"
    assert Collection.objects.get(name="research").public and readable_collections(ana) == ["research"]
    assert grant("--private", "research").strip() == "research is private"
    assert readable_collections(ana) == []


def test_the_list(ana: User) -> None:
    grant("--group", "team", "--collection", "research")
    grant("--user", "ana", "--collection", "research")
    assert "research  private  owner —  readers: group team, user ana" in grant("--list")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--user", "nobody", "--collection", "research"], "No user named 'nobody'"),
        (["--user", "ana", "--collection", "nowhere"], "No collection named 'nowhere' (known: research)"),
        (["--public", "nowhere"], "No collection named 'nowhere'"),
        (["--role", "curator"], "--role needs --user"),
        (["--collection", "research"], "--collection needs --user or --group"),
        (["--user", "ana", "--group", "team", "--collection", "research"], "--collection needs --user or --group"),
        (["--public", "research", "--private", "research"], "not both"),
        ([], "Nothing to do"),
    ],
)
def test_clear_errors(ana: User, args: list[str], message: str) -> None:
    with pytest.raises(CommandError) as raised:
        grant(*args)
    assert message in str(raised.value)


def test_an_unknown_role_is_refused_by_the_parser(ana: User) -> None:
    with pytest.raises(CommandError, match="invalid choice"):
        grant("--role", "emperor", "--user", "ana")
