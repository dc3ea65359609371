"""An OpenAI chat completions request, read and checked: which model (answering mode), which question,
which collections, streamed or not (docs/openai.md).

Everything here is pure: ``chat_request`` takes the parsed JSON body and returns a ``ChatRequest`` or
raises ``OpenAIError`` naming the parameter at fault, before anything is asked or recorded.

The question is the last user message. When an earlier user message exists and the last one is short
or refers back to it ("When was it founded?"), the previous user message is put before it
(``question_condition``): the text asked is then "<previous> <last>", so retrieval finds what the
follow-up is about. Assistant and system messages are accepted and do not change the question.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from apps.answers.followup import follow_up
from apps.answers.services import MAX_QUESTION_CHARS


@dataclass(frozen=True)
class Model:
    """One answering profile offered as an OpenAI model."""

    id: str
    mode: str
    description: str


MODELS: Final = (
    Model("ragkg", "graph", "graph path expansion plus vector retrieval"),
    Model("ragkg-dense", "dense", "vector retrieval only"),
)
MODEL_CREATED: Final = 1735689600  # 2025-01-01T00:00:00Z, fixed: the profiles are not versioned
OWNER: Final = "ragkg"
MODES: Final = ("graph", "dense")
ROLES: Final = frozenset({"system", "developer", "user", "assistant"})
# Accepted and ignored: generation length, sampling and output options are the server's (settings).
IGNORED: Final = frozenset(
    {
        "temperature",
        "top_p",
        "max_tokens",
        "max_completion_tokens",
        "presence_penalty",
        "frequency_penalty",
        "stop",
        "seed",
        "user",
        "logit_bias",
        "top_logprobs",
        "stream_options",
        "metadata",
        "store",
        "parallel_tool_calls",
        "service_tier",
        "reasoning_effort",
        "verbosity",
        "modalities",
        "prompt_cache_key",
        "safety_identifier",
    }
)
READ: Final = frozenset(
    {"model", "messages", "stream", "collections", "mode", "n", "tools", "functions", "tool_choice"}
    | {"function_call", "response_format", "logprobs"}
)


class OpenAIError(Exception):
    """A refusal in OpenAI's error shape: ``{"error": {"message", "type", "code", "param"}}``."""

    def __init__(
        self,
        message: str,
        *,
        status: int = 400,
        type_: str = "invalid_request_error",
        code: str | None = "invalid_value",
        param: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.type = type_
        self.code = code
        self.param = param
        self.headers = dict(headers or {})

    def as_dict(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.type, "code": self.code, "param": self.param}}


@dataclass(frozen=True)
class ChatRequest:
    model: str
    mode: str
    question: str
    collections: list[str] | None
    stream: bool


def model_find(name: object) -> Model:
    if name is None:
        raise OpenAIError("you must provide a model parameter", code="missing_required_parameter", param="model")
    if not isinstance(name, str):
        raise OpenAIError('"model" must be a string', param="model")
    for model in MODELS:
        if model.id == name:
            return model
    known = ", ".join(model.id for model in MODELS)
    raise OpenAIError(
        f"The model {name!r} does not exist (the models are: {known}).",
        status=404,
        code="model_not_found",
        param="model",
    )


def _text(content: object, where: str) -> str:
    """A message's text: a string, null, or a list of text parts joined by line breaks."""
    if content is None or isinstance(content, str):
        text = content or ""
    elif isinstance(content, list):
        parts = []
        for j, part in enumerate(content):
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                raise OpenAIError(
                    "only text content parts are supported: {'type': 'text', 'text': '...'}",
                    param=f"{where}.content[{j}]",
                )
            parts.append(part["text"])
        text = "\n".join(parts)
    else:
        raise OpenAIError("content must be a string or a list of text parts", param=f"{where}.content")
    if "\x00" in text:
        raise OpenAIError("content must not contain NUL characters", param=f"{where}.content")
    return text


def messages_read(messages: object) -> list[tuple[str, str]]:
    """(role, text) of every message, checked."""
    if not isinstance(messages, list) or not messages:
        raise OpenAIError('"messages" must be a non-empty list of messages', param="messages")
    read = []
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            raise OpenAIError("each message must be an object with a role and content", param=where)
        role = message.get("role")
        if role not in ROLES:
            raise OpenAIError(
                f"role {role!r} is not supported (use one of: {', '.join(sorted(ROLES))})", param=f"{where}.role"
            )
        read.append((str(role), _text(message.get("content"), where)))
    return read


def question_condition(messages: Sequence[tuple[str, str]]) -> tuple[str, int]:
    """The question to ask and the index of the last user message (see the module docstring)."""
    users = [(i, " ".join(text.split())) for i, (role, text) in enumerate(messages) if role == "user"]
    if not users:
        raise OpenAIError("the messages must include a user message (the question)", param="messages")
    last_index, last = users[-1]
    if not last:
        raise OpenAIError("the last user message is empty", param=f"messages[{last_index}].content")
    earlier = [text for _, text in users[:-1] if text]
    return follow_up(earlier[-1] if earlier else "", last), last_index


def _unsupported(body: Mapping[str, Any]) -> None:
    """Refuse what cannot be honoured: tools, several choices, log-probabilities, structured output."""
    if body.get("tools") or body.get("functions"):
        param = "tools" if body.get("tools") else "functions"
        raise OpenAIError("tools and function calling are not supported", code="unsupported_parameter", param=param)
    if body.get("tool_choice") not in (None, "none", "auto") or body.get("function_call") not in (None, "none", "auto"):
        param = "tool_choice" if body.get("tool_choice") not in (None, "none", "auto") else "function_call"
        raise OpenAIError("no tools are available to choose", code="unsupported_parameter", param=param)
    if body.get("n") not in (None, 1):
        raise OpenAIError("only one choice (n = 1) is given", code="unsupported_parameter", param="n")
    if body.get("logprobs") not in (None, False):
        raise OpenAIError("log-probabilities are not given", code="unsupported_parameter", param="logprobs")
    response_format = body.get("response_format")
    if response_format is not None and (not isinstance(response_format, dict) or response_format.get("type") != "text"):
        raise OpenAIError("only text responses are given", code="unsupported_parameter", param="response_format")


def _collections(value: object) -> list[str] | None:
    if isinstance(value, str):
        value = [value]
    if value is not None and not (isinstance(value, list) and all(isinstance(name, str) for name in value)):
        raise OpenAIError('"collections" must be a list of collection names', param="collections")
    return value


def chat_request(body: object) -> ChatRequest:
    """The checked request; ``OpenAIError`` (400, 404 for an unknown model) names the parameter at fault."""
    if not isinstance(body, dict):
        raise OpenAIError("the body must be a JSON object", param=None)
    for name in body:
        if name not in READ and name not in IGNORED:
            raise OpenAIError(f"Unrecognized request argument supplied: {name}", code="unknown_parameter", param=name)
    model = model_find(body.get("model"))
    _unsupported(body)
    stream = body.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise OpenAIError('"stream" must be true or false', param="stream")
    mode = body.get("mode")
    if mode is not None and mode not in MODES:
        raise OpenAIError(f'"mode" is one of: {", ".join(MODES)}', param="mode")
    question, index = question_condition(messages_read(body.get("messages")))
    if len(question) > MAX_QUESTION_CHARS:
        raise OpenAIError(
            f"the question is too long (at most {MAX_QUESTION_CHARS} characters)",
            param=f"messages[{index}].content",
        )
    return ChatRequest(
        model=model.id,
        mode=mode or model.mode,
        question=question,
        collections=_collections(body.get("collections")),
        stream=bool(stream),
    )
