"""The chain's side: anvil's whole state when the chain is the local managed anvil node; for any
other chain only what identifies the anchors (chain id, contract, last anchored tree size and
root), since that chain is durable on its own and a restore only checks the anchor is still there."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import requests
from django.conf import settings

from apps.backup.manifest import BackupError
from apps.ledger.chain import LOOPBACK, ChainError, chain_from_settings
from apps.ledger.models import Anchor

logger = logging.getLogger(__name__)

STATE_FILE = "chain/anvil-state.hex"


def chain_managed() -> bool:
    """Whether the chain is the local anvil node scripts/services.py runs (its state is ours to copy)."""
    return "chain" in settings.MANAGED_SERVICES and urlsplit(settings.CHAIN_RPC_URL).hostname in LOOPBACK


def _rpc(method: str, params: list[Any]) -> Any:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    try:
        response = requests.post(settings.CHAIN_RPC_URL, json=body, timeout=settings.CHAIN_TIMEOUT * 6)
        answer = response.json()
    except (requests.RequestException, ValueError) as exc:
        raise BackupError(f"the chain node does not answer {method}: {exc}") from exc
    if "error" in answer:
        raise BackupError(f"the chain node refused {method}: {answer['error']}")
    return answer.get("result")


def _last_anchor() -> dict[str, Any]:
    anchor = Anchor.objects.filter(state=Anchor.CONFIRMED).order_by("-tree_size").first()
    if anchor is None:
        return {"contract": "", "tree_size": 0, "root": ""}
    return {"contract": anchor.contract, "tree_size": anchor.tree_size, "root": anchor.root}


def chain_dump(*, folder: Path) -> dict[str, Any]:
    """Record the chain's identity and last anchor; with the managed anvil, also its full state."""
    described: dict[str, Any] = {"chain_id": settings.CHAIN_ID, "managed": chain_managed(), **_last_anchor()}
    if described["managed"]:
        state = _rpc("anvil_dumpState", [])
        (folder / "chain").mkdir(exist_ok=True)
        (folder / STATE_FILE).write_text(str(state), encoding="ascii")
        described["client"] = str(_rpc("web3_clientVersion", []))
        described["state_file"] = STATE_FILE
    return described


def chain_load(*, folder: Path, described: dict[str, Any]) -> None:
    """Load anvil's state back (managed chain): anvil merges it into what the node holds."""
    if described.get("state_file"):
        if not chain_managed():
            logger.warning("the backup holds anvil state but the chain is not the managed anvil: not loaded")
            return
        state = (folder / described["state_file"]).read_text(encoding="ascii").strip()
        if _rpc("anvil_loadState", [state]) is not True:
            raise BackupError("anvil did not load the chain state")


def chain_anchor_check(described: dict[str, Any]) -> str | None:
    """None when the backup's last anchor is on the chain with the same root, else what differs."""
    if not described.get("tree_size"):
        return None
    try:
        chain = chain_from_settings(read_only=True)
        chain.check()
        root = chain.root_at(contract=described["contract"], tree_size=int(described["tree_size"]))
    except ChainError as exc:
        return f"the chain cannot be checked: {exc}"
    if root != described["root"]:
        return f"the chain holds root {root} for tree size {described['tree_size']}, the backup {described['root']}"
    return None
