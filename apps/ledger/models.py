"""The knowledge change log: entries (append-only), the contents their hashes name, the graph
changes that follow entries, and the chain anchors of the log's tree heads (docs/ledger.md)."""

from __future__ import annotations

from django.db import models

from apps.ledger.canonical import Entry


class ChangeEntry(models.Model):
    """One change to the knowledge. The database refuses updates and deletes (migration 0002)."""

    seq = models.PositiveBigIntegerField(primary_key=True)
    time = models.CharField(max_length=32)  # exactly as hashed: RFC 3339 UTC with microseconds
    actor = models.CharField(max_length=200)
    action = models.CharField(max_length=40, db_index=True)
    subject_kind = models.CharField(max_length=40)
    subject_id = models.CharField(max_length=1200, db_index=True)
    # NULL, not "": the canonical form tells "did not exist" (null) from a hash.
    before = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001
    after = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001
    leaf_hash = models.CharField(max_length=64)
    # Not hashed: the document id a document entry is about, for lookups (its content snapshot names it too).
    ref = models.CharField(max_length=64, blank=True, db_index=True)

    class Meta:
        ordering = ["seq"]
        verbose_name_plural = "change entries"
        # the answer cache looks up the entries of the last seconds (apps/answers/cache.py)
        indexes = [models.Index(fields=["time"], name="ledger_entry_time")]

    def __str__(self) -> str:
        return f"#{self.seq} {self.action} {self.subject_kind}:{self.subject_id}"

    def entry(self) -> Entry:
        return Entry(
            seq=self.seq,
            time=self.time,
            actor=self.actor,
            action=self.action,
            subject_kind=self.subject_kind,
            subject_id=self.subject_id,
            before=self.before,
            after=self.after,
        )


class LedgerHead(models.Model):
    """One row: the next sequence number. Appenders update it first, which serialises them."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    next_seq = models.PositiveBigIntegerField(default=0)

    def __str__(self) -> str:
        return f"next entry #{self.next_seq}"


class MerkleNode(models.Model):
    """The hash of a perfect subtree of the log's Merkle tree: ``2**level`` entries from entry
    ``index * 2**level`` (levels >= 1). A cache that makes tree heads and proofs read O(log n) rows
    (apps/ledger/subtrees.py); ``ledger verify`` recomputes it from the entries and compares."""

    level = models.PositiveSmallIntegerField()
    index = models.PositiveBigIntegerField()
    hash = models.CharField(max_length=64)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["level", "index"], name="merklenode_unique")]

    def __str__(self) -> str:
        return f"subtree {self.level}/{self.index}"


class Snapshot(models.Model):
    """A subject's content, stored under its SHA-256 (the ``before``/``after`` of entries)."""

    sha256 = models.CharField(max_length=64, primary_key=True)
    content = models.JSONField()

    def __str__(self) -> str:
        return self.sha256


class GraphChange(models.Model):
    """A graph write that follows its entry: applied after the entry commits, retried until it is."""

    entry = models.OneToOneField(ChangeEntry, on_delete=models.PROTECT, related_name="graph_change")
    operation = models.JSONField()
    applied_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["entry"]

    def __str__(self) -> str:
        return f"graph change of entry #{self.entry_id}"


class Deployment(models.Model):
    """The anchor contract on a chain, as deployed by ragkg (or configured)."""

    chain_id = models.PositiveBigIntegerField()
    address = models.CharField(max_length=42)
    tx_hash = models.CharField(max_length=66, blank=True)
    raw_tx = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["chain_id", "address"], name="deployment_unique")]
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.address} on chain {self.chain_id}"


class Anchor(models.Model):
    """A tree head ``(tree_size, root)`` on its way to the chain, then on it."""

    QUEUED = "queued"  # waiting to be signed and sent
    SENT = "sent"  # signed (hash and raw bytes kept) and broadcast, not yet confirmed
    CONFIRMED = "confirmed"
    DROPPED = "dropped"  # its block left the chain; a new anchor of the same head replaces it
    STATES = [(QUEUED, QUEUED), (SENT, SENT), (CONFIRMED, CONFIRMED), (DROPPED, DROPPED)]

    tree_size = models.PositiveBigIntegerField(db_index=True)
    root = models.CharField(max_length=64)
    state = models.CharField(max_length=10, choices=STATES, default=QUEUED, db_index=True)
    chain_id = models.PositiveBigIntegerField()
    contract = models.CharField(max_length=42)
    nonce = models.PositiveBigIntegerField(null=True, blank=True)
    tx_hash = models.CharField(max_length=66, blank=True)
    raw_tx = models.TextField(blank=True)
    block_number = models.PositiveBigIntegerField(null=True, blank=True)
    block_hash = models.CharField(max_length=66, blank=True)
    confirmations = models.PositiveIntegerField(default=0)
    attempts = models.PositiveSmallIntegerField(default=0)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    confirmed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-tree_size", "-created_at"]

    def __str__(self) -> str:
        return f"anchor of size {self.tree_size} ({self.state})"
