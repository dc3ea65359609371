"""``/mcp``: the MCP server (apps/api/mcp_server.py) over Streamable HTTP, served by the WSGI site.

The SDK's Streamable HTTP transport is an ASGI app; the site is Django under gunicorn's threads. Each
request is bridged: its method, headers and body become an ASGI ``http`` scope and one body message, the
SDK's app (stateless, JSON responses) runs on an event loop of its own for this request
(``async_to_sync``, so the tools' ORM calls come back to this request's thread), and the status, headers
and body it sends become the HttpResponse. Stateless means every POST stands alone: no ``Mcp-Session-Id``,
no server-sent stream, so GET (the stream) and DELETE (ending a session) answer 405 and nothing is held
between requests. Both protocol eras work: a 2026-07-28 client's single-exchange requests and a
handshake-era client's ``initialize`` then its calls.

A key is required (``Authorization: Bearer KEY``, apps/accounts/middleware.py): without one the answer
is 401 with ``WWW-Authenticate``; an unknown, expired or revoked key never gets here (the middleware
answers 401). The tools run as the key's user. Authorization and cookies are not passed to the SDK.
"""

from __future__ import annotations

from typing import Any

import anyio
from asgiref.sync import async_to_sync
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import Message

from apps.api import mcp_server

PATH = "/mcp"
# Host and Origin are Django's to check (ALLOWED_HOSTS); a cross-site page cannot send the bearer key.
NO_HOST_CHECK = TransportSecuritySettings(enable_dns_rebinding_protection=False)
WITHHELD = frozenset({"authorization", "cookie"})
# Hop-by-hop headers are the WSGI server's (PEP 3333 forbids them to apps); it also sets Content-Length.
NOT_PASSED_BACK = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "content-length",
    }
)


class Exchange:
    """One request's ASGI messages: the body goes in once; what the app sends is collected."""

    def __init__(self, body: bytes) -> None:
        self.body: bytes | None = body
        self.status = 500
        self.headers: list[tuple[str, str]] = []
        self.chunks: list[bytes] = []
        self._sent: anyio.Event | None = None

    def _done(self) -> anyio.Event:
        if self._sent is None:  # made on the event loop that serves the request
            self._sent = anyio.Event()
        return self._sent

    async def receive(self) -> Message:
        if self.body is not None:
            body, self.body = self.body, None
            return {"type": "http.request", "body": body, "more_body": False}
        await self._done().wait()  # a watcher for the client going away hears it once the response is out
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = int(message["status"])
            self.headers = [(bytes(k).decode("latin-1"), bytes(v).decode("latin-1")) for k, v in message["headers"]]
        elif message["type"] == "http.response.body":
            self.chunks.append(bytes(message.get("body", b"")))
            if not message.get("more_body", False):
                self._done().set()

    def response(self) -> HttpResponse:
        response = HttpResponse(b"".join(self.chunks), status=self.status)
        for name, value in self.headers:
            if name.lower() not in NOT_PASSED_BACK:
                response[name] = value
        return response


def asgi_scope(request: HttpRequest) -> dict[str, Any]:
    """The ASGI ``http`` scope of the Django request, as the SDK's app at ``PATH`` expects it."""
    headers = [
        (name.lower().encode("latin-1"), str(value).encode("latin-1"))
        for name, value in request.headers.items()
        if name.lower() not in WITHHELD
    ]
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": request.scheme,
        "path": PATH,
        "raw_path": PATH.encode(),
        "root_path": "",
        "query_string": str(request.META.get("QUERY_STRING", "")).encode("latin-1"),
        "headers": headers,
        "client": (str(request.META.get("REMOTE_ADDR", "")), 0),
        "server": (str(request.META.get("SERVER_NAME", "")), int(request.META.get("SERVER_PORT") or 0)),
    }


async def exchange_run(*, user: AbstractBaseUser, scope: dict[str, Any], body: bytes) -> Exchange:
    """Serve one request with the SDK's stateless Streamable HTTP app, as ``user``."""
    app = mcp_server.server().streamable_http_app(
        streamable_http_path=PATH, stateless_http=True, json_response=True, transport_security=NO_HOST_CHECK
    )
    exchange = Exchange(body)
    with mcp_server.acting_as(user):
        async with app.router.lifespan_context(app):
            await app(scope, exchange.receive, exchange.send)
    return exchange


def _refused(status: int, code: str, message: str) -> JsonResponse:
    return JsonResponse({"error": code, "message": message}, status=status)


@csrf_exempt
def endpoint(request: HttpRequest) -> HttpResponse:
    if getattr(request, "api_key", None) is None or not isinstance(request.user, AbstractBaseUser):
        refused = _refused(401, "missing_api_key", "Send an API key: Authorization: Bearer KEY.")
        refused["WWW-Authenticate"] = 'Bearer realm="ragkg"'
        return refused
    if request.method != "POST":  # stateless: no stream to open (GET), no session to end (DELETE)
        refused = _refused(405, "method_not_allowed", "This MCP endpoint is stateless: POST JSON-RPC messages.")
        refused["Allow"] = "POST"
        return refused
    try:
        body = request.body
    except RequestDataTooBig:
        return _refused(413, "too_large", "The request body is too large.")
    exchange = async_to_sync(exchange_run)(user=request.user, scope=asgi_scope(request), body=body)
    return exchange.response()
