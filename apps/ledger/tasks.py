"""Celery tasks of the change log (thin: the work is in apps.ledger.anchoring and .graph)."""

from __future__ import annotations

import logging
from dataclasses import asdict
from typing import Any

from celery import shared_task

from apps.ledger.anchoring import anchors_advance
from apps.ledger.chain import ChainError
from apps.ledger.services import LedgerError

logger = logging.getLogger(__name__)


@shared_task(name="ledger.anchor", acks_late=True, ignore_result=True)
def anchor_task() -> dict[str, Any]:
    """One anchoring round (Celery beat, every LEDGER_ANCHOR_INTERVAL seconds), after applying
    any graph change still pending. A chain that is down is logged and retried next round."""
    from apps.graph.driver import get_driver
    from apps.ledger.graph import graph_changes_apply

    try:
        graph_changes_apply(driver=get_driver())
    except Exception as exc:  # Neo4j away: the changes stay pending, anchoring goes on
        logger.warning("pending graph changes not applied: %s", exc)
    try:
        return asdict(anchors_advance())
    except (ChainError, LedgerError) as exc:
        logger.warning("anchoring round stopped: %s", exc)
        return {"error": str(exc)}
