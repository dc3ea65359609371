"""Documents' metadata and ingestion jobs (the graph itself lives in Neo4j)."""

from __future__ import annotations

import uuid

from django.db import models


class Document(models.Model):
    """One ingested file; ``id`` is derived from its collection and content hash."""

    id = models.CharField(primary_key=True, max_length=64)
    collection = models.CharField(max_length=100, db_index=True)
    path = models.CharField(max_length=1000)
    title = models.CharField(max_length=300, blank=True)
    mime = models.CharField(max_length=100)
    sha256 = models.CharField(max_length=64, db_index=True)
    size = models.PositiveBigIntegerField()
    counts = models.JSONField(default=dict)
    # ISO 639-1 code of most of its text, found at ingestion (apps/core/language.py); "und" for none.
    language = models.CharField(max_length=8, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["collection", "path"], name="document_unique_path")]
        ordering = ["collection", "path"]

    def __str__(self) -> str:
        return f"{self.collection}:{self.path}"


class IngestJob(models.Model):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    STATES = [(QUEUED, "queued"), (RUNNING, "running"), (DONE, "done"), (FAILED, "failed")]

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    collection = models.CharField(max_length=100)
    state = models.CharField(max_length=10, choices=STATES, default=QUEUED, db_index=True)
    stage = models.CharField(max_length=40, default="queued")
    percent = models.PositiveSmallIntegerField(default=0)
    # [{"name": shown path, "stored": path on disk, "retried_as"?: job id}]; a stored file is kept
    # only while it can be retried (apps.ingest.jobs)
    files = models.JSONField(default=list)
    results = models.JSONField(default=list)  # one outcome per file, in order
    counts = models.JSONField(default=dict)
    error = models.TextField(blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    # Who the job's change-log entries name: ``user:NAME`` for a web upload.
    actor = models.CharField(max_length=200, default="system:ingest")
    # The failed job whose files this job tries again.
    retry_of = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="retries")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"job {self.id} ({self.state})"

    @property
    def finished(self) -> bool:
        return self.state in (self.DONE, self.FAILED)
