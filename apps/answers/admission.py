"""Admission of a question with generation: refuse it (503) when it would wait too long for a slot.

A question waiting for a generation worker longer than ``ANSWER_QUEUE_TIMEOUT`` fails with
NO_WORKER after that wait, so admitting it only to fail it later helps no one. Before retrieval,
``generation_admit`` estimates the wait a new question would have:

* ``running``: answers a worker is generating now (state ``generating``, asked within the last
  ``ANSWER_QUEUE_TIMEOUT + ANSWER_GENERATION_TIMEOUT`` s, so one left by a dead worker is not counted),
  and the running ingestion jobs when the locally started worker serves both queues (its processes
  run either);
* ``waiting``: the messages in the generation queue (``queue_admit``'s depth);
* ``slots``: generations the workers run at once (``RAGKG_GENERATION_SLOTS``, by default
  ``CELERY_WORKER_CONCURRENCY``; 0 turns this check off);
* ``typical``: the median time the last ``RECENT`` answers done within ``RECENT_WINDOW`` kept their
  worker, generation and token attribution (no estimate, so no refusal, until there is one).

While a slot is free the wait is 0. Otherwise the new question starts once ``waiting + running -
slots + 1`` generations have ended, ``slots`` at a time, the running ones half done on average:
``(ahead - 0.5) / slots * typical``. Above ``ANSWER_QUEUE_TIMEOUT`` the question is refused with Busy.
"""

from __future__ import annotations

import statistics
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from apps.answers.models import Answer
from apps.core.admission import busy_raise, queue_admit
from apps.ingest.models import IngestJob

RECENT = 8
RECENT_WINDOW = timedelta(hours=1)
WHAT_QUEUE = "answer generation queue full"
WHAT_WAIT = "answer generation busy: a new question would wait about {seconds:.0f} s for a worker"


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


def worker_shared() -> bool:
    """Whether the locally started worker consumes both the ingest and the generation queue, so that
    its processes are taken by ingestion jobs as well as by generations."""
    return "celery" in settings.MANAGED_SERVICES and {"ingest", settings.ANSWER_GENERATION_QUEUE} <= set(
        settings.WORKER_QUEUES
    )


def generation_running() -> int:
    """Slots taken now: answers being generated, and running ingestion jobs when the worker is shared
    (``worker_shared``). One left by a dead worker stops counting once it cannot be running any more."""
    now = timezone.now()
    window = timedelta(seconds=settings.ANSWER_QUEUE_TIMEOUT + settings.ANSWER_GENERATION_TIMEOUT)
    running = Answer.objects.filter(state=Answer.GENERATING, created_at__gte=now - window).count()
    if worker_shared():
        since = now - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT)
        running += IngestJob.objects.filter(state=IngestJob.RUNNING, started_at__gte=since).count()
    return running


def generation_wait(*, waiting: int, running: int, slots: int, typical: float) -> float:
    """Seconds a question queued now would wait for one of ``slots`` (see the module docstring)."""
    ahead = waiting + running - slots + 1
    if ahead <= 0:
        return 0.0
    return (ahead - 0.5) / slots * typical


def generation_admit() -> None:
    """Raise Busy when the generation queue is full (``RAGKG_MAX_GPU_QUEUE``) or a new question would
    wait longer than ``ANSWER_QUEUE_TIMEOUT`` for a worker. Nothing is recorded either way."""
    waiting = queue_admit(settings.ANSWER_GENERATION_QUEUE, limit=settings.MAX_GPU_QUEUE, what=WHAT_QUEUE)
    if not settings.GENERATION_SLOTS:
        return
    typical = generation_typical_seconds()
    if typical is None:
        return
    running = generation_running()
    wait = generation_wait(waiting=waiting, running=running, slots=settings.GENERATION_SLOTS, typical=typical)
    if wait > settings.ANSWER_QUEUE_TIMEOUT:
        busy_raise(
            WHAT_WAIT.format(seconds=wait),
            reason=(
                f"{running} generating, {waiting} waiting, {settings.GENERATION_SLOTS} slots, "
                f"{typical:.1f} s a generation: about {wait:.0f} s to wait (limit {settings.ANSWER_QUEUE_TIMEOUT:g} s)"
            ),
        )
