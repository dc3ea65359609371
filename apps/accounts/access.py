"""Which collections a user may read: the one rule every retrieval path applies.

``readable_collections`` is passed down to where data is fetched (the FAISS collection filter and
the collection predicate of every Cypher query), so a question can never be answered from, cite or
reveal a document of a collection its asker cannot read. The pages that list stored records (the
answers' audit pages, the change log, ingestion jobs) filter with the same list.

What the values mean, everywhere: a list is exactly the collections allowed, so an empty list
allows nothing; None allows every collection and is only ever returned for admins. A collection
without a ``Collection`` row (documents ingested before accounts existed and not backfilled) is
readable by admins only.
"""

from __future__ import annotations

from collections.abc import Collection as Names
from collections.abc import Iterable, Sequence

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser, PermissionsMixin
from django.db.models import Q

from apps.accounts.models import Collection
from apps.accounts.roles import ADMIN, has_role

User = AbstractBaseUser | AnonymousUser


def readable_collections(user: User) -> list[str] | None:
    """The collections ``user`` may read, sorted; None means every collection (admins)."""
    if has_role(user, ADMIN):
        return None
    readable = Q(public=True)
    if user.is_authenticated and isinstance(user, PermissionsMixin):
        readable |= Q(owner=user) | Q(grants__user=user) | Q(grants__group__in=user.groups.all())
    return sorted(set(Collection.objects.filter(readable).values_list("name", flat=True)))


def can_read(user: User, collection: str) -> bool:
    allowed = readable_collections(user)
    return allowed is None or collection in allowed


def collections_for(user: User, requested: Sequence[str] | None) -> list[str] | None:
    """What a request may search: the requested collections the user can read (all readable ones
    when none are named). None only for admins asking for everything. A collection the user cannot
    read is dropped silently, exactly like one that does not exist."""
    allowed = readable_collections(user)
    if allowed is None:
        return None if requested is None else list(requested)
    if requested is None:
        return allowed
    return [name for name in requested if name in allowed]


def covers(allowed: Names[str] | None, collections: Iterable[str]) -> bool:
    """Whether ``allowed`` (what ``readable_collections`` gave) includes every one of ``collections``."""
    return allowed is None or all(name in allowed for name in collections)
