"""The Celery app's configuration and its shutdown hook."""

from typing import Any

from celery.signals import worker_process_shutdown, worker_shutdown

from apps.graph.driver import driver_is_open, get_driver
from ragkg.celery import QUEUE_ATTRIBUTION, QUEUE_GPU, QUEUE_INGEST, QUEUE_MAINTENANCE, app


def test_tasks_use_json_and_late_acks() -> None:
    assert app.conf.task_serializer == "json"
    assert app.conf.accept_content == ["json"]
    assert app.conf.task_acks_late is True
    assert app.conf.task_reject_on_worker_lost is True
    assert app.conf.task_soft_time_limit < app.conf.task_time_limit
    assert app.conf.broker_transport_options["visibility_timeout"] > app.conf.task_time_limit
    assert {queue.name for queue in app.conf.task_queues} == {
        QUEUE_INGEST,
        QUEUE_GPU,
        QUEUE_ATTRIBUTION,
        QUEUE_MAINTENANCE,
    }


def test_generation_attribution_and_the_periodic_tasks_each_have_their_queue() -> None:
    routes = app.conf.task_routes
    assert routes["answers.generate"] == {"queue": QUEUE_GPU}
    assert routes["provenance.attribute_exact"] == {"queue": QUEUE_ATTRIBUTION}
    for task in ("ledger.anchor", "answers.fail_unfinished", "ingest.expire_failed_uploads"):
        assert routes[task] == {"queue": QUEUE_MAINTENANCE}


def test_worker_shutdown_closes_the_neo4j_driver() -> None:
    for signal in (worker_process_shutdown, worker_shutdown):
        get_driver()  # opening a driver does not connect yet
        assert driver_is_open()
        signal.send(sender=None)
        assert not driver_is_open()


BEAT_PROBE = """
import importlib.util, json, sys, django
django.setup()
from django.conf import settings
spec = importlib.util.spec_from_file_location("services", "scripts/services.py")
services = importlib.util.module_from_spec(spec)
sys.modules["services"] = services
spec.loader.exec_module(services)
from ragkg import workers
print(json.dumps({
    "schedule": settings.CELERY_BEAT_SCHEDULE,
    "commands": {worker.name: services.worker_command(worker) for worker in workers.local_workers()},
}))
"""


def _beat(interval: str, keep_failed_days: str = "30", **more: str) -> dict[str, Any]:
    import json
    import os
    import subprocess
    import sys

    from tests.support import BASE_DIR

    env = {**os.environ, "LEDGER_ANCHOR_INTERVAL": interval, "INGEST_KEEP_FAILED_DAYS": keep_failed_days, **more}
    result = subprocess.run(
        [sys.executable, "-c", BEAT_PROBE], cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout.strip().splitlines()[-1]))


MAINTENANCE = "maintenance"
UNFINISHED = {"task": "answers.fail_unfinished", "schedule": 60.0, "options": {"queue": MAINTENANCE, "expires": 60.0}}
EXPIRE = {
    "task": "ingest.expire_failed_uploads",
    "schedule": 3600.0,
    "options": {"queue": MAINTENANCE, "expires": 3600.0},
}


def queues(command: list[str]) -> list[str]:
    return command[command.index("-Q") + 1].split(",")


def test_the_maintenance_worker_runs_the_beat_with_anchoring_when_an_interval_is_set() -> None:
    on = _beat("30")
    assert on["schedule"] == {
        "answers-unfinished": UNFINISHED,
        "ingest-expire-failed": EXPIRE,
        "ledger-anchor": {
            "task": "ledger.anchor",
            "schedule": 30.0,
            "options": {"queue": MAINTENANCE, "expires": 30.0},
        },
    }
    for probe in (on, _beat("0")):
        beat = probe["commands"]["celery-maintenance"]
        assert "-B" in beat and beat[beat.index("-s") + 1].endswith("run/celerybeat-schedule")
        assert queues(beat) == [MAINTENANCE] and beat[beat.index("-c") + 1] == "1"
        assert all("-B" not in command for name, command in probe["commands"].items() if name != "celery-maintenance")
    assert _beat("0")["schedule"] == {"answers-unfinished": UNFINISHED, "ingest-expire-failed": EXPIRE}
    assert _beat("0", keep_failed_days="0")["schedule"] == {"answers-unfinished": UNFINISHED}


def test_generation_has_a_worker_of_its_own_and_ingestion_runs_niced_beside_attribution() -> None:
    commands = _beat("0", RAGKG_GENERATION_CONCURRENCY="1", RAGKG_INGEST_NICE="7")["commands"]
    assert list(commands) == ["celery-ingest", "celery-gpu", "celery-maintenance"]
    gpu, ingest = commands["celery-gpu"], commands["celery-ingest"]
    assert queues(gpu) == ["gpu"] and gpu[gpu.index("-c") + 1] == "1" and gpu[gpu.index("-n") + 1] == "gpu@%h"
    assert gpu[0] != "nice"
    assert queues(ingest) == ["ingest", "attribution"] and ingest[:3] == ["nice", "-n", "7"]
    assert ingest[ingest.index("-n", 3) + 1] == "ingest@%h"


def test_worker_queues_place_each_kind_of_work() -> None:
    def layout(value: str) -> dict[str, list[str]]:
        probe = _beat("0", RAGKG_WORKER_QUEUES=value)
        return {name: queues(command) for name, command in probe["commands"].items()}

    # ingest,gpu (the default, and what older .env files say): everything here, each on its worker
    assert layout("ingest,gpu") == {
        "celery-ingest": ["ingest", "attribution"],
        "celery-gpu": ["gpu"],
        "celery-maintenance": [MAINTENANCE],
    }
    # generation on GPU machines elsewhere (`celery -A ragkg worker -Q gpu` and `-Q attribution` there)
    assert layout("ingest") == {"celery-ingest": ["ingest"], "celery-maintenance": [MAINTENANCE]}
    assert layout("ingest,attribution") == {
        "celery-ingest": ["ingest", "attribution"],
        "celery-maintenance": [MAINTENANCE],
    }
    # a GPU machine with `make up`: generation, and attribution on a worker of its own, no beat
    assert layout("gpu") == {"celery-ingest": ["attribution"], "celery-gpu": ["gpu"]}
