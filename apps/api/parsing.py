"""How the REST API reads request bodies (django-ninja's parser, replaced).

A JSON body must say so (``application/json`` or a ``+json`` type) and hold JSON whose strings are
Unicode text; the upload's form must come as ``multipart/form-data``. Any other media type is 415
``unsupported_media_type``, a body that does not parse is 400 ``invalid_request``; both before the
operation runs, so nothing is written.
"""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest
from django.utils.datastructures import MultiValueDict
from ninja.parser import Parser

from apps.api.errors import ApiError

FORM = "multipart/form-data"


def media_type(request: HttpRequest) -> str:
    """The request's media type, lower-cased, without its parameters ("" when none was sent)."""
    return str(request.content_type or "").strip().lower()


def is_json(media: str) -> bool:
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def unsupported(media: str, wanted: str) -> ApiError:
    sent = media or "no Content-Type"
    return ApiError(415, "unsupported_media_type", f"Content-Type: send {wanted} ({sent} was sent).")


def json_body(raw: bytes) -> Any:
    """``raw`` parsed, or 400: not UTF-8, not JSON, nested too deep, or a string with a lone surrogate
    (not text: no database stores it)."""
    try:
        data = json.loads(raw)
        json.dumps(data, ensure_ascii=False).encode()
    except UnicodeEncodeError as exc:
        raise ApiError(400, "invalid_request", "body: a string holds a lone surrogate, which is not text") from exc
    except ValueError as exc:
        raise ApiError(400, "invalid_request", f"body: not valid JSON ({exc})") from exc
    except RecursionError as exc:
        raise ApiError(400, "invalid_request", "body: nested too deep") from exc
    return data


class ApiParser(Parser):
    def parse_body(self, request: HttpRequest) -> Any:
        media = media_type(request)
        if not is_json(media):
            raise unsupported(media, "application/json")
        return json_body(request.body)

    def parse_querydict(self, data: MultiValueDict[str, Any], list_fields: list[str], request: HttpRequest) -> Any:
        if data is not request.GET and media_type(request) != FORM:
            raise unsupported(media_type(request), FORM)
        return super().parse_querydict(data, list_fields, request)
