"""Anchoring the change log's tree heads on the chain, crash-safe and reorg-aware.

One round (``anchors_advance``, run by the Celery beat task and ``manage.py ledger anchor``):

1. the contract: the configured one, the one ragkg deployed, or a new deployment;
2. a ``queued`` anchor for the current tree head when the log grew since the last anchor;
3. each queued anchor is signed locally, its hash and raw bytes are saved (``sent``), and only
   then broadcast: a worker that dies in between rebroadcasts the very same transaction on the
   next round, so a head is never anchored by two transactions of ours (and the contract ignores
   a head it already holds);
4. sent anchors are confirmed once their block has ``CHAIN_CONFIRMATIONS`` blocks on it;
5. recent anchors whose block is no longer on the chain (a reorganisation) and whose
   transaction is not mined again are ``dropped``, and their head is queued again.

The chain being down or refusing a transaction stops a round, never the log: entries keep being
written, and the queued heads go out on a later round.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from django.conf import settings
from django.db.models import Max
from django.utils import timezone

from apps.ledger.chain import Chain, ChainError, ChainRefused, SignedTx, chain_from_settings
from apps.ledger.models import Anchor, Deployment
from apps.ledger.services import LedgerError, tree_head

logger = logging.getLogger(__name__)

ACTIVE = (Anchor.QUEUED, Anchor.SENT, Anchor.CONFIRMED)
REORG_WINDOW = 64  # how many of the latest anchors are re-checked against the chain each round


@dataclass
class Round:
    contract: str = ""
    queued: list[int] = field(default_factory=list)  # tree sizes
    sent: list[int] = field(default_factory=list)
    confirmed: list[int] = field(default_factory=list)
    dropped: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _wait_receipt(chain: Chain, tx_hash: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if chain.receipt(tx_hash) is not None:
            return True
        time.sleep(0.2)
    return False


def contract_ensure(chain: Chain) -> str:
    """The anchor contract's address: configured, deployed before, or deployed now."""
    if settings.CHAIN_CONTRACT_ADDRESS:
        if not chain.has_code(settings.CHAIN_CONTRACT_ADDRESS):
            raise LedgerError(f"CHAIN_CONTRACT_ADDRESS {settings.CHAIN_CONTRACT_ADDRESS} holds no contract")
        return settings.CHAIN_CONTRACT_ADDRESS
    for deployment in Deployment.objects.filter(chain_id=settings.CHAIN_ID):
        if chain.has_code(deployment.address):
            return deployment.address
        if deployment.raw_tx and chain.receipt(deployment.tx_hash) is None:
            chain.broadcast(SignedTx(deployment.tx_hash, deployment.raw_tx, -1, chain.address))
            if _wait_receipt(chain, deployment.tx_hash, settings.CHAIN_TIMEOUT) and chain.has_code(deployment.address):
                return deployment.address
    return contract_deploy(chain)


def contract_deploy(chain: Chain) -> str:
    """Deploy a new anchor contract; recorded before it is broadcast."""
    tx, address = chain.deploy_sign(nonce=chain.pending_nonce())
    Deployment.objects.create(chain_id=settings.CHAIN_ID, address=address, tx_hash=tx.tx_hash, raw_tx=tx.raw)
    chain.broadcast(tx)
    if not _wait_receipt(chain, tx.tx_hash, settings.CHAIN_TIMEOUT * 3) or not chain.has_code(address):
        raise LedgerError(
            f"the anchor contract deployment {tx.tx_hash} is not mined yet; it is resent on the next round"
        )
    logger.info("anchor contract deployed at %s on chain %s", address, settings.CHAIN_ID)
    return address


def _queue_head(contract: str, report: Round) -> None:
    head = tree_head()
    if head.size == 0:
        return
    newest = Anchor.objects.filter(state__in=ACTIVE, contract=contract).aggregate(size=Max("tree_size"))["size"]
    if newest is not None and newest >= head.size:
        return
    Anchor.objects.create(
        tree_size=head.size, root=head.root, chain_id=settings.CHAIN_ID, contract=contract, state=Anchor.QUEUED
    )
    report.queued.append(head.size)


