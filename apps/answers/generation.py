"""Stage 7 on the gpu worker: stream the answer from the generator into the answer's event stream.

The worker claims the answer (``retrieved -> generating``, a conditional update, so a
redelivered task does nothing), streams text pieces as ``token`` events, and stops at
``ANSWER_MAX_NEW_TOKENS`` tokens or after ``ANSWER_GENERATION_TIMEOUT`` seconds, keeping what
was written and saying so. Then, with the same model, it attributes every token to the source
sentences (``apps.provenance``, fast mode) and stores the answer with citations derived from
those scores; the ``done`` event carries that text.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any, cast
from urllib.parse import urlsplit

from django.conf import settings
from django.utils import timezone

from apps.answers import streams
from apps.answers.answer_text import answer_clean, lines_written
from apps.answers.models import Answer
from apps.answers.prompt import not_found_text
from apps.answers.support import SAID, UNSUPPORTED_WORDS, answer_refusal, avoid_first, prompt_sources_text
from apps.models.interfaces import AnswerEngine, Generator
from apps.models.openai_engine import EngineUnavailable
from apps.observability.tracing import span_set, stage_span
from apps.provenance.services import answer_attribute_fast

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class GenerationResult:
    text: str
    tokens: int
    seconds: float
    first_token_ms: float | None
    timed_out: bool
    stopped: bool = False  # the asker stopped it
    engine: dict[str, str] | None = None  # what wrote it: kind, name, where

    def as_dict(self) -> dict[str, object]:
        rate = self.tokens / self.seconds if self.seconds > 0 else 0.0
        summary: dict[str, object] = {
            "tokens": self.tokens,
            "seconds": round(self.seconds, 3),
            "first_token_ms": None if self.first_token_ms is None else round(self.first_token_ms, 1),
            "tokens_per_second": round(rate, 2),
            "timed_out": self.timed_out,
            "stopped": self.stopped,
        }
        if self.engine:
            summary["engine"] = self.engine
        return summary


def tokenizer_count(model: Generator) -> Callable[[str], int]:
    """Counts a text's tokens with ``model``'s tokenizer."""
    return lambda text: len(model.tokenizer.encode(text, add_special_tokens=False))


def engine_summary(engine: AnswerEngine) -> dict[str, str]:
    """What the answer's record says about the engine that wrote it."""
    return {"kind": engine.kind, "name": engine.name, "where": engine.where}


def stream_answer(
    *,
    answer_id: str,
    generator: AnswerEngine,
    system: str,
    user: str,
    max_new_tokens: int,
    timeout: float,
    lines: int = 0,
    avoid: Sequence[str] = (),
    count_tokens: Callable[[str], int] | None = None,
) -> GenerationResult:
    """Generate, publishing each piece; stop early (keeping the text so far) past ``timeout``, and
    after ``lines`` written lines when it is not 0 (1: the short answer alone); the answer does not
    begin with a word of ``avoid``. Tokens are counted with ``count_tokens`` (by default the
    generator's own tokenizer)."""
    started = time.perf_counter()
    pieces: list[str] = []
    first: float | None = None
    timed_out = stopped = False
    stream = generator.stream(user, max_new_tokens=max_new_tokens, system=system, avoid_first=avoid)
    try:
        for piece in stream:
            if first is None:
                first = (time.perf_counter() - started) * 1000
            if streams.stop_requested(answer_id):
                stopped = True
                break
            pieces.append(piece)
            streams.event_publish(answer_id, streams.TOKEN, text=piece)
            if lines and lines_written("".join(pieces)) >= lines:
                break
            if time.perf_counter() - started > timeout:
                timed_out = True
                break
    finally:
        stream.close()
    seconds = time.perf_counter() - started
    text = "".join(pieces).strip()
    tokens = (count_tokens or tokenizer_count(cast(Generator, generator)))(text) if text else 0
    return GenerationResult(text, tokens, seconds, first, timed_out, stopped)


