"""Celery tasks of answering (thin: the work is in apps.answers.generation)."""

from __future__ import annotations

from celery import shared_task

from apps.answers.generation import answer_claim, answer_generate, answer_orphan_fail, answers_unfinished_fail
from apps.models.engines import answer_engine
from apps.models.registry import generator


@shared_task(name="answers.generate", acks_late=True)
def answer_generate_task(answer_id: str) -> None:
    """Stage 7 for one answer, on the gpu queue. A redelivery after the worker died fails the answer
    (``answer_orphan_fail``) rather than leaving it ``generating`` for ever."""
    if answer_claim(answer_id):
        answer_generate(answer_id=answer_id, load_engine=answer_engine, load_reader=generator)
    else:
        answer_orphan_fail(answer_id)


@shared_task(name="answers.fail_unfinished", ignore_result=True)
def answers_unfinished_task() -> int:
    """Run by the beat every minute: fail the answers nobody finished (``answers_unfinished_fail``)."""
    return answers_unfinished_fail()
