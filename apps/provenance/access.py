"""Who may audit answers: superusers and members of the "auditor" group."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AnonymousUser, PermissionsMixin
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

AUDITOR_GROUP = "auditor"

View = Callable[..., HttpResponse]


def can_audit(user: AbstractBaseUser | AnonymousUser) -> bool:
    """Whether ``user`` may see answers' provenance: logged in, and a superuser or an auditor."""
    if not user.is_authenticated or not isinstance(user, PermissionsMixin):
        return False
    return user.is_superuser or user.groups.filter(name=AUDITOR_GROUP).exists()


def audit_required(view: View) -> View:
    """Send visitors to log in; answer 403 with a plain page to users who may not audit."""

    @wraps(view)
    def guarded(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        if not can_audit(request.user):
            return render(request, "provenance/forbidden.html", {"group": AUDITOR_GROUP}, status=403)
        return view(request, *args, **kwargs)

    return login_required(guarded)
