"""Answering a question: retrieval (stages 1-6 here), generation (stage 7 on the gpu worker).

``answer_ask`` is the one entry point of the command line and the web API: it retrieves,
records the ``Answer``, queues the generation and follows its events. Every failure a user
can meet becomes an ``AnswerError`` with a plain message; when generation is what failed the
evidence is still returned.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, User
from django.utils import timezone
from neo4j.exceptions import Neo4jError, ServiceUnavailable, SessionExpired
from redis import RedisError

from apps.answers import streams
from apps.answers.admission import generation_admit
from apps.answers.cache import cache_copy, cache_key, cache_lookup, cached_from, log_position, settled
from apps.answers.generation import answer_not_found
from apps.answers.models import Answer
from apps.answers.pipeline import RetrievalParams, RetrievalTools, retrieve
from apps.answers.scope import Scope
from apps.answers.support import (
    CJK,
    FROM_CJK,
    TO_CJK,
    EvidenceParams,
    Thresholds,
    evidence_measure,
    evidence_sufficient,
)
from apps.answers.types import STAGES, AnswerError, Retrieval
from apps.core.workers import queue_consumers, queue_unserved
from apps.ledger.services import knowledge_stand
from apps.observability.metrics import answer_cache_count, answers_count, generation_observe
from apps.observability.tracing import request_span
from apps.provenance.services import answer_token_provenance
from apps.vectors.errors import VectorIndexError

logger = logging.getLogger(__name__)

MAX_QUESTION_CHARS = 2000
GRAPH_DOWN = "The knowledge graph is not reachable right now (Neo4j did not answer). Please try again shortly."
NO_WORKER = (
    "No generation worker is running (no Celery worker consumes the '{queue}' queue), so the question was not "
    "answered. The evidence found is shown below."
)
SLOTS_STAYED_BUSY = (
    "All {slots} generation slots stayed busy for {seconds:g} s, so the question was not started; please ask "
    "again in a minute. The evidence found is shown below."
)
NOT_PICKED_UP = "No generation worker picked up the question within {seconds:g} s. The evidence found is shown below."
TOO_SLOW = "The generation did not finish within its time limit ({seconds} s). The evidence found is shown below."
NOTHING_FOUND = "Nothing in the knowledge base matches the question, so there is nothing to answer from."
WEAK_EVIDENCE = (
    "The sources found do not cover the question (best match {similarity:.2f}, {coverage:.0%} of its words "
    "found), so no answer was generated. The closest sources are shown below."
)
BROKER_DOWN = (
    "The task queue (Redis) is not reachable, so no answer can be generated. The evidence found is shown below."
)


def question_check(question: str) -> str:
    text = " ".join(question.split())
    if not text:
        raise AnswerError("Please type a question.", stage="analysis", status=400)
    if len(text) > MAX_QUESTION_CHARS:
        raise AnswerError(
            f"The question is too long (at most {MAX_QUESTION_CHARS} characters).", stage="analysis", status=400
        )
    return text


def answer_retrieve(*, question: str, collections: Scope, tools: RetrievalTools, params: RetrievalParams) -> Retrieval:
    """Stages 1-6, with the failures of the graph and the vector store turned into AnswerErrors."""
    try:
        return retrieve(question=question_check(question), collections=collections, tools=tools, params=params)
    except (ServiceUnavailable, SessionExpired, OSError) as exc:
        logger.warning("retrieval failed: %s", exc)
        raise AnswerError(GRAPH_DOWN, stage="graph_expansion") from exc
    except Neo4jError as exc:
        logger.exception("a graph query failed")
        raise AnswerError("A knowledge graph query failed; the error is logged.", stage="graph_expansion") from exc
    except VectorIndexError as exc:
        raise AnswerError(f"The vector index cannot be used: {exc}", stage="vector_search") from exc


def answer_record(
    *,
    retrieval: Retrieval,
    generate: bool,
    mode: str,
    user: AbstractBaseUser | None,
    model_names: dict[str, str],
    cache: tuple[str, int] | None = None,
) -> Answer:
    """Store the question, its evidence and the prompt (state ``retrieved``, or ``done`` without generation);
    ``cache``: its key and log position, when it may be served from the answer cache once done."""
    analysis = retrieval.analysis
    return Answer.objects.create(
        cache_key=cache[0] if cache else "",
        log_position=cache[1] if cache else None,
        question=retrieval.question,
        collections=None if retrieval.collections is None else list(retrieval.collections),
        user=user if isinstance(user, User) else None,
        mode=mode,
        generate=generate,
        state=Answer.RETRIEVED if generate else Answer.DONE,
        analysis={
            "language": analysis.language,
            "tokens": len(analysis.tokens),
            "entropy": analysis.entropy,
            "entities": list(analysis.entities),
            "linked": [{"id": entity_id, "name": name} for entity_id, name in analysis.linked],
        },
        sources=[source.as_dict() for source in retrieval.sources],
        prompt_system=retrieval.prompt.system,
        prompt_user=retrieval.prompt.user,
        prompt_tokens=retrieval.prompt.tokens,
        timings_ms=retrieval.timings_ms,
        stats=retrieval.stats,
        seeds=[
            {
                "id": seed.node_id,
                "label": seed.label,
                "score": round(seed.score, 6),
                "space": seed.space,
                "collection": seed.collection,
                **({"lexical": round(seed.lexical, 6)} if seed.lexical else {}),
            }
            for seed in retrieval.seeds.hits
        ],
        model_names=model_names,
        ledger=knowledge_stand(document_ids=[source.document_id for source in retrieval.sources]),
        finished_at=None if generate else timezone.now(),
    )


def evidence_params() -> EvidenceParams:
    return EvidenceParams(
        min_similarity=settings.ANSWER_MIN_SIMILARITY,
        min_coverage=settings.ANSWER_MIN_COVERAGE,
        min_answer_support=settings.ANSWER_MIN_ANSWER_SUPPORT,
        min_evidence=settings.ANSWER_MIN_EVIDENCE,
        coverage_weight=settings.ANSWER_COVERAGE_WEIGHT,
        readings={
            CJK: Thresholds(settings.ANSWER_MIN_SIMILARITY_CJK, settings.ANSWER_MIN_COVERAGE_CJK),
            TO_CJK: Thresholds(settings.ANSWER_MIN_SIMILARITY_TO_CJK, 0.0),
            FROM_CJK: Thresholds(settings.ANSWER_MIN_SIMILARITY_FROM_CJK, 0.0),
        },
    )


def generation_queue(answer: Answer) -> None:
    """Send stage 7 to the generation queue (the task id is the answer id)."""
    from apps.answers.tasks import answer_generate_task

    try:
        answer_generate_task.apply_async(
            args=(str(answer.id),), queue=settings.ANSWER_GENERATION_QUEUE, task_id=str(answer.id)
        )
    except Exception as exc:  # kombu raises OperationalError and friends
        logger.warning("could not queue the generation of %s: %s", answer.id, exc)
        answer_fail(answer, BROKER_DOWN)
        raise AnswerError(BROKER_DOWN, stage="generation") from exc


def answer_fail(answer: Answer, message: str) -> None:
    """Mark an answer failed unless a worker finished it meanwhile (a late worker then finds nothing to claim)."""
    Answer.objects.filter(id=answer.id, state__in=[Answer.RETRIEVED, Answer.GENERATING]).update(
        state=Answer.FAILED, error=message, finished_at=timezone.now()
    )
    answer.refresh_from_db()


def generation_events(answer: Answer) -> Iterator[tuple[str, dict[str, Any]]]:
    """The generation's events; a missing worker or a generation past its limit ends in an ``error`` event."""
    try:
        events = streams.events_read(
            str(answer.id), first_timeout=settings.ANSWER_QUEUE_TIMEOUT, timeout=settings.ANSWER_GENERATION_TIMEOUT + 30
        )
        for event, data in events:
            if event == "timeout":
                worker = data["waiting_for"] == "worker"
                message = (
                    not_started_message() if worker else TOO_SLOW.format(seconds=settings.ANSWER_GENERATION_TIMEOUT)
                )
                _revoke(str(answer.id))
                answer_fail(answer, message)
                yield streams.ERROR, {"message": message}
                return
            if event == streams.DONE:
                _observe(data.get("generation", {}))
            yield event, data
    except (OSError, RedisError) as exc:
        answer_fail(answer, BROKER_DOWN)
        yield streams.ERROR, {"message": BROKER_DOWN, "detail": str(exc)}


