"""The process-wide Neo4j driver, opened lazily and closed on shutdown.

Code that talks to Neo4j receives a driver as an argument; only the edges
(views, tasks, commands) call :func:`get_driver`. Statements run through ``apps.graph.db``.
"""

from __future__ import annotations

import logging
import threading

from django.conf import settings
from neo4j import Driver, GraphDatabase

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_driver: Driver | None = None
_driver_key: tuple[str, str, str] | None = None


def _settings_key() -> tuple[str, str, str]:
    return (settings.NEO4J_URI, settings.NEO4J_USER, settings.NEO4J_PASSWORD)


def get_driver() -> Driver:
    """Return the driver for the configured Neo4j, opening it on first use."""
    global _driver, _driver_key
    key = _settings_key()
    with _lock:
        if _driver is not None and _driver_key == key:
            return _driver
        if _driver is not None:
            _driver.close()
        _driver = GraphDatabase.driver(
            key[0],
            auth=(key[1], key[2]),
            connection_timeout=settings.NEO4J_CONNECTION_TIMEOUT,
            connection_acquisition_timeout=settings.NEO4J_CONNECTION_TIMEOUT * 2,
            max_transaction_retry_time=settings.NEO4J_MAX_RETRY_TIME,
            notifications_min_severity="OFF",
        )
        _driver_key = key
        logger.debug("neo4j driver opened for %s", key[0])
        return _driver


def close_driver() -> bool:
    """Close the driver if one is open; return whether one was closed."""
    global _driver, _driver_key
    with _lock:
        if _driver is None:
            return False
        _driver.close()
        logger.info("neo4j driver closed")
        _driver = None
        _driver_key = None
        return True


def driver_is_open() -> bool:
    return _driver is not None
