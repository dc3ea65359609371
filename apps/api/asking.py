"""Asking on behalf of a client (REST, OpenAI-compatible chat, MCP): the same path as ``POST /api/ask``.

The asker only ever searches collections they can read (``answer_scope``); a named collection they
cannot read is dropped exactly like a missing one. ``AnswerError`` carries the plain message and the
HTTP status a client is given (busy: 429/503, with the stage that refused).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser

from apps.answers import services
from apps.answers.models import Answer
from apps.answers.scope import answer_scope
from apps.answers.tools import default_tools, retrieval_params

MODES = ("graph", "dense")


def _asker(user: AbstractBaseUser | AnonymousUser) -> AbstractBaseUser | None:
    return user if isinstance(user, AbstractBaseUser) and user.is_authenticated else None


def _arguments(
    *, user: AbstractBaseUser | AnonymousUser, question: str, collections: Sequence[str] | None, mode: str
) -> dict[str, Any]:
    if mode not in MODES:
        raise ValueError(f"mode is one of {', '.join(MODES)}")
    return {
        "question": services.question_check(question),
        "collections": answer_scope(user=user, requested=collections),
        "mode": mode,
        "user": _asker(user),
        "tools": default_tools(),
        "params": retrieval_params(mode=mode),
    }


def ask(
    *,
    user: AbstractBaseUser | AnonymousUser,
    question: str,
    collections: Sequence[str] | None = None,
    mode: str = "graph",
    generate: bool = True,
) -> dict[str, Any]:
    """Ask and wait for the whole answer: ``answer_result``'s dict (sources, tokens, citations)."""
    return services.answer_ask(
        **_arguments(user=user, question=question, collections=collections, mode=mode), generate=generate
    )


def ask_start(
    *,
    user: AbstractBaseUser | AnonymousUser,
    question: str,
    collections: Sequence[str] | None = None,
    mode: str = "graph",
) -> Answer:
    """Retrieve and queue the generation; follow it with ``services.generation_events``."""
    return services.answer_start(
        **_arguments(user=user, question=question, collections=collections, mode=mode), generate=True
    )
