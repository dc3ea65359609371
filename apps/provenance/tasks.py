"""Celery tasks of provenance (thin: the work is in apps.provenance.services and .runs)."""

from __future__ import annotations

from celery import shared_task

from apps.answers.models import Answer
from apps.models.registry import generator
from apps.provenance.runs import exact_run_execute
from apps.provenance.services import answer_attribute_exact


@shared_task(name="provenance.attribute_exact", acks_late=True)
def attribute_exact_task(answer_id: str, run_id: int | None = None) -> dict[str, object]:
    """Exact attribution of one finished answer, on the attribution queue; returns what became of it.
    Without ``run_id`` (a message from before runs were recorded) the answer is attributed directly."""
    if run_id is None:
        record = answer_attribute_exact(Answer.objects.get(id=answer_id), generator())
        return {"answer_id": answer_id, "seconds": record.seconds, **record.summary}
    run = exact_run_execute(run_id=run_id, generator_of=generator)
    return {"answer_id": answer_id, "run": run_id, "state": run.state if run else "not claimed"}
