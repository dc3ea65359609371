"""Warm-up: load the models a process will answer with as soon as it starts, in a background thread,
so that the first question a web process or generation worker handles is as fast as the rest.

Web processes (``ragkg.wsgi``) run one retrieval (stages 1-6) of a fixed question over every collection:
the retrieval tools (text embedder, CLIP, reranker, tokenizer, spaCy, language identification) load,
the vector indexes are read and the graph is queried once; generation worker
processes (``ragkg.celery``, the node consuming the generation queue) load the generator and generate
two tokens with the answers' system prompt. A failure is
logged and changes nothing: the model then loads on first use, as without warm-up. ``RAGKG_WARM_UP=0``
turns it off.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from django.conf import settings

logger = logging.getLogger(__name__)

WARM_QUESTION = "Who founded the society that publishes the journal?"


def warm_retrieval() -> None:
    """Load what answering a question in this process needs, and use each part once: one retrieval
    over every collection (its result is dropped) loads the models, the vector indexes and the graph
    connections, and runs each stage's code and queries once."""
    from apps.answers.scope import EVERY_COLLECTION
    from apps.answers.services import answer_retrieve
    from apps.answers.tools import default_tools, retrieval_params
    from apps.answers.types import AnswerError

    try:
        answer_retrieve(
            question=WARM_QUESTION, collections=EVERY_COLLECTION, tools=default_tools(), params=retrieval_params()
        )
    except AnswerError as exc:  # nothing indexed yet, or the graph away: what is loaded stays loaded
        logger.info("warm-up retrieval stopped at %s: %s", exc.stage, exc)


WARM_PROMPT = "Sources:\n[1] The Journal of Moss Studies is published by the Bryological Society.\n\nQuestion: Who?"


def warm_generation() -> None:
    """Load the generator (its weights, converted copy and tokenizer) and generate two tokens with the
    answers' system prompt: the first forward passes set up the CPU kernels and the system prompt's
    cached prefix, which would otherwise cost the first question several seconds."""
    from apps.answers.prompt import SYSTEM
    from apps.models.registry import generator

    generator().generate(WARM_PROMPT, max_new_tokens=2, system=SYSTEM)


def _run(name: str, warm: Callable[[], None]) -> None:
    started = time.perf_counter()
    try:
        warm()
    except Exception:  # a warm-up must never take a process down: the model loads on first use instead
        logger.exception("warm-up of %s failed; it loads on first use", name)
        return
    logger.info("warm-up of %s done in %.1fs", name, time.perf_counter() - started)


def warm_in_background(name: str, warm: Callable[[], None]) -> threading.Thread | None:
    """Start ``warm`` in a daemon thread (None when ``RAGKG_WARM_UP`` is off)."""
    if not settings.WARM_UP:
        return None
    thread = threading.Thread(target=_run, args=(name, warm), name=f"warm-{name}", daemon=True)
    thread.start()
    return thread
