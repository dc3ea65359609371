"""Who may read which collection: readable_collections, collections_for, can_read, covers, roles,
and collections coming into being (collection_ensure)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User

from apps.accounts.access import can_read, collections_for, covers, readable_collections
from apps.accounts.models import Collection
from apps.accounts.roles import ADMIN, AUDITOR, CURATOR, ROLES, can_audit, has_role, roles_of
from apps.accounts.services import AccountsError, collection_ensure, collection_name_check
from tests.unit.accounts.conftest import INSIDERS, OUTSIDERS, PRIVATE, PUBLIC, Cast

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("persona", ["owner", "member"])
def test_the_owner_and_the_group_member_read_the_vault_and_the_commons(cast: Cast, persona: str) -> None:
    user = getattr(cast, persona)
    assert readable_collections(user) == [PUBLIC, PRIVATE]
    assert can_read(user, PRIVATE) and can_read(user, PUBLIC)


@pytest.mark.parametrize("persona", OUTSIDERS)
def test_outsiders_and_visitors_read_only_the_commons(cast: Cast, persona: str) -> None:
    user = getattr(cast, persona)
    assert readable_collections(user) == [PUBLIC]
    assert not can_read(user, PRIVATE) and can_read(user, PUBLIC)


def test_admins_read_everything_even_collections_without_a_row(cast: Cast) -> None:
    assert readable_collections(cast.admin) is None
    assert can_read(cast.admin, "never-registered")
    in_admin_group = User.objects.create_user("ada")
    in_admin_group.groups.add(Group.objects.get(name=ADMIN))
    assert readable_collections(in_admin_group) is None


def test_a_collection_without_a_row_is_for_admins_only(cast: Cast) -> None:
    for persona in ("owner", "member", "outsider", "visitor"):
        assert not can_read(getattr(cast, persona), "never-registered")


@pytest.mark.parametrize("persona", OUTSIDERS)
def test_asking_for_the_vault_is_asking_for_a_collection_that_does_not_exist(cast: Cast, persona: str) -> None:
    user = getattr(cast, persona)
    assert collections_for(user, [PRIVATE]) == collections_for(user, ["no-such-collection"]) == []
    assert collections_for(user, [PRIVATE, PUBLIC]) == [PUBLIC]
    assert collections_for(user, None) == [PUBLIC]
    assert collections_for(user, []) == []


@pytest.mark.parametrize("persona", INSIDERS)
def test_insiders_get_what_they_ask_for(cast: Cast, persona: str) -> None:
    user = getattr(cast, persona)
    assert collections_for(user, [PRIVATE]) == [PRIVATE]
    assert collections_for(user, []) == []


def test_only_an_admin_asking_for_everything_gets_no_filter(cast: Cast) -> None:
    assert collections_for(cast.admin, None) is None
    assert collections_for(cast.admin, ["anything"]) == ["anything"]
    assert collections_for(cast.owner, None) == [PUBLIC, PRIVATE]


def test_covers_is_all_or_nothing() -> None:
    assert covers(None, ["x", "y"])
    assert covers(["x", "y"], ["x"]) and covers(["x"], [])
    assert not covers(["x"], ["x", "y"]) and not covers([], ["x"])


def test_a_grant_taken_back_closes_the_vault(cast: Cast) -> None:
    from apps.accounts.services import collection_grant

    collection_grant(collection=PRIVATE, group="team", revoke=True)
    assert readable_collections(cast.member) == [PUBLIC]
    assert readable_collections(cast.owner) == [PUBLIC, PRIVATE]


# --- roles -----------------------------------------------------------------------------------


def test_the_migration_creates_the_four_role_groups() -> None:
    assert set(ROLES) <= set(Group.objects.values_list("name", flat=True))


def test_roles_of_each_persona(cast: Cast) -> None:
    assert roles_of(cast.outsider) == {AUDITOR}
    assert roles_of(cast.admin) == set(ROLES)
    assert roles_of(cast.visitor) == frozenset()
    admin = User.objects.create_user("ada")
    admin.groups.add(Group.objects.get(name=ADMIN))
    assert roles_of(admin) == set(ROLES) and has_role(admin, CURATOR)
    assert can_audit(cast.outsider) and not can_audit(cast.visitor)
    with pytest.raises(ValueError, match="unknown role"):
        has_role(cast.owner, "emperor")


# --- collections come into being --------------------------------------------------------------


def test_a_new_collection_is_private_and_owned_by_its_uploader(cast: Cast) -> None:
    created = collection_ensure(name="  research ", owner=cast.outsider)
    assert (created.name, created.public, created.owner) == ("research", False, cast.outsider)
    assert readable_collections(cast.outsider) == [PUBLIC, "research"]


def test_an_existing_collection_keeps_its_owner_and_takes_public_when_given(cast: Cast) -> None:
    again = collection_ensure(name=PRIVATE, owner=cast.outsider)
    assert again.owner == cast.owner and not again.public
    collection_ensure(name=PRIVATE, public=True)
    assert Collection.objects.get(name=PRIVATE).public
    collection_ensure(name=PRIVATE)  # public=None leaves it as it is
    assert Collection.objects.get(name=PRIVATE).public


@pytest.mark.parametrize("name", ["", "   ", "a/b", "x" * 101])
def test_bad_collection_names_are_refused(name: str) -> None:
    with pytest.raises(AccountsError):
        collection_name_check(name)
    with pytest.raises(AccountsError):
        collection_ensure(name=name)
