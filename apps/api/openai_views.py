"""OpenAI-compatible chat: ``GET /v1/models`` and ``POST /v1/chat/completions`` (docs/openai.md).

Both need ``Authorization: Bearer KEY`` (apps/accounts/middleware.py checks the key; a request without
one is refused here). The request is read and checked (apps/api/openai_chat.py) before anything is
asked, so a refused request records nothing; the question then goes the way of ``POST /api/ask``
(apps/api/asking.py) as the key's user, and the answer comes back in OpenAI's shapes
(apps/api/openai_shapes.py): one ``chat.completion``, or ``chat.completion.chunk`` server-sent events
ending in ``data: [DONE]``. Every refusal is in OpenAI's error shape.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt

from apps.answers import services, streams
from apps.answers.models import Answer
from apps.answers.types import AnswerError
from apps.api import asking
from apps.api.openai_chat import ChatRequest, OpenAIError, chat_request, model_find
from apps.api.openai_shapes import (
    DONE,
    Completion,
    chunk,
    completion,
    completion_id,
    event,
    final_chunk,
    model_list,
    model_object,
    prompt_tokens_of,
)
from apps.core.admission import Busy

logger = logging.getLogger(__name__)

NO_KEY = (
    "No API key: send it as 'Authorization: Bearer KEY'. Make one on /account/keys/ or with "
    "'python manage.py apikeys create USERNAME'."
)


def error_response(error: OpenAIError) -> JsonResponse:
    response = JsonResponse(error.as_dict(), status=error.status)
    for name, value in error.headers.items():
        response[name] = value
    return response


def _key_required(request: HttpRequest) -> None:
    if getattr(request, "api_key", None) is None:
        raise OpenAIError(
            NO_KEY, status=401, code="missing_api_key", headers={"WWW-Authenticate": 'Bearer realm="ragkg"'}
        )


def _method_required(request: HttpRequest, method: str) -> None:
    if request.method != method:
        raise OpenAIError(
            f"use {method} for {request.path}", status=405, code="method_not_allowed", headers={"Allow": method}
        )


def _body(request: HttpRequest) -> Any:
    try:
        raw = request.body
    except RequestDataTooBig as exc:
        raise OpenAIError("the request body is too large", status=413, code="request_too_large") from exc
    try:
        return json.loads(raw or b"")
    except json.JSONDecodeError as exc:
        raise OpenAIError(
            f"the body is not valid JSON ({exc.msg} at character {exc.pos})", code="invalid_json"
        ) from exc
    except (ValueError, RecursionError) as exc:  # undecodable bytes, too deep a nesting
        raise OpenAIError("the body is not valid JSON", code="invalid_json") from exc


def _answer_error(exc: AnswerError) -> OpenAIError:
    """A question refused (4xx: the last user message is at fault) or a service down (5xx)."""
    if exc.status < 500:
        return OpenAIError(exc.message, status=exc.status, param="messages")
    headers = {"x-should-retry": "false"} if exc.stage == "generation" else {}
    return OpenAIError(exc.message, status=exc.status, type_="server_error", code=exc.stage, headers=headers)


def _asking[T](call: Callable[[], T]) -> T:
    """``call``, with the asking failures in OpenAI's shape (busy: 503 with Retry-After)."""
    try:
        return call()
    except Busy as busy:
        raise OpenAIError(
            busy.message,
            status=503,
            type_="server_error",
            code=busy.kind,
            headers={"Retry-After": str(busy.retry_after)},
        ) from busy
    except AnswerError as exc:
        raise _answer_error(exc) from exc


@csrf_exempt
def models(request: HttpRequest) -> HttpResponse:
    try:
        _key_required(request)
        _method_required(request, "GET")
    except OpenAIError as exc:
        return error_response(exc)
    return JsonResponse(model_list())


@csrf_exempt
def model(request: HttpRequest, model_id: str) -> HttpResponse:
    """``GET /v1/models/{id}``: one model (the SDK's ``models.retrieve``); 404 ``model_not_found``."""
    try:
        _key_required(request)
        _method_required(request, "GET")
        found = model_find(model_id)
    except OpenAIError as exc:
        return error_response(exc)
    return JsonResponse(model_object(found.id))


def _complete(request: HttpRequest, chat: ChatRequest) -> HttpResponse:
    result = _asking(
        lambda: asking.ask(user=request.user, question=chat.question, collections=chat.collections, mode=chat.mode)
    )
    made = Completion(id=completion_id(result["answer_id"]), model=chat.model, created=int(time.time()))
    return JsonResponse(completion(result, completion=made, prompt_tokens=prompt_tokens_of(result["answer_id"])))


def _chunks(answer: Answer, made: Completion) -> Iterator[bytes]:
    """The answer's events as chunks: the role, a delta per generated piece, the final chunk, [DONE];
    a failure after the first chunk is an ``{"error": ...}`` event before [DONE]."""
    yield chunk(made, {"role": "assistant", "content": ""})
    streamed: list[str] = []
    try:
        if answer.state == Answer.RETRIEVED:
            for name, data in services.generation_events(answer):
                if name == streams.TOKEN and data.get("text"):
                    streamed.append(str(data["text"]))
                    yield chunk(made, {"content": streamed[-1]})
            answer.refresh_from_db()
        result = services.answer_result(answer)
        yield final_chunk(result, completion=made, streamed="".join(streamed), prompt_tokens=answer.prompt_tokens)
    except OpenAIError as exc:
        yield event(exc.as_dict())
    except Exception:
        logger.exception("the streamed answer %s failed", answer.id)
        failed = OpenAIError("The answer failed; the error is logged.", status=500, type_="server_error", code=None)
        yield event(failed.as_dict())
    yield DONE


def _stream(request: HttpRequest, chat: ChatRequest) -> StreamingHttpResponse:
    answer = _asking(
        lambda: asking.ask_start(
            user=request.user, question=chat.question, collections=chat.collections, mode=chat.mode
        )
    )
    made = Completion(id=completion_id(str(answer.id)), model=chat.model, created=int(answer.created_at.timestamp()))
    response = StreamingHttpResponse(_chunks(answer, made), content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


@csrf_exempt
def chat_completions(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    try:
        _key_required(request)
        _method_required(request, "POST")
        chat = chat_request(_body(request))
        return _stream(request, chat) if chat.stream else _complete(request, chat)
    except OpenAIError as exc:
        return error_response(exc)
