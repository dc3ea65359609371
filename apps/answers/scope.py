"""Which collections a retrieval may draw from: a collection of names, or ``EVERY_COLLECTION``.

Every retrieval layer (seeds, expansion, unit details) takes a ``Scope`` and turns it into the
filter the vector store and the Cypher statements take with ``scope_names``:

- a list (or set, or tuple) of names is exactly what may be read: an empty one finds nothing;
- ``EVERY_COLLECTION`` is no filter at all: admins, and the operator's command line;
- ``None`` is refused (``TypeError``), so a caller that forgot to work out the asker's collections
  fails loudly instead of searching everything; so is a bare string (it would be read letter by letter).

The web edges get their scope from ``answer_scope`` (the asker's readable collections).
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Sequence
from typing import Final

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser

from apps.accounts.access import collections_for


class EveryCollection(enum.Enum):
    EVERY = "every collection"


EVERY_COLLECTION: Final = EveryCollection.EVERY
Scope = Collection[str] | EveryCollection


def scope_names(scope: Scope) -> list[str] | None:
    """The collection filter for the vector store and Cypher: the sorted names (``[]``: nothing),
    or None for ``EVERY_COLLECTION``."""
    if scope is EVERY_COLLECTION:
        return None
    value: object = scope
    if value is None or isinstance(value, str | bytes) or not isinstance(value, Collection):
        raise TypeError(
            f"a retrieval scope is a collection of names or EVERY_COLLECTION, not {scope!r} "
            "(work out the asker's collections with apps.answers.scope.answer_scope)"
        )
    return sorted(set(scope))


def scope_of(allowed: Sequence[str] | None) -> Scope:
    """The scope of what ``apps.accounts.access`` allows (None there: an admin, every collection)."""
    return EVERY_COLLECTION if allowed is None else list(allowed)


def answer_scope(*, user: AbstractBaseUser | AnonymousUser, requested: Sequence[str] | None) -> Scope:
    """What ``user`` may search when asking over ``requested`` (None: every collection they can
    read). A requested collection they cannot read is dropped exactly like one that does not exist,
    so the two cannot be told apart; when nothing is left the scope is empty and nothing is found."""
    return scope_of(collections_for(user, requested))
