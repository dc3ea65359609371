"""Exact attribution on demand, as a run an auditor can follow and cancel (``ExactRun``).

``exact_request`` records a ``queued`` run and sends it to ``PROVENANCE_EXACT_QUEUE`` (never the
generation queue, so it takes no generation slot); ``exact_run_execute`` (the worker) claims it
(``queued`` → ``running``, so a duplicate delivery does nothing), writes its progress after every
ablation pass and stops between two passes once ``exact_cancel`` asked it to. A run whose worker died
stays ``running`` until ``CELERY_TASK_TIME_LIMIT`` has passed; it is then shown as lost and a new one
may be requested.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, User
from django.utils import timezone

from apps.answers.models import Answer
from apps.core.workers import queue_unserved
from apps.models.interfaces import Generator
from apps.provenance.exact import AttributionCancelled
from apps.provenance.models import ExactRun
from apps.provenance.services import ProvenanceError, answer_attribute_exact

logger = logging.getLogger(__name__)

Actor = AbstractBaseUser | AnonymousUser | None

NO_WORKER = (
    "No worker consumes the '{queue}' queue, so exact attribution would never start. "
    "Start one: make up (or celery -A ragkg worker -Q {queue})."
)
LOST = "Its worker stopped before it finished."


def _user(user: Actor) -> User | None:
    return user if isinstance(user, User) else None


def run_lost(run: ExactRun) -> bool:
    """A run still ``running`` after the task time limit: its worker is gone."""
    limit = timezone.now() - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT)
    return run.state == ExactRun.RUNNING and run.started_at is not None and run.started_at < limit


def exact_run_latest(answer: Answer) -> ExactRun | None:
    """The answer's latest exact attribution run, or None."""
    return ExactRun.objects.filter(answer=answer).first()


def exact_request(answer: Answer, *, user: Actor = None) -> ExactRun:
    """Record and queue exact attribution of a finished answer; raises ProvenanceError, in plain words,
    when the answer cannot be attributed, a run is already under way, no worker would take it, or the
    broker is down."""
    from apps.provenance.tasks import attribute_exact_task

    if answer.state != Answer.DONE or not (answer.generated or answer.answer):
        raise ProvenanceError("Only a finished, generated answer can be attributed.")
    latest = exact_run_latest(answer)
    if latest is not None and latest.active and not run_lost(latest):
        raise ProvenanceError(
            f"Exact attribution of this answer is already {latest.state} ({latest.done}/{latest.total})."
        )
    queue = settings.PROVENANCE_EXACT_QUEUE
    if queue_unserved(queue):
        raise ProvenanceError(NO_WORKER.format(queue=queue))
    run = ExactRun.objects.create(answer=answer, total=settings.PROVENANCE_EXACT_ABLATIONS, requested_by=_user(user))
    try:
        attribute_exact_task.apply_async(args=(str(answer.id), run.id), queue=queue)
    except Exception as exc:  # kombu raises OperationalError and friends
        _finish(run.id, ExactRun.FAILED, error="The task queue (Redis) was not reachable.")
        raise ProvenanceError("The task queue (Redis) is not reachable; try again shortly.") from exc
    return run


def exact_cancel(*, answer: Answer, user: Actor) -> ExactRun:
    """Cancel the answer's queued or running exact attribution: a queued one at once, a running one
    between two of its passes. Raises ProvenanceError when none is under way."""
    run = exact_run_latest(answer)
    if run is None or not run.active:
        raise ProvenanceError("No exact attribution of this answer is queued or running.")
    now, who = timezone.now(), _user(user)
    stopped = ExactRun.objects.filter(id=run.id, state=ExactRun.QUEUED).update(
        state=ExactRun.CANCELLED, cancel_requested=True, cancelled_by=who, finished_at=now
    )
    if not stopped:
        ExactRun.objects.filter(id=run.id, state=ExactRun.RUNNING).update(cancel_requested=True, cancelled_by=who)
    run.refresh_from_db()
    return run


def _finish(run_id: int, state: str, *, error: str = "") -> None:
    ExactRun.objects.filter(id=run_id, state__in=ExactRun.ACTIVE).update(
        state=state, error=error, finished_at=timezone.now()
    )


def _progress(run_id: int) -> None:
    """Raise AttributionCancelled when the run was asked to stop."""
    if ExactRun.objects.filter(id=run_id, cancel_requested=True).exists():
        raise AttributionCancelled


def run_progress(run_id: int, done: int, total: int) -> None:
    """Record ``done`` of ``total`` passes, then stop here if the run was cancelled meanwhile."""
    ExactRun.objects.filter(id=run_id).update(done=done, total=total)
    _progress(run_id)


def exact_run_execute(*, run_id: int, generator_of: Callable[[], Generator]) -> ExactRun | None:
    """Run a queued exact attribution (the worker's side): claimed once, its progress recorded, ended
    ``done``, ``cancelled`` (nothing stored) or ``failed`` (then the error is raised again). None when
    there was nothing to claim (cancelled before it started, or a duplicate delivery). The generator
    (``generator_of()``) is loaded only once the run is claimed."""
    claimed = ExactRun.objects.filter(id=run_id, state=ExactRun.QUEUED).update(
        state=ExactRun.RUNNING, started_at=timezone.now(), done=0
    )
    if not claimed:
        return None
    run = ExactRun.objects.select_related("answer").get(id=run_id)
    try:
        _progress(run_id)
        answer_attribute_exact(
            run.answer, generator_of(), progress=lambda done, total: run_progress(run_id, done, total)
        )
    except AttributionCancelled:
        logger.info("exact attribution %s of %s cancelled", run_id, run.answer_id)
        _finish(run_id, ExactRun.CANCELLED)
    except Exception as exc:
        _finish(run_id, ExactRun.FAILED, error=f"{type(exc).__name__}: {exc}"[:500])
        raise
    else:
        _finish(run_id, ExactRun.DONE)
    run.refresh_from_db()
    return run
