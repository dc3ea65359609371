"""The Celery app's configuration and its shutdown hook."""

from celery.signals import worker_process_shutdown, worker_shutdown

from apps.graph.driver import driver_is_open, get_driver
from ragkg.celery import QUEUE_GPU, QUEUE_INGEST, app


def test_tasks_use_json_and_late_acks() -> None:
    assert app.conf.task_serializer == "json"
    assert app.conf.accept_content == ["json"]
    assert app.conf.task_acks_late is True
    assert app.conf.task_reject_on_worker_lost is True
    assert app.conf.task_soft_time_limit < app.conf.task_time_limit
    assert app.conf.broker_transport_options["visibility_timeout"] > app.conf.task_time_limit
    assert {queue.name for queue in app.conf.task_queues} == {QUEUE_INGEST, QUEUE_GPU}


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
print(json.dumps({"schedule": settings.CELERY_BEAT_SCHEDULE, "command": services.celery_command()}))
"""


def _beat(interval: str, keep_failed_days: str = "30") -> dict[str, object]:
    import json
    import os
    import subprocess
    import sys

    from tests.support import BASE_DIR

    env = {**os.environ, "LEDGER_ANCHOR_INTERVAL": interval, "INGEST_KEEP_FAILED_DAYS": keep_failed_days}
    result = subprocess.run(
        [sys.executable, "-c", BEAT_PROBE], cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout.strip().splitlines()[-1]))


UNFINISHED = {"task": "answers.fail_unfinished", "schedule": 60.0, "options": {"queue": "ingest", "expires": 60.0}}
EXPIRE = {"task": "ingest.expire_failed_uploads", "schedule": 3600.0, "options": {"queue": "ingest", "expires": 3600.0}}


def test_the_worker_runs_the_beat_with_anchoring_when_an_interval_is_set() -> None:
    on = _beat("30")
    assert on["schedule"] == {
        "answers-unfinished": UNFINISHED,
        "ingest-expire-failed": EXPIRE,
        "ledger-anchor": {"task": "ledger.anchor", "schedule": 30.0, "options": {"queue": "ingest", "expires": 30.0}},
    }
    for probe in (on, _beat("0")):
        command = list(probe["command"])  # type: ignore[call-overload]
        assert "-B" in command and command[command.index("-s") + 1].endswith("run/celerybeat-schedule")
    assert _beat("0")["schedule"] == {"answers-unfinished": UNFINISHED, "ingest-expire-failed": EXPIRE}
    assert _beat("0", keep_failed_days="0")["schedule"] == {"answers-unfinished": UNFINISHED}
