"""Admission of a question with generation: refuse it (503) when it would wait too long for a slot.

A question waiting for a generation worker longer than ``ANSWER_QUEUE_TIMEOUT`` fails with
NO_WORKER after that wait, so admitting it only to fail it later helps no one. Before retrieval,
``generation_admit`` estimates the wait a new question would have:

* ``running``: answers a worker is generating now (state ``generating``, asked within the last
  ``ANSWER_QUEUE_TIMEOUT + ANSWER_GENERATION_TIMEOUT`` s, so one left by a dead worker is not counted);
  ingestion and exact attribution run on other workers (``ragkg.workers``) and take no slot;
* ``waiting``: the messages in the generation queue (``queue_admit``'s depth);
* ``slots``: generations the workers run at once (``RAGKG_GENERATION_SLOTS``, by default
  ``RAGKG_GENERATION_CONCURRENCY``; 0 turns this check off);
* ``typical``: the median time the last ``RECENT`` answers done within ``RECENT_WINDOW`` kept their
  worker, generation and token attribution (no estimate, so no refusal, until there is one).

While a slot is free the wait is 0. Otherwise the new question starts once ``waiting + running -
slots + 1`` generations have ended, ``slots`` at a time, the running ones half done on average:
``(ahead - 0.5) / slots * typical``. Above ``ANSWER_QUEUE_TIMEOUT`` the question is refused with Busy
(SLOTS_BUSY, ``Retry-After`` the part of the wait above the timeout, at least ``RAGKG_SHED_RETRY_AFTER``).

Before all that, when the workers answer (``apps.core.workers``) and none consumes the generation
queue, the question is refused at once with NO_WORKER: waiting for a worker that is not there helps
no one, and "busy" would be the wrong thing to say.
"""

from __future__ import annotations

import math
import statistics
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from apps.answers.models import Answer
from apps.core import dependencies as deps
from apps.core.admission import Busy, busy_raise, queue_admit
from apps.core.workers import queue_unserved

RECENT = 8
RECENT_WINDOW = timedelta(hours=1)
WHAT_QUEUE = "answer generation queue full"
SLOTS_BUSY = (
    "All {slots} generation slots are busy ({running} generating, {waiting} waiting): a new question would "
    "wait about {seconds:.0f} s for one. Nothing was recorded; please try again in {retry} s."
)
NO_WORKER = (
    "No generation worker is running (no Celery worker consumes the '{queue}' queue), so no answer can be "
    "generated now; nothing was recorded. Questions without generation still work. Fix: {fix}"
)


def worker_seconds(timings: object) -> float | None:
    """How long an answer's generation task kept its worker process: generation and token attribution."""
    if not isinstance(timings, dict):
        return None
    generation, attribution = timings.get("generation"), timings.get("attribution", 0)
    if not isinstance(generation, (int, float)):
        return None
    return (float(generation) + (float(attribution) if isinstance(attribution, (int, float)) else 0.0)) / 1000


def generation_typical_seconds() -> float | None:
    """The median worker time (``worker_seconds``) of the latest answers done within RECENT_WINDOW, or None."""
    recent = (
        Answer.objects.filter(state=Answer.DONE, generate=True, finished_at__gte=timezone.now() - RECENT_WINDOW)
        .order_by("-finished_at")
        .values_list("timings_ms", flat=True)[:RECENT]
    )
    seconds = [value for value in map(worker_seconds, recent) if value is not None]
    return statistics.median(seconds) if seconds else None


def generation_running() -> int:
    """Slots taken now: answers being generated. One left by a dead worker stops counting once it
    cannot be running any more."""
    window = timedelta(seconds=settings.ANSWER_QUEUE_TIMEOUT + settings.ANSWER_GENERATION_TIMEOUT)
    return Answer.objects.filter(state=Answer.GENERATING, created_at__gte=timezone.now() - window).count()


def generation_worker_check() -> None:
    """Raise Busy (kind ``no_worker``) when the workers answered and none consumes the generation queue."""
    queue = settings.ANSWER_GENERATION_QUEUE
    if queue_unserved(queue):
        retry = settings.SHED_RETRY_AFTER
        message = NO_WORKER.format(queue=queue, fix=deps.fix_for(deps.GENERATION))
        raise Busy(message, retry_after=retry, reason=f"no worker consumes {queue!r}", kind="no_worker")


def generation_wait(*, waiting: int, running: int, slots: int, typical: float) -> float:
    """Seconds a question queued now would wait for one of ``slots`` (see the module docstring)."""
    ahead = waiting + running - slots + 1
    if ahead <= 0:
        return 0.0
    return (ahead - 0.5) / slots * typical


def generation_admit() -> None:
    """Raise Busy when no worker consumes the generation queue, when that queue is full
    (``RAGKG_MAX_GPU_QUEUE``) or when a new question would wait longer than ``ANSWER_QUEUE_TIMEOUT``
    for a slot. Nothing is recorded either way."""
    generation_worker_check()
    waiting = queue_admit(settings.ANSWER_GENERATION_QUEUE, limit=settings.MAX_GPU_QUEUE, what=WHAT_QUEUE)
    slots = settings.GENERATION_SLOTS
    if not slots:
        return
    typical = generation_typical_seconds()
    if typical is None:
        return
    running = generation_running()
    wait = generation_wait(waiting=waiting, running=running, slots=slots, typical=typical)
    if wait > settings.ANSWER_QUEUE_TIMEOUT:
        retry = max(settings.SHED_RETRY_AFTER, math.ceil(wait - settings.ANSWER_QUEUE_TIMEOUT))
        busy_raise(
            WHAT_QUEUE,
            message=SLOTS_BUSY.format(slots=slots, running=running, waiting=waiting, seconds=wait, retry=retry),
            retry_after=retry,
            reason=(
                f"{running} generating, {waiting} waiting, {slots} slots, "
                f"{typical:.1f} s a generation: about {wait:.0f} s to wait (limit {settings.ANSWER_QUEUE_TIMEOUT:g} s)"
            ),
        )
