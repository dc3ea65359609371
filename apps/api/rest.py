"""The REST API under /api/v1/ (django-ninja): its authentication, its errors, its routers.

Every operation needs a caller: ``Authorization: Bearer KEY`` (checked by
apps/accounts/middleware.py, which sets ``request.api_key``) or a logged-in browser session (CSRF
checked on writes). Errors are JSON ``{"error": code, "message": text}`` with a stable code:
``invalid_request`` (400, the field named), ``unauthorized`` (401), ``forbidden`` (403),
``not_found`` (404: also what a resource the caller cannot read gives), ``conflict`` (409),
``too_large`` (413), ``unsupported_media_type`` (415), ``busy`` / ``no_worker`` (429/503 with
Retry-After), ``unavailable`` (503: a service is down), ``internal_error`` (500, never a stack trace).
The OpenAPI 3.1 document is /api/v1/openapi.json (completed by apps/api/openapi.py), its browsable
page /api/v1/docs.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFilesSent
from django.http import Http404, HttpRequest, HttpResponse
from django.http.multipartparser import MultiPartParserError
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.openapi.schema import OpenAPISchema
from ninja.security import HttpBearer, SessionAuth
from ninja.types import DictStrAny

from apps.answers.types import AnswerError
from apps.api import openapi
from apps.api.errors import ApiError
from apps.api.parsing import ApiParser
from apps.api.schemas import PATTERN_WORDS
from apps.core.admission import Busy
from apps.core.dependencies import classify

logger = logging.getLogger(__name__)

DESCRIPTION = """ragkg's knowledge graph from code: collections and their grants, documents (upload, list,
graph counts, delete), ingestion jobs, questions and their answers with sentence-level citations and
token provenance, and the change log with proof bundles.

Authenticate with `Authorization: Bearer KEY` (make a key on /account/keys/ or with
`python manage.py apikeys create USERNAME`); a key acts as its user, with exactly that user's
collections and roles. Errors are JSON `{"error": code, "message": text}`."""


class BearerKey(HttpBearer):
    """The key the middleware accepted (a bad key never reaches an operation: it gets 401 there)."""

    def authenticate(self, request: HttpRequest, token: str) -> Any:
        return request.user if getattr(request, "api_key", None) is not None else None


class Session(SessionAuth):
    """A logged-in browser session (CSRF checked on writes)."""

    def authenticate(self, request: HttpRequest, key: str | None) -> Any:
        if getattr(request, "api_key", None) is not None:
            return None
        return super().authenticate(request, key)


class RestApi(NinjaAPI):
    """django-ninja's API whose OpenAPI document also lists the answers every operation can give."""

    def get_openapi_schema(
        self, *, path_prefix: str | None = None, path_params: DictStrAny | None = None
    ) -> OpenAPISchema:
        schema = super().get_openapi_schema(path_prefix=path_prefix, path_params=path_params)
        openapi.document_complete(schema)
        return schema


api = RestApi(
    title="ragkg",
    version="1",
    description=DESCRIPTION,
    urls_namespace="api-v1",
    auth=[BearerKey(), Session()],
    parser=ApiParser(),
)


def error(request: HttpRequest, status: int, code: str, message: str, **extra: Any) -> HttpResponse:
    response = api.create_response(request, {"error": code, "message": message, **extra}, status=status)
    if "retry_after" in extra:
        response["Retry-After"] = str(extra["retry_after"])
    return response


def _field(error_item: dict[str, Any]) -> str:
    sources = ("body", "query", "path", "form", "file", "payload")
    return ".".join(str(part) for part in error_item.get("loc", ()) if part not in sources)


def _message(error_item: dict[str, Any]) -> str:
    """pydantic's message; for a pattern, what the pattern asks in words (never the regex)."""
    if error_item.get("type") == "string_pattern_mismatch":
        return PATTERN_WORDS.get(error_item.get("ctx", {}).get("pattern"), "does not have the expected form")
    return str(error_item.get("msg", "invalid"))


@api.exception_handler(ValidationError)
def _invalid(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    fields = [{"field": _field(item), "message": _message(item)} for item in exc.errors]
    named = "; ".join(f"{item['field'] or 'body'}: {item['message']}" for item in fields) or "the request is not valid"
    return error(request, 400, "invalid_request", named, fields=fields)


@api.exception_handler(AuthenticationError)
def _unauthorized(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    response = error(
        request,
        401,
        "unauthorized",
        "Send Authorization: Bearer KEY (make a key on /account/keys/ or with `manage.py apikeys create`) or log in.",
    )
    response["WWW-Authenticate"] = 'Bearer realm="ragkg"'
    return response


@api.exception_handler(ApiError)
def _api_error(request: HttpRequest, exc: ApiError) -> HttpResponse:
    return error(request, exc.status, exc.code, exc.message, **exc.extra)


@api.exception_handler(Http404)
def _not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return error(request, 404, "not_found", str(exc) or "No such resource.")


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    if isinstance(exc.__cause__, ApiError):  # ninja wraps what the body parser raises
        return _api_error(request, exc.__cause__)
    codes = {400: "invalid_request", 403: "forbidden", 404: "not_found", 405: "method_not_allowed", 429: "busy"}
    return error(request, exc.status_code, codes.get(exc.status_code, "error"), str(exc))


@api.exception_handler(RequestDataTooBig)
def _too_large(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return error(
        request, 413, "too_large", f"The request body is over the limit ({limit} bytes outside uploaded files)."
    )


@api.exception_handler(TooManyFilesSent)
def _too_many_files(request: HttpRequest, exc: TooManyFilesSent) -> HttpResponse:
    """More files than ``files`` may hold (its maxItems): an invalid field, as pydantic would say."""
    message = f"files: at most {settings.DATA_UPLOAD_MAX_NUMBER_FILES} files per request"
    return error(request, 400, "invalid_request", message, fields=[{"field": "files", "message": message}])


@api.exception_handler(MultiPartParserError)
def _not_multipart(request: HttpRequest, exc: MultiPartParserError) -> HttpResponse:
    return error(request, 400, "invalid_request", f"body: not valid multipart/form-data ({exc})")


@api.exception_handler(json.JSONDecodeError)
def _not_json(request: HttpRequest, exc: json.JSONDecodeError) -> HttpResponse:
    return error(request, 400, "invalid_request", f"body: not valid JSON ({exc.msg} at character {exc.pos})")


@api.exception_handler(Busy)
def _busy(request: HttpRequest, exc: Busy) -> HttpResponse:
    status = 503 if exc.kind == "no_worker" else 429
    return error(request, status, exc.kind, exc.message, retry_after=exc.retry_after)


@api.exception_handler(AnswerError)
def _answer_error(request: HttpRequest, exc: AnswerError) -> HttpResponse:
    code = {400: "invalid_request", 404: "not_found", 429: "busy"}.get(exc.status, "unavailable")
    return error(request, exc.status, code, exc.message, stage=exc.stage)


@api.exception_handler(Exception)
def _internal(request: HttpRequest, exc: Exception) -> HttpResponse:
    down = classify(exc)
    if down is not None:
        logger.warning("API %s %s: %s", request.method, request.path, down)
        return error(request, 503, "unavailable", f"{down.reason}.", stage=down.service, retry_after=10)
    logger.exception("API %s %s failed", request.method, request.path)
    return error(request, 500, "internal_error", "Something went wrong on the server; it is logged.")


def _routers() -> None:
    from apps.api import routes_answers, routes_library

    api.add_router("/", routes_library.router)
    api.add_router("/", routes_answers.router)


_routers()