def _send(chain: Chain, anchor: Anchor, report: Round) -> None:
    try:
        tx = chain.anchor_sign(
            contract=anchor.contract,
            tree_size=anchor.tree_size,
            root=bytes.fromhex(anchor.root),
            nonce=chain.pending_nonce(),
        )
    except ChainRefused as exc:  # e.g. the contract holds another root for this size: resending cannot help
        Anchor.objects.filter(pk=anchor.pk).update(state=Anchor.DROPPED, error=str(exc), attempts=anchor.attempts + 1)
        report.errors.append(f"anchor of size {anchor.tree_size}: {exc}")
        logger.error("anchor of size %s refused: %s", anchor.tree_size, exc)
        return
    claimed = Anchor.objects.filter(pk=anchor.pk, state=Anchor.QUEUED).update(
        state=Anchor.SENT,
        nonce=tx.nonce,
        tx_hash=tx.tx_hash,
        raw_tx=tx.raw,
        sent_at=timezone.now(),
        attempts=anchor.attempts + 1,
        error="",
    )
    if not claimed:
        return  # another round took it
    try:
        chain.broadcast(tx)
    except ChainError as exc:
        Anchor.objects.filter(pk=anchor.pk).update(state=Anchor.QUEUED, tx_hash="", raw_tx="", error=str(exc))
        raise
    report.sent.append(anchor.tree_size)


def _follow(chain: Chain, anchor: Anchor, head: int, report: Round) -> None:
    """Confirm a sent anchor, or notice that a recorded block left the chain."""
    receipt = chain.receipt(anchor.tx_hash) if anchor.tx_hash else None
    if receipt is None:
        if anchor.block_hash or anchor.state == Anchor.CONFIRMED:
            _drop(anchor, f"block {anchor.block_number} ({anchor.block_hash}) is no longer on the chain", report)
            return
        if not anchor.raw_tx:
            return
        # Sent, not mined: make sure the node has it (after a crash, or a node restart), and give
        # it a moment to be mined (a local node mines at once).
        chain.broadcast(SignedTx(anchor.tx_hash, anchor.raw_tx, anchor.nonce or 0, chain.address))
        if not _wait_receipt(chain, anchor.tx_hash, min(2.0, settings.CHAIN_TIMEOUT)):
            return
        receipt = chain.receipt(anchor.tx_hash)
        if receipt is None:
            return
    if not receipt.ok:
        Anchor.objects.filter(pk=anchor.pk).update(
            state=Anchor.DROPPED,
            error=f"the contract refused the head (transaction {anchor.tx_hash} reverted): it holds another root",
        )
        report.errors.append(f"anchor of size {anchor.tree_size}: the chain refused the head")
        return
    if receipt.block_number > head:  # mined after the head was read: the chain has that block now
        head = max(chain.head(), receipt.block_number)  # a lagging node's head never counts below the receipt
    confirmations = max(0, head - receipt.block_number + 1)
    confirmed = confirmations >= settings.CHAIN_CONFIRMATIONS
    Anchor.objects.filter(pk=anchor.pk).update(
        block_number=receipt.block_number,
        block_hash=receipt.block_hash,
        confirmations=confirmations,
        state=Anchor.CONFIRMED if confirmed else Anchor.SENT,
        confirmed_at=anchor.confirmed_at or (timezone.now() if confirmed else None),
    )
    if confirmed and anchor.state != Anchor.CONFIRMED:
        report.confirmed.append(anchor.tree_size)


def _drop(anchor: Anchor, reason: str, report: Round) -> None:
    Anchor.objects.filter(pk=anchor.pk).update(state=Anchor.DROPPED, error=reason)
    Anchor.objects.create(
        tree_size=anchor.tree_size,
        root=anchor.root,
        chain_id=anchor.chain_id,
        contract=anchor.contract,
        state=Anchor.QUEUED,
        error=f"queued again: {reason}",
    )
    logger.warning("anchor of size %s dropped by a reorganisation (%s); queued again", anchor.tree_size, reason)
    report.dropped.append(anchor.tree_size)


def anchors_advance(*, chain: Chain | None = None) -> Round:
    """One anchoring round (see the module docstring). Raises ChainError when the chain is unusable."""
    chain = chain or chain_from_settings()
    chain.check()
    report = Round(contract=contract_ensure(chain))
    _queue_head(report.contract, report)
    head = chain.head()
    recent = Anchor.objects.filter(contract=report.contract, state__in=(Anchor.SENT, Anchor.CONFIRMED))
    for anchor in recent.order_by("-tree_size")[:REORG_WINDOW]:
        _follow(chain, anchor, head, report)
    for anchor in Anchor.objects.filter(contract=report.contract, state=Anchor.QUEUED).order_by("tree_size"):
        _send(chain, anchor, report)
    if report.sent:
        head = chain.head()
        for anchor in Anchor.objects.filter(contract=report.contract, state=Anchor.SENT, tree_size__in=report.sent):
            _follow(chain, anchor, head, report)
    return report