STOPPED = "Stopped at your request: the answer is what was written before that."
STOPPED_EARLY = "Stopped at your request before any of the answer was written. The evidence found is shown below."


def answer_stop(answer_id: str) -> str:
    """Stop an answer's generation for its asker: one still queued fails at once (its readers are told),
    one being written stops at the next piece (its worker keeps what was written). Returns what happened:
    ``stopped``, ``stopping`` or ``finished`` (nothing left to stop)."""
    if Answer.objects.filter(id=answer_id, state=Answer.RETRIEVED).update(
        state=Answer.FAILED, error=STOPPED_EARLY, finished_at=timezone.now()
    ):
        streams.event_publish(answer_id, streams.ERROR, message=STOPPED_EARLY)
        return "stopped"
    if Answer.objects.filter(id=answer_id, state=Answer.GENERATING).exists():
        streams.stop_request(answer_id)
        return "stopping"
    return "finished"


WORKER_LOST = (
    "The generation worker stopped while writing this answer (it was killed or crashed). "
    "The evidence found is shown below; please ask again."
)


def answer_claim(answer_id: str) -> bool:
    """``retrieved -> generating``; False when another delivery already took it."""
    return bool(Answer.objects.filter(id=answer_id, state=Answer.RETRIEVED).update(state=Answer.GENERATING))


def answer_orphan_fail(answer_id: str) -> bool:
    """A delivery that finds its answer ``generating`` is the task coming back after the worker running it
    died (``acks_late`` with ``reject_on_worker_lost``; the visibility timeout is longer than the task's time
    limit, so the first run is over): fail the answer with WORKER_LOST and tell its readers. True if it did."""
    failed = Answer.objects.filter(id=answer_id, state=Answer.GENERATING).update(
        state=Answer.FAILED, error=WORKER_LOST, finished_at=timezone.now()
    )
    if failed:
        logger.warning("answer %s: its generation worker died; marked failed", answer_id)
        streams.event_publish(answer_id, streams.ERROR, message=WORKER_LOST)
    return bool(failed)


UNFINISHED = (
    "This answer was never finished: no generation worker reported back within {seconds} s of the question "
    "(the worker was stopped, or its task was lost). The evidence found is shown below; please ask again."
)


def answers_unfinished_fail(*, answer_ids: Sequence[str] | None = None) -> int:
    """Fail the answers still queued or generating ``ANSWER_UNFINISHED_AFTER`` s after they were asked (all of
    them, or those of ``answer_ids``), so none shows "generating" for ever when its whole worker died; a worker
    that does come back later claims nothing. Returns how many were failed."""
    seconds = settings.ANSWER_UNFINISHED_AFTER
    stale = Answer.objects.filter(
        state__in=[Answer.RETRIEVED, Answer.GENERATING], created_at__lt=timezone.now() - timedelta(seconds=seconds)
    )
    if answer_ids is not None:
        stale = stale.filter(id__in=list(answer_ids))
    ids = [str(value) for value in stale.values_list("id", flat=True)]
    if not ids:
        return 0
    message = UNFINISHED.format(seconds=seconds)
    failed = stale.filter(id__in=ids).update(state=Answer.FAILED, error=message, finished_at=timezone.now())
    logger.warning("%d answer(s) unfinished %d s after they were asked: marked failed", failed, seconds)
    for answer_id in ids:
        try:
            streams.event_publish(answer_id, streams.ERROR, message=message)
        except Exception:  # best effort: the stored state is what readers see
            logger.warning("could not tell the readers of answer %s", answer_id, exc_info=True)
    return failed


UNSUPPORTED = (
    "The generated answer is not supported by the sources (its words are not in them), so it is not shown. "
    "The closest sources are shown below."
)
SAID_NOT_FOUND = "The sources found do not answer the question. The closest ones are shown below."


