"""The vectors' source of truth, in the relational database every host shares.

``StoredVector`` holds each graph node's vector (float32 bytes) next to the node id, label and
collection it stands for, and the sequence number of the change that last wrote it; a removed
vector stays as a row with ``removed`` set (a tombstone) until ``vectors prune`` drops it, so a
reader that follows the feed sees removals as well as additions. ``VectorFeed`` is one row per
space: the head of its sequence (the last committed change), the embedding model and dimension the
rows were made with, ``epoch`` (a fresh value whenever the rows are replaced wholesale: rebuild,
restore), and ``pruned`` (tombstones at or below it are gone). docs/vectors.md has the design.
"""

from __future__ import annotations

import uuid

from django.db import models


def new_epoch() -> str:
    return uuid.uuid4().hex


class VectorFeed(models.Model):
    space = models.CharField(primary_key=True, max_length=16)
    seq = models.BigIntegerField(default=0)
    model = models.CharField(max_length=200, default="")
    dim = models.IntegerField(default=0)
    epoch = models.CharField(max_length=32, default=new_epoch)
    pruned = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.space} feed at {self.seq}"


class StoredVector(models.Model):
    space = models.CharField(max_length=16)
    vid = models.BigIntegerField()
    node_id = models.CharField(max_length=200)
    label = models.CharField(max_length=16)
    collection = models.CharField(max_length=200)
    vector = models.BinaryField(default=b"")
    seq = models.BigIntegerField()
    removed = models.BooleanField(default=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["space", "vid"], name="vectors_unique_space_vid")]
        indexes = [models.Index(fields=["space", "seq", "id"], name="vectors_space_seq_id")]  # the feed's order

    def __str__(self) -> str:
        return f"{self.space} vector of {self.node_id}"


class CollectionSpace(models.Model):
    """Which text space holds a collection's texts ("text" or "mtext"), settled when its first
    documents are written (apps/vectors/spaces.py); a collection without a row is in "text"."""

    collection = models.CharField(primary_key=True, max_length=200)
    space = models.CharField(max_length=16)
    language = models.CharField(max_length=8, blank=True, default="")  # what auto decided on
    decided_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.collection} in {self.space}"