def not_started_message() -> str:
    """Why no worker started a question within ``ANSWER_QUEUE_TIMEOUT``, as the workers tell (asked now):
    none consumes the generation queue, or all its slots stayed busy."""
    queue, seconds = settings.ANSWER_GENERATION_QUEUE, settings.ANSWER_QUEUE_TIMEOUT
    consumers = queue_consumers(max_age=0)
    if consumers.missing(queue) and queue_unserved(queue):
        return NO_WORKER.format(queue=queue)
    if consumers.known:
        return SLOTS_STAYED_BUSY.format(slots=settings.GENERATION_SLOTS or "the", seconds=seconds)
    return NOT_PICKED_UP.format(seconds=seconds)


def _observe(generation: dict[str, Any]) -> None:
    """Generation metrics, observed here: the web process is the one Prometheus scrapes."""
    first = generation.get("first_token_ms")
    generation_observe(
        int(generation.get("tokens", 0)), float(generation.get("seconds", 0.0)), None if first is None else first / 1000
    )


def _revoke(task_id: str) -> None:
    from ragkg.celery import app

    try:
        app.control.revoke(task_id)
    except Exception:  # best effort: the answer is failed already, so a late worker claims nothing
        logger.warning("could not revoke generation task %s", task_id, exc_info=True)