def _not_found_reason(answer: Answer, generated: str) -> str:
    """Why the generated text is not an answer ("" when it is one), in the user's words."""
    reason = answer_refusal(
        generated,
        shown=prompt_sources_text(answer.prompt_user),
        question=answer.question,
        min_support=settings.ANSWER_MIN_ANSWER_SUPPORT,
    )
    return {SAID: SAID_NOT_FOUND, UNSUPPORTED_WORDS: UNSUPPORTED}.get(reason, "")


def answer_not_found(answer_id: str, reason: str, *, question: str, **fields: Any) -> str:
    """Finish an answer as "Not found in your documents" in the question's language (state ``not_found``,
    ``reason`` saying why, its sources kept), unless it finished meanwhile; returns that text."""
    text = not_found_text(question)
    Answer.objects.filter(id=answer_id, state__in=[Answer.RETRIEVED, Answer.GENERATING]).update(
        state=Answer.NOT_FOUND, answer=text, reason=reason, finished_at=timezone.now(), **fields
    )
    return text


def answer_generate(
    *,
    answer_id: str,
    load_engine: Callable[[], AnswerEngine],
    load_reader: Callable[[], Generator] | None = None,
) -> None:
    """Generate the answer of a claimed ``Answer`` and record it (or the failure). ``started`` is
    published before the engine loads, so a reader knows a worker has the question even while a first
    load takes its time. The answer's tokens are attributed by the engine itself when it is a local
    white-box model, else by ``load_reader()`` (the local generator) reading the engine's answer; that
    reader starts on the prompt while the engine writes, so only the answer is left to read at the end."""
    answer = Answer.objects.get(id=answer_id)
    queue_ms = round((timezone.now() - answer.created_at).total_seconds() * 1000, 3)
    streams.event_publish(answer_id, streams.STARTED)
    try:
        engine = load_engine()
        reader = _Reader(engine, load_reader, answer)
        with stage_span("generation", model=engine.name) as span:
            result = stream_answer(
                answer_id=answer_id,
                generator=engine,
                system=answer.prompt_system,
                user=answer.prompt_user,
                max_new_tokens=settings.ANSWER_MAX_NEW_TOKENS,
                timeout=settings.ANSWER_GENERATION_TIMEOUT,
                lines=0 if settings.ANSWER_SUPPORT_SENTENCE else 1,
                avoid=avoid_first(answer.question),
                count_tokens=reader.count_tokens,
            )
            span_set(span, tokens=result.tokens, timed_out=result.timed_out)
        result = replace(result, engine=engine_summary(engine))
    except EngineUnavailable as exc:
        logger.warning("answer %s: %s", answer_id, exc.message)
        _fail(answer_id, f"{exc.message} The evidence found is shown below; please ask again.")
        return
    except Exception as exc:
        logger.exception("generation of answer %s failed", answer_id)
        _fail(answer_id, f"The answer could not be generated ({type(exc).__name__}).")
        return
    note = (
        f"The generation reached its time limit ({settings.ANSWER_GENERATION_TIMEOUT} s); the answer may be incomplete."
        if result.timed_out
        else ""
    )
    if result.stopped:
        note = STOPPED
    if result.stopped and not answer_clean(result.text):
        _fail(answer_id, STOPPED_EARLY)
        return
    generated = answer_clean(result.text)  # what is attributed, cited and kept
    timings = {**answer.timings_ms, "queue": queue_ms, "generation": round(result.seconds * 1000, 3)}
    verdict = "" if result.stopped else _not_found_reason(answer, generated)
    if verdict:
        shown = answer_not_found(
            answer_id,
            verdict,
            question=answer.question,
            generated=generated,
            error=note,
            generation=result.as_dict(),
            timings_ms=timings,
        )
        streams.event_publish(answer_id, streams.GENERATED, answer=shown, not_found=True)
        streams.event_publish(
            answer_id, streams.DONE, answer=shown, generation=result.as_dict(), note=note, reason=verdict
        )
        return
    # The text is final here: readers show it at once; the citations follow after attribution.
    streams.event_publish(answer_id, streams.GENERATED, answer=generated, not_found=False)
    text, citations, attribution_ms = _attribute(answer, reader, generated)
    if attribution_ms is None:
        note = " ".join(filter(None, [note, "Token provenance could not be computed for this answer."]))
    if attribution_ms is not None:
        timings["attribution"] = attribution_ms
    Answer.objects.filter(id=answer_id, state=Answer.GENERATING).update(
        state=Answer.DONE,
        answer=text,
        generated=generated,
        citations=citations,
        error=note,
        generation=result.as_dict(),
        timings_ms=timings,
        finished_at=timezone.now(),
    )
    streams.event_publish(answer_id, streams.DONE, answer=text, generation=result.as_dict(), note=note)


