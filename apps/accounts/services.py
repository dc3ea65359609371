"""Writes to accounts: collections coming into being, grants, public/private, roles.

Collections come into being where documents do (an ingestion job, ``uploads_ingest``,
``documents_ingest``, ``load_demo``) through ``collection_ensure``, so every collection that
holds documents has a row saying who may read it. A new collection is private unless told
otherwise; its owner is the uploading user when one is known.
"""

from __future__ import annotations

import logging

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import Group, User

from apps.accounts.models import Collection, CollectionGrant
from apps.accounts.roles import ROLES

logger = logging.getLogger(__name__)

NAME_MAX = 100


class AccountsError(ValueError):
    """A request about users, groups or collections that cannot be carried out, in plain words."""


class NotFound(AccountsError):
    """The user, group or grant named does not exist."""


def collection_name_check(name: str) -> str:
    """The collection name, stripped; refused when empty, too long, or holding "/" (a document's
    change-log subject is "<collection>/<path>", so the first "/" must end the collection)."""
    cleaned = name.strip()
    if not cleaned:
        raise AccountsError("A collection needs a name.")
    if len(cleaned) > NAME_MAX:
        raise AccountsError(f"A collection name has at most {NAME_MAX} characters.")
    if "/" in cleaned:
        raise AccountsError(f"A collection name cannot contain “/” ({cleaned!r}).")
    return cleaned


def collection_ensure(*, name: str, owner: AbstractBaseUser | None = None, public: bool | None = None) -> Collection:
    """The collection ``name``, created when missing (owned by ``owner``, private unless ``public``).

    An existing collection keeps its owner (uploading into it never claims it); ``public``, when
    given, is applied to it."""
    name = collection_name_check(name)
    user = owner if isinstance(owner, User) else None
    collection, created = Collection.objects.get_or_create(name=name, defaults={"owner": user, "public": bool(public)})
    if created:
        logger.info("collection %s created (owner %s, %s)", name, user, "public" if public else "private")
    elif public is not None and collection.public != public:
        collection.public = public
        collection.save(update_fields=["public"])
    return collection


def _collection(name: str) -> Collection:
    try:
        return Collection.objects.get(name=name)
    except Collection.DoesNotExist:
        known = ", ".join(Collection.objects.values_list("name", flat=True)) or "none yet"
        raise AccountsError(f"No collection named {name!r} (known: {known}).") from None


def _user(username: str) -> User:
    try:
        return User.objects.get(username=username)
    except User.DoesNotExist:
        raise NotFound(f"No user named {username!r}.") from None


def _group(name: str) -> Group:
    try:
        return Group.objects.get(name=name)
    except Group.DoesNotExist:
        raise NotFound(f"No group named {name!r}.") from None


def collection_visibility_set(*, name: str, public: bool) -> Collection:
    """Make a collection readable by everyone (visitors included), or only by its owner, grantees and admins."""
    collection = _collection(name)
    collection.public = public
    collection.save(update_fields=["public"])
    return collection


def collection_grant(
    *, collection: str, username: str | None = None, group: str | None = None, revoke: bool = False
) -> str:
    """Give (or take back) read access to ``collection`` for one user or one group (a group is
    created when missing); returns what was done, in words."""
    if (username is None) == (group is None):
        raise AccountsError("Grant to one user or one group.")
    grant = CollectionGrant(collection=_collection(collection))
    if username is not None:
        grant.user, label = _user(username), f"user {username}"
    elif revoke:  # taking a grant back never creates the group
        grant.group, label = _group(str(group)), f"group {group}"
    else:
        grant.group, created = Group.objects.get_or_create(name=str(group))
        label = f"group {group}" + (" (created)" if created else "")
    grants = CollectionGrant.objects.filter(collection=grant.collection, user=grant.user, group=grant.group)
    if revoke:
        deleted, _ = grants.delete()
        return f"{label} can no longer read {collection}" if deleted else f"{label} held no grant on {collection}"
    if not grants.exists():
        grant.save()
    return f"{label} can read {collection}"


def collection_grant_revoke(*, collection: str, grant_id: int) -> str:
    """Take back the grant ``grant_id`` of ``collection``; NotFound when the collection has none by that id."""
    grant = (
        CollectionGrant.objects.filter(collection_id=collection, pk=grant_id).select_related("user", "group").first()
    )
    if grant is None:
        raise NotFound(f"{collection} has no grant {grant_id}.")
    label = f"user {grant.user.get_username()}" if grant.user is not None else f"group {grant.group}"
    grant.delete()
    return f"{label} can no longer read {collection}"


def group_member_set(*, username: str, group: str, member: bool = True) -> str:
    """Add a user to a group (created when missing), or take them out; roles are groups too."""
    user = _user(username)
    group_row, created = Group.objects.get_or_create(name=group)
    if member:
        user.groups.add(group_row)
        return f"{username} is in group {group}" + (" (created)" if created else "")
    user.groups.remove(group_row)
    return f"{username} is no longer in group {group}"


def role_set(*, username: str, role: str, member: bool = True) -> str:
    """Give a user a role (viewer, curator, auditor, admin), or take it back."""
    if role not in ROLES:
        raise AccountsError(f"No role {role!r} (roles: {', '.join(ROLES)}).")
    return group_member_set(username=username, group=role, member=member)
