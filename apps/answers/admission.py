"""Admission of a question with generation: refuse it (503) when it would wait too long for a slot.

A question waiting for a generation worker longer than ``ANSWER_QUEUE_TIMEOUT`` fails with
NO_WORKER after that wait, so admitting it only to fail it later helps no one. Before retrieval,
``generation_admit`` estimates the wait a new question would have:

* ``running``: answers a worker is generating now (state ``generating``, asked within the last
  ``ANSWER_QUEUE_TIMEOUT + ANSWER_GENERATION_TIMEOUT`` s, so one left by a dead worker is not counted);
* ``waiting``: the messages in the generation queue (``queue_admit``'s depth);
* ``slots``: generations the workers run at once (``RAGKG_GENERATION_SLOTS``, by default
  ``CELERY_WORKER_CONCURRENCY``; 0 turns this check off);
* ``typical``: the median generation time of the last ``RECENT`` answers done within ``RECENT_WINDOW``
  (no estimate, so no refusal, until there is one).

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

RECENT = 8
RECENT_WINDOW = timedelta(hours=1)
WHAT_QUEUE = "answer generation queue full"
WHAT_WAIT = "answer generation busy: a new question would wait about {seconds:.0f} s for a worker"


def generation_typical_seconds() -> float | None:
    """The median generation time of the latest answers done within RECENT_WINDOW, or None."""
    recent = (
        Answer.objects.filter(state=Answer.DONE, generate=True, finished_at__gte=timezone.now() - RECENT_WINDOW)
        .order_by("-finished_at")
        .values_list("timings_ms", flat=True)[:RECENT]
    )
    seconds = [
        float(timings["generation"]) / 1000
        for timings in recent
        if isinstance(timings, dict) and isinstance(timings.get("generation"), (int, float))
    ]
    return statistics.median(seconds) if seconds else None


def generation_running() -> int:
    """Answers being generated now (a dead worker's are left out once they cannot be running)."""
    window = timedelta(seconds=settings.ANSWER_QUEUE_TIMEOUT + settings.ANSWER_GENERATION_TIMEOUT)
    return Answer.objects.filter(state=Answer.GENERATING, created_at__gte=timezone.now() - window).count()


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
