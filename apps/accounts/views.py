"""The log-in page: Django's LoginView behind the failed-log-in throttle (apps/accounts/throttle.py)."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest, HttpResponseBase
from django.shortcuts import render

from apps.accounts import throttle

_login = auth_views.LoginView.as_view(template_name="accounts/login.html", redirect_authenticated_user=True)


def client_address(request: HttpRequest) -> str:
    """The address the request came from (the connection's; see docs/access.md behind a proxy)."""
    return str(request.META.get("REMOTE_ADDR") or "unknown")


def login(request: HttpRequest) -> HttpResponseBase:
    if request.method != "POST":
        return _login(request)
    username = str(request.POST.get("username", ""))[:300]
    address = client_address(request)
    refusal = throttle.login_refusal(username=username, address=address)
    if refusal is not None:
        refused = render(
            request,
            "accounts/login.html",
            {"throttled": refusal.message, "form": AuthenticationForm(request), "next": request.POST.get("next", "")},
            status=429,
        )
        refused["Retry-After"] = str(refusal.retry_after)
        return refused
    response = _login(request)
    if response.status_code in (301, 302) and request.user.is_authenticated:
        throttle.login_succeeded(username=username)
    elif response.status_code == 200:
        throttle.login_failed(username=username, address=address)
    return response
