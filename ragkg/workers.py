"""The Celery worker processes ``scripts/services.py`` starts on this machine, and what each consumes.

Three workers, so that no kind of work waits behind another:

* ``celery-gpu`` (node ``gpu@<host>``): generation only (``ANSWER_GENERATION_QUEUE``), with
  ``RAGKG_GENERATION_CONCURRENCY`` processes: a question never waits behind an ingestion or an
  exact attribution;
* ``celery-ingest`` (``ingest@<host>``): ingestion and exact attribution (``PROVENANCE_EXACT_QUEUE``;
  it loads the generator itself), ``CELERY_WORKER_CONCURRENCY`` processes, at CPU priority
  ``RAGKG_INGEST_NICE``;
* ``celery-maintenance`` (``maintenance@<host>``): the beat (``-B``) and its periodic tasks (anchoring,
  unfinished answers, expired uploads) on the ``maintenance`` queue, one process that runs nothing
  long, so a round never queues behind long work.

``RAGKG_WORKER_QUEUES`` says which work runs here: ``ingest`` brings the maintenance worker and the
beat along, ``gpu`` brings the ``attribution`` queue along (exact attribution needs the generator,
so it goes where generation goes; it is served by the ingest worker, not the generation worker).
``attribution`` or ``maintenance`` named alone place only that queue here. A worker with no queue
is not started. ``RAGKG_MANAGED_SERVICES``'s ``celery`` means all of them.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

INGEST = "celery-ingest"
GENERATION = "celery-gpu"
MAINTENANCE = "celery-maintenance"
ORDER = (INGEST, GENERATION, MAINTENANCE)
GENERATION_NODE_PREFIX = "gpu@"  # the generation worker's Celery node name starts so


@dataclass(frozen=True)
class LocalWorker:
    """One worker process to start here: its service name, Celery node name, queues and processes."""

    name: str
    node: str
    queues: tuple[str, ...]
    concurrency: int
    nice: int = 0
    beat: bool = False

    @property
    def node_prefix(self) -> str:
        return self.node.split("@", 1)[0] + "@"


def local_queues() -> set[str]:
    """The queues the local workers consume together (``RAGKG_WORKER_QUEUES`` with what it implies)."""
    named = set(settings.WORKER_QUEUES)
    queues = {name for name in named if name in ("ingest", "attribution", "maintenance")}
    if "gpu" in named:
        queues |= {settings.ANSWER_GENERATION_QUEUE, "attribution"}
    if "ingest" in named:
        queues.add(settings.MAINTENANCE_QUEUE)
    return {settings.PROVENANCE_EXACT_QUEUE if name == "attribution" else name for name in queues}


def local_workers() -> list[LocalWorker]:
    """The workers to start here, in ``ORDER``; none has an empty queue list."""
    queues = local_queues()
    ingest = tuple(name for name in ("ingest", settings.PROVENANCE_EXACT_QUEUE) if name in queues)
    workers = [
        LocalWorker(INGEST, "ingest@%h", ingest, settings.CELERY_WORKER_CONCURRENCY, nice=settings.INGEST_NICE),
        LocalWorker(
            GENERATION,
            f"{GENERATION_NODE_PREFIX}%h",
            tuple(name for name in (settings.ANSWER_GENERATION_QUEUE,) if name in queues),
            settings.GENERATION_CONCURRENCY,
        ),
        LocalWorker(
            MAINTENANCE,
            "maintenance@%h",
            tuple(name for name in (settings.MAINTENANCE_QUEUE,) if name in queues),
            1,
            beat=bool(settings.CELERY_BEAT_SCHEDULE),
        ),
    ]
    return [worker for worker in workers if worker.queues]


def managed() -> bool:
    """Whether this machine's scripts start the Celery workers (``celery`` in RAGKG_MANAGED_SERVICES)."""
    return "celery" in settings.MANAGED_SERVICES
