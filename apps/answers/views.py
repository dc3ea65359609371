"""``POST /api/ask``: JSON in; the answer as JSON, or its events as newline-delimited JSON.

Body: ``{"question": str, "collections": [str] | null, "generate": bool = true,
"mode": "graph" | "dense" = "graph", "stream": bool = false}``. The request must be
``Content-Type: application/json`` (a browser cannot send that cross-site without a CORS
preflight, which is what keeps this endpoint safe from cross-site requests without a CSRF
token). With ``stream`` the response is ``application/x-ndjson``: one ``retrieval`` event
with the sources and timings, ``token`` events as the generator writes, then ``done`` (the
whole answer) or ``error``.

The asker only ever searches collections they can read (``answer_scope``): "collections" names
what to search among those (null or absent: all of them); a named collection they cannot read
is dropped exactly like one that does not exist, so the answer is the same in both cases.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt

from apps.answers import services
from apps.answers.models import Answer
from apps.answers.scope import answer_scope
from apps.answers.tools import default_tools, retrieval_params
from apps.answers.types import AnswerError


class BadRequest(ValueError):
    def __init__(self, message: str, *, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def _body(request: HttpRequest) -> Any:
    if request.content_type != "application/json":
        raise BadRequest("send the question as JSON (Content-Type: application/json)")
    try:
        return json.loads(request.body or b"{}")
    except RequestDataTooBig as exc:
        raise BadRequest("the body is too large", status=413) from exc
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise BadRequest("the body is not valid JSON") from exc


def _flag(body: dict[str, Any], name: str, default: bool) -> bool:
    value = body.get(name, default)
    if not isinstance(value, bool):
        raise BadRequest(f'"{name}" must be true or false')
    return value


def _options(request: HttpRequest) -> dict[str, Any]:
    body = _body(request)
    if not isinstance(body, dict) or not isinstance(body.get("question"), str):
        raise BadRequest('the body must be a JSON object with a "question" string')
    if "\x00" in body["question"]:
        raise BadRequest("the question must not contain NUL characters")
    collections = body.get("collections", body.get("collection"))
    if isinstance(collections, str):
        collections = [collections]
    if collections is not None and not (isinstance(collections, list) and all(isinstance(c, str) for c in collections)):
        raise BadRequest('"collections" must be a list of collection names')
    mode = body.get("mode", "graph")
    if mode not in ("graph", "dense"):
        raise BadRequest('"mode" is "graph" or "dense"')
    return {
        "question": body["question"],
        "collections": collections,
        "generate": _flag(body, "generate", True),
        "mode": mode,
        "stream": _flag(body, "stream", False),
    }


def _line(event: str, **data: Any) -> bytes:
    return (json.dumps({"event": event, **data}, ensure_ascii=False) + "\n").encode()


def answer_events(answer: Answer) -> Iterator[bytes]:
    yield _line("retrieval", **services.answer_result(answer))
    if answer.state == Answer.RETRIEVED:
        for event, data in services.generation_events(answer):
            if event in ("token", "generated", "error"):
                yield _line(event, **data)
        answer.refresh_from_db()
    yield _line("done", **services.answer_result(answer))


@csrf_exempt
def ask(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    if request.method != "POST":
        refused = JsonResponse({"error": "use POST with a JSON body"}, status=405)
        refused["Allow"] = "POST"
        return refused
    try:
        options = _options(request)
        services.question_check(options["question"])
    except BadRequest as exc:
        return JsonResponse({"error": str(exc)}, status=exc.status)
    except AnswerError as exc:
        return JsonResponse({"error": exc.message, "stage": exc.stage}, status=exc.status)
    stream = options.pop("stream")
    options["collections"] = answer_scope(user=request.user, requested=options["collections"])
    user = request.user if request.user.is_authenticated else None
    tools = default_tools()
    try:
        if not stream:
            return JsonResponse(
                services.answer_ask(**options, user=user, tools=tools, params=retrieval_params(mode=options["mode"]))
            )
        answer = services.answer_start(**options, user=user, tools=tools, params=retrieval_params(mode=options["mode"]))
    except AnswerError as exc:
        return JsonResponse({"error": exc.message, "stage": exc.stage}, status=exc.status)
    response = StreamingHttpResponse(answer_events(answer), content_type="application/x-ndjson")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response
