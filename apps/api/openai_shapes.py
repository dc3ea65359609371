"""The OpenAI response shapes of an answer: ``chat.completion``, ``chat.completion.chunk``, the model
list, ``usage`` and the ``citations`` field (docs/openai.md).

``answer_outcome`` says what an ``answer_result`` dict means for a client: the text to give (the answer
with its ``[n]`` markers; "Not found in your documents"; or, when nothing at all matched, the reason),
or the failure to report as an error (the generation failed after the evidence was found).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from apps.answers.models import Answer
from apps.api.evidence import citations_of, evidence_of
from apps.api.openai_chat import MODEL_CREATED, MODELS, OWNER, OpenAIError


@dataclass(frozen=True)
class Completion:
    """What one request is answered as: its id, model, creation time (Unix seconds)."""

    id: str
    model: str
    created: int


def completion_id(answer_id: str) -> str:
    return f"chatcmpl-{answer_id}"


def model_object(model_id: str) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": MODEL_CREATED, "owned_by": OWNER}


def model_list() -> dict[str, Any]:
    return {"object": "list", "data": [model_object(model.id) for model in MODELS]}


def answer_outcome(result: dict[str, Any]) -> str:
    """The text a client is given ("not found" is an answer: its refusal text); raises OpenAIError (503,
    not to be retried) when the answer failed (no worker, the generation failed or ran out of time)."""
    if result["state"] != Answer.FAILED:  # "not found" included: a normal completion with its refusal text
        return str(result["answer"])
    raise OpenAIError(
        str(result["error"]) or "The answer could not be generated.",
        status=503,
        type_="server_error",
        code="generation_failed",
        headers={"x-should-retry": "false"},
    )


def prompt_tokens_of(answer_id: str) -> int:
    """The prompt's token count recorded with the answer (0 when there is no such answer)."""
    counts = Answer.objects.filter(id=answer_id).values_list("prompt_tokens", flat=True)
    return int(counts.first() or 0)


def usage(result: dict[str, Any], *, prompt_tokens: int) -> dict[str, int]:
    """Prompt tokens (the evidence and question as given to the generator) and generated tokens."""
    generated = int((result.get("generation") or {}).get("tokens", 0))
    return {"prompt_tokens": prompt_tokens, "completion_tokens": generated, "total_tokens": prompt_tokens + generated}


def citations_field(result: dict[str, Any], *, text: str) -> dict[str, Any]:
    """Every ``[n]`` of ``text`` with its source and supporting sentence (``items``), the ranked sources
    (``sources``) and the token-level provenance (``tokens``); offsets are into ``answer``."""
    return {
        "answer_id": result["answer_id"],
        "answer": text,
        "state": result["state"],
        "not_found": bool(result["not_found"]),
        "reason": result.get("reason", ""),
        "note": result["error"] if result["state"] in Answer.FINISHED else "",
        "items": citations_of(result),
        "sources": evidence_of(result),
        "tokens": result.get("tokens", []),
    }


def completion(result: dict[str, Any], *, completion: Completion, prompt_tokens: int) -> dict[str, Any]:
    """The non-streamed response (``answer_outcome`` first: it raises for a failed answer)."""
    text = answer_outcome(result)
    return {
        "id": completion.id,
        "object": "chat.completion",
        "created": completion.created,
        "model": completion.model,
        "system_fingerprint": None,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": usage(result, prompt_tokens=prompt_tokens),
        "citations": citations_field(result, text=text),
    }


def chunk(completion: Completion, delta: dict[str, Any], *, finish_reason: str | None = None, **extra: Any) -> bytes:
    """One ``chat.completion.chunk`` as a server-sent event."""
    body = {
        "id": completion.id,
        "object": "chat.completion.chunk",
        "created": completion.created,
        "model": completion.model,
        "system_fingerprint": None,
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
        **extra,
    }
    return event(body)


def final_chunk(result: dict[str, Any], *, completion: Completion, streamed: str, prompt_tokens: int) -> bytes:
    """The last chunk: the rest of the answer when what was streamed begins it (else nothing, and
    ``citations.replace`` tells the client to show ``citations.answer`` instead), ``finish_reason``
    "stop", ``usage`` and ``citations``."""
    text = answer_outcome(result)
    follows = text.startswith(streamed)
    rest = text[len(streamed) :] if follows else ""
    return chunk(
        completion,
        {"content": rest} if rest else {},
        finish_reason="stop",
        usage=usage(result, prompt_tokens=prompt_tokens),
        citations={**citations_field(result, text=text), "replace": not follows},
    )


def event(body: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(body, ensure_ascii=False)}\n\n".encode()


DONE = b"data: [DONE]\n\n"
