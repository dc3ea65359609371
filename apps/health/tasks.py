"""Tiny tasks that prove a worker consumes a queue and can reach Neo4j."""

from __future__ import annotations

import os
import socket

from celery import shared_task

from apps.graph.driver import get_driver
from apps.graph.selectors import graph_server_info


@shared_task(name="health.ping")
def ping() -> dict[str, object]:
    """Answer with where it ran; send it to a queue with ``apply_async(queue=...)``."""
    return {"pong": True, "host": socket.gethostname(), "pid": os.getpid()}


@shared_task(name="health.graph_ping")
def graph_ping() -> dict[str, object]:
    """Run a query through the worker's own Neo4j driver."""
    return {"server": graph_server_info(driver=get_driver()), "pid": os.getpid()}
