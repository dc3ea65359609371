"""``Authorization: Bearer KEY``: the request acts as the key's user, everywhere.

A request that carries a bearer key is authenticated by it alone (a session cookie beside it is
ignored) and needs no CSRF token (a browser cannot add the header cross-site without a CORS
preflight, which ragkg does not answer). An unknown, expired or revoked key gets 401 and counts as a
failure against the client's address; too many failures get 429 with Retry-After, like log-ins. The
key itself is never logged.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse

from apps.accounts import apikeys, throttle
from apps.accounts.views import client_address

OPENAI_PREFIX = "/v1/"


def bearer_token(request: HttpRequest) -> str | None:
    header = str(request.META.get("HTTP_AUTHORIZATION", ""))
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token.strip()


def _refused(request: HttpRequest, *, status: int, code: str, message: str) -> JsonResponse:
    if request.path.startswith(OPENAI_PREFIX):  # the OpenAI error shape for OpenAI clients
        body: dict[str, object] = {"error": {"message": message, "type": code, "code": code, "param": None}}
    else:
        body = {"error": code, "message": message}
    return JsonResponse(body, status=status)


class BearerKeyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        token = bearer_token(request)
        if token is None:
            return self.get_response(request)
        address = client_address(request)
        refusal = throttle.key_refusal(address=address)
        if refusal is not None:
            minutes = max(1, -(-refusal.retry_after // 60))
            refused = _refused(
                request,
                status=429,
                code="too_many_failures",
                message=f"Too many failed API key checks from this address. Try again in {minutes} min.",
            )
            refused["Retry-After"] = str(refusal.retry_after)
            return refused
        key = apikeys.key_check(token)
        if key is None:
            throttle.key_failed(address=address)
            refused = _refused(
                request, status=401, code="invalid_api_key", message="The API key is unknown, expired or revoked."
            )
            refused["WWW-Authenticate"] = 'Bearer realm="ragkg"'
            return refused
        request.user = key.user
        request.api_key = key  # type: ignore[attr-defined]
        request._dont_enforce_csrf_checks = True  # type: ignore[attr-defined]
        return self.get_response(request)