def answer_result(answer: Answer) -> dict[str, Any]:
    """The answer as the API and ``ask --json`` give it."""
    timings = {stage: float(answer.timings_ms.get(stage, 0.0)) for stage in STAGES}
    for extra in ("queue", "attribution", "cache"):  # waiting for a gpu worker; attribution; a cache hit
        if extra in answer.timings_ms:
            timings[extra] = float(answer.timings_ms[extra])
    return {
        "answer_id": str(answer.id),
        "question": answer.question,
        "state": answer.state,
        "answer": answer.answer,
        "generated": answer.generated,
        "not_found": answer.not_found,
        "reason": answer.reason,
        "error": answer.error,
        "sources": answer.sources,
        "tokens": answer_token_provenance(answer),
        "citations": answer.citations,
        "timings_ms": timings,
        "analysis": answer.analysis,
        "generation": answer.generation,
        "models": answer.model_names,
        "ledger": answer.ledger,
        "cached_from": cached_from(answer),
    }


def model_names(tools: RetrievalTools) -> dict[str, str]:
    from apps.models.engines import remote_engine
    from apps.models.registry import profile_specs

    specs = profile_specs()
    engine = remote_engine()
    return {
        "text_embedder": tools.text.name,
        "reranker": specs.reranker.name,
        "generator": specs.generator.name if engine is None else f"{engine.name} (OpenAI-compatible server)",
        **({"attribution_reader": specs.generator.name} if engine is not None else {}),
        **({"clip": tools.clip.name} if tools.clip is not None else {}),
    }


def answer_start(
    *,
    question: str,
    collections: Scope,
    generate: bool,
    mode: str,
    user: AbstractBaseUser | None,
    tools: RetrievalTools,
    params: RetrievalParams,
) -> Answer:
    """Answer from the cache when it holds a current answer (``apps.answers.cache``); otherwise
    retrieve, record, and queue the generation. The returned answer is ``done``, ``not_found`` or ``retrieved``.
    A full generation queue, or too long a wait for a worker, raises Busy first (``generation_admit``),
    before retrieval. Nothing found (an empty scope included) or evidence too weak to answer from finishes
    the answer as ``not_found`` with its reason, no generation queued."""
    cache: tuple[str, int] | None = None  # the key and log position the answer is cached under
    if settings.ANSWER_CACHE:
        started, text = time.time(), question_check(question)
        key = cache_key(
            question=text, collections=collections, mode=mode, generate=generate, models=model_names(tools),
            params=params,
        )  # fmt: skip
        found = cache_lookup(key=key, collections=collections)
        answer_cache_count(found is not None)
        if found is not None:
            return cache_copy(found, question=text, user=user, started=started)
        if settled(collections):
            cache = (key, log_position())  # before retrieval: any entry appended from now on is "since"
    if generate:  # before anything is recorded: a refused question leaves no answer behind
        generation_admit()
    with request_span("ask", mode=mode, generate=generate):
        retrieval = answer_retrieve(question=question, collections=collections, tools=tools, params=params)
        evidence = evidence_measure(retrieval.question, retrieval.sources)
        retrieval.stats["evidence"] = evidence.as_dict()
        answer = answer_record(
            retrieval=retrieval, generate=generate, mode=mode, user=user, model_names=model_names(tools), cache=cache
        )
        if generate and not retrieval.sources:
            answer_not_found(str(answer.id), NOTHING_FOUND, question=answer.question)
            answer.refresh_from_db()
        elif generate and not evidence_sufficient(evidence, evidence_params()):
            answer_not_found(str(answer.id), WEAK_EVIDENCE.format(**evidence.as_dict()), question=answer.question)
            answer.refresh_from_db()
        elif generate:
            generation_queue(answer)
    return answer


def answer_ask(
    *,
    question: str,
    collections: Scope,
    generate: bool,
    mode: str,
    user: AbstractBaseUser | None,
    tools: RetrievalTools,
    params: RetrievalParams,
) -> dict[str, Any]:
    """Ask and wait for the whole answer (or its failure)."""
    try:
        answer = answer_start(
            question=question,
            collections=collections,
            generate=generate,
            mode=mode,
            user=user,
            tools=tools,
            params=params,
        )
    except AnswerError:
        answers_count("error")
        raise
    if answer.state == Answer.RETRIEVED:
        for _event in generation_events(answer):
            pass
        answer.refresh_from_db()
    answers_count(answer.state if answer.generate else "retrieval_only")
    return answer_result(answer)
