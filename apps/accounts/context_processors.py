"""The roles of the user a page is rendered for, for the navigation of templates/base.html."""

from __future__ import annotations

from django.http import HttpRequest

from apps.accounts.roles import ROLES, roles_of


def roles(request: HttpRequest) -> dict[str, dict[str, bool]]:
    """``roles.curator``, ``roles.auditor`` … in templates: whether the user holds each role."""
    user = getattr(request, "user", None)
    held = roles_of(user) if user is not None else frozenset()
    return {"roles": {role: role in held for role in ROLES}}
