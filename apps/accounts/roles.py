"""Roles: viewer, curator, auditor and admin, each a Django group of that name.

Superusers hold every role, and so do members of the "admin" group. A role is checked with
``has_role`` in services and with ``role_required`` on views (visitors are sent to log in; users
without the role get a plain 403). Roles say which pages a user may open; which documents they
may see there is the collections' business (apps.accounts.access).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AnonymousUser, PermissionsMixin
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

VIEWER, CURATOR, AUDITOR, ADMIN = "viewer", "curator", "auditor", "admin"
ROLES = (VIEWER, CURATOR, AUDITOR, ADMIN)

View = Callable[..., HttpResponse]


def has_role(user: AbstractBaseUser | AnonymousUser, role: str) -> bool:
    """Whether ``user`` is logged in and holds ``role`` (superusers and admins hold every role)."""
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}")
    if not user.is_authenticated or not isinstance(user, PermissionsMixin):
        return False
    if user.is_superuser:
        return True
    return user.groups.filter(name__in={role, ADMIN}).exists()


def roles_of(user: AbstractBaseUser | AnonymousUser) -> frozenset[str]:
    """Every role ``user`` holds, in one query (for the navigation)."""
    if not user.is_authenticated or not isinstance(user, PermissionsMixin):
        return frozenset()
    if user.is_superuser:
        return frozenset(ROLES)
    held = frozenset(user.groups.filter(name__in=ROLES).values_list("name", flat=True))
    return frozenset(ROLES) if ADMIN in held else held


def role_required(role: str) -> Callable[[View], View]:
    """A view decorator: log in first, then ``role`` (403 with a plain page otherwise)."""

    def decorate(view: View) -> View:
        @wraps(view)
        def guarded(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
            if not has_role(request.user, role):
                return render(request, "accounts/forbidden.html", {"role": role}, status=403)
            return view(request, *args, **kwargs)

        return login_required(guarded)

    return decorate


def can_audit(user: AbstractBaseUser | AnonymousUser) -> bool:
    """Whether ``user`` may open the audit pages (answers' provenance, the change log)."""
    return has_role(user, AUDITOR)


audit_required = role_required(AUDITOR)
