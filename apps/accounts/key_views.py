"""``/account/keys/``: a logged-in user makes, names and revokes their own API keys.

A new key is shown once, on the page that answers the creation (never stored, never cached); the
list shows ids, labels and states only.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from apps.accounts import apikeys


class KeyForm(forms.Form):
    name = forms.CharField(max_length=apikeys.MAX_NAME, required=False, label="Label")
    expires = forms.IntegerField(
        min_value=1, max_value=apikeys.MAX_DAYS, required=False, label="Expires after (days, empty: never)"
    )


def _page(request: HttpRequest, form: KeyForm, *, new: apikeys.NewKey | None = None, status: int = 200) -> HttpResponse:
    keys = [(key, apikeys.key_state(key)) for key in apikeys.keys_of(request.user)]  # type: ignore[arg-type]
    return render(request, "accounts/keys.html", {"form": form, "keys": keys, "new": new}, status=status)


@never_cache
@login_required
def keys(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        return _page(request, KeyForm())
    form = KeyForm(request.POST)
    if not form.is_valid():
        return _page(request, form, status=400)
    new = apikeys.key_create(
        user=request.user,  # type: ignore[arg-type]
        name=form.cleaned_data["name"] or "",
        expires_days=form.cleaned_data["expires"],
    )
    return _page(request, KeyForm(), new=new)


@require_POST
@login_required
def key_revoke(request: HttpRequest, key_id: str) -> HttpResponse:
    try:
        key = apikeys.key_revoke(key_id=key_id, user=request.user)  # type: ignore[arg-type]
    except apikeys.ApiKeyError:
        messages.error(request, "No such key among yours.")
    else:
        messages.success(
            request, f"Key {key.key_id} ({key.name or 'unnamed'}) is revoked: requests with it now get 401."
        )
    return redirect("api-keys")
