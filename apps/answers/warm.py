"""Warm-up: load the models a process will answer with as soon as it starts, in a background thread,
so that the first question a web process or generation worker handles is as fast as the rest.

Web processes (``ragkg.wsgi``) load the retrieval tools (text embedder, CLIP, reranker, tokenizer,
spaCy, language identification; the multilingual embedder when a collection is in its space),
analyse and embed one question, read the vector indexes and open a
graph connection; generation worker processes (``ragkg.celery``, the node consuming the generation
queue) load the generator and generate two tokens with the answers' system prompt. A failure is
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
WARM_QUESTION_ZH = "谁创办了出版这本期刊的学会？"  # noqa: RUF001


def warm_retrieval() -> None:
    """Load what answering a question in this process needs, and use each part once: the models
    (question analysis and one query embedded), the vector indexes read from disk, and one pooled
    connection to the graph. No graph query of the answer path runs here: a read that starts while
    ``graph_schema`` creates indexes can wait on it for good."""
    from apps.answers.analysis import query_analyse
    from apps.answers.tools import default_tools
    from apps.graph import cypher
    from apps.graph.db import graph_read
    from apps.graph.driver import get_driver
    from apps.vectors import spaces as text_spaces
    from apps.vectors.errors import VectorIndexError
    from apps.vectors.registry import vector_registry

    tools = default_tools()
    query_analyse(question=WARM_QUESTION, tokenize=tools.tokenize, ner_model=tools.ner_model)
    tools.text.embed_queries([WARM_QUESTION])
    multilingual = bool(text_spaces.multilingual_collections())  # e5 and its index, when a collection uses them
    if multilingual:  # and rjieba's dictionary, which only a question in Chinese loads
        query_analyse(question=WARM_QUESTION_ZH, tokenize=tools.tokenize, ner_model=tools.ner_model)
        tools.embedder(text_spaces.MULTILINGUAL).embed_queries([WARM_QUESTION_ZH])
    used = ("text", *((text_spaces.MULTILINGUAL,) if multilingual else ()), *(("clip",) if tools.clip else ()))
    for space in used:
        try:
            vector_registry().get(space)
        except VectorIndexError as exc:  # nothing indexed yet: it loads on first use
            logger.info("warm-up: the %s vectors are not loaded: %s", space, exc)
    graph_read(get_driver(), cypher.PING)


WARM_PROMPT = "Sources:\n[1] The Journal of Moss Studies is published by the Bryological Society.\n\nQuestion: Who?"


def warm_generation() -> None:
    """Load the generator (its weights, converted copy and tokenizer) and generate two tokens with the
    answers' system prompt: the first forward passes set up the CPU kernels and the system prompt's
    cached prefix, which would otherwise cost the first question several seconds. With an answer engine
    server, the generator only reads that prompt (it attributes the answers), and the server writes two
    tokens of it (its prompt cache then holds the system prompt); a server that is down is logged."""
    from apps.answers.prompt import SYSTEM
    from apps.models.engines import remote_engine
    from apps.models.openai_engine import EngineUnavailable
    from apps.models.registry import generator

    if settings.GENERATOR == "auto":
        from apps.models.auto import auto_probe, auto_result

        if auto_result() is None:  # first start on this machine: measure which generator fits the budget
            auto_probe()
    engine = remote_engine()
    if engine is None:
        generator().generate(WARM_PROMPT, max_new_tokens=2, system=SYSTEM)
        return
    generator().prompt_prefill(WARM_PROMPT, system=SYSTEM)
    try:
        engine.generate(WARM_PROMPT, max_new_tokens=2, system=SYSTEM)
    except EngineUnavailable as exc:
        logger.warning("warm-up: %s", exc.message)


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
