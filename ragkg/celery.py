"""The Celery application: queues ``ingest`` (CPU), ``gpu`` (generation), ``attribution`` (exact
attribution) and ``maintenance`` (the beat's periodic tasks); ``ragkg.workers`` says which local
worker process consumes which.

Configuration lives in ``ragkg.settings`` under the ``CELERY_`` prefix.
"""

from __future__ import annotations

import os
from typing import Any

from celery import Celery
from celery.signals import celeryd_init, worker_process_init, worker_process_shutdown, worker_shutdown
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ragkg.settings")

QUEUE_INGEST = "ingest"
QUEUE_GPU = "gpu"
QUEUE_ATTRIBUTION = "attribution"
QUEUE_MAINTENANCE = "maintenance"

app = Celery("ragkg")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = tuple(Queue(name) for name in (QUEUE_INGEST, QUEUE_GPU, QUEUE_ATTRIBUTION, QUEUE_MAINTENANCE))
app.autodiscover_tasks()


@worker_process_shutdown.connect
@worker_shutdown.connect
def close_graph_driver(**_: Any) -> None:
    """Close this process's Neo4j driver when a worker (or pool process) stops."""
    from apps.graph.driver import close_driver

    close_driver()


@worker_process_shutdown.connect
def stop_extraction_helpers(**_: Any) -> None:
    """Stop this pool process's entity extraction helpers, if it started any."""
    from apps.ingest.services import extraction_helpers_stop

    extraction_helpers_stop()


_generation_node = False  # set in the main process of the worker consuming the generation queue


@celeryd_init.connect
def note_generation_node(sender: str | None = None, **_: Any) -> None:
    """Remember (for the pool processes forked after this) whether this is the generation worker."""
    global _generation_node
    from ragkg.workers import GENERATION_NODE_PREFIX

    _generation_node = bool(sender and str(sender).startswith(GENERATION_NODE_PREFIX))


@worker_process_init.connect
def warm_generator(**_: Any) -> None:
    """A generation worker's pool process loads the generator now, in the background."""
    if _generation_node:
        from apps.answers.warm import warm_generation, warm_in_background

        warm_in_background("generator", warm_generation)
