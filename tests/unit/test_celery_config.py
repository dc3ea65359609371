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