def _fail(answer_id: str, message: str) -> None:
    """Fail a generating answer with ``message`` and tell its readers."""
    Answer.objects.filter(id=answer_id, state=Answer.GENERATING).update(
        state=Answer.FAILED, error=message, finished_at=timezone.now()
    )
    streams.event_publish(answer_id, streams.ERROR, message=message)


LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def reader_prefill(engine: AnswerEngine) -> bool:
    """Whether the reader reads the prompt while ``engine`` writes (``ANSWER_READER_PREFILL``; auto: when
    no server of the engine runs on this machine)."""
    if settings.ANSWER_READER_PREFILL != "auto":
        return bool(settings.ANSWER_READER_PREFILL == "on")
    urls = getattr(engine, "urls", ())
    return bool(urls) and not any(urlsplit(url).hostname in LOOPBACK for url in urls)


class _Reader:
    """The model that attributes an answer's tokens: the engine itself when it is white-box, else the
    local generator, loaded (and started on the prompt) in a background thread while the engine writes."""

    def __init__(self, engine: AnswerEngine, load: Callable[[], Generator] | None, answer: Answer) -> None:
        self._model: Generator | None = cast(Generator, engine) if engine.kind == "in-process" else None
        self._failure: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._prefill = reader_prefill(engine)
        if self._model is None and load is not None:
            self._thread = threading.Thread(
                target=self._prepare, args=(load, answer), name="attribution-reader", daemon=True
            )
            self._thread.start()

    def _prepare(self, load: Callable[[], Generator], answer: Answer) -> None:
        try:
            model = load()
            if self._prefill:
                model.prompt_prefill(answer.prompt_user, system=answer.prompt_system)
            self._model = model
        except BaseException as exc:  # reported when the reader is needed
            self._failure = exc

    def model(self) -> Generator | None:
        """The reader once ready (None when there is none, or it failed to load: logged)."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
            if self._failure is not None:
                logger.error("the attribution reader did not load", exc_info=self._failure)
        return self._model

    def count_tokens(self, text: str) -> int:
        """``text``'s tokens in the reader's tokenizer (words when there is no reader)."""
        model = self.model()
        if model is None:
            return len(text.split())
        return len(model.tokenizer.encode(text, add_special_tokens=False))


def _attribute(answer: Answer, reader: _Reader, generated: str) -> tuple[str, list[dict[str, Any]], float | None]:
    """Fast token attribution of the generated text: the answer with citations, the citations and the
    milliseconds it took (counted from the last token: waiting for the reader counts); a failure keeps
    the generated text (logged, and said in the answer's note)."""
    if not generated:
        return generated, [], 0.0
    started = time.perf_counter()
    model = reader.model()
    if model is None:
        return generated, [], None
    try:
        with stage_span("attribution", model=model.name) as span:
            cited = answer_attribute_fast(answer, model, generated)
            span_set(span, tokens=len(cited.token_offsets), citations=len(cited.citations))
    except Exception:
        logger.exception("token attribution of answer %s failed", answer.id)
        return generated, [], None
    return cited.text, cited.citations, round((time.perf_counter() - started) * 1000, 3)
