"""Celery tasks of provenance (thin: the work is in apps.provenance.services)."""

from __future__ import annotations

from celery import shared_task

from apps.answers.models import Answer
from apps.models.registry import generator
from apps.provenance.services import answer_attribute_exact


@shared_task(name="provenance.attribute_exact", acks_late=True)
def attribute_exact_task(answer_id: str) -> dict[str, object]:
    """Exact attribution of one finished answer, on the gpu queue; returns its summary."""
    record = answer_attribute_exact(Answer.objects.get(id=answer_id), generator())
    return {"answer_id": answer_id, "seconds": record.seconds, **record.summary}
