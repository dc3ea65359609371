"""Stored token attributions: one row per answer and mode (fast, exact), compact."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from apps.answers.models import Answer


class AttributionRecord(models.Model):
    """An answer's token attribution. ``payload`` is zlib-compressed JSON (``apps.provenance.storage``):
    the units, the answer tokens' offsets and each token's best units with scores."""

    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="attributions")
    mode = models.CharField(max_length=8)  # fast or exact
    method = models.CharField(max_length=200)  # "ablation+lasso via llama.cpp at http://host:port"
    model = models.CharField(max_length=120)
    tokens = models.PositiveIntegerField(default=0)
    forward_passes = models.PositiveIntegerField(default=0)
    seconds = models.FloatField(default=0.0)
    payload = models.BinaryField()
    summary = models.JSONField(default=dict)  # e.g. agreement with fast mode, for exact
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["answer", "mode"], name="one_attribution_per_mode")]
        ordering = ["answer", "mode"]

    def __str__(self) -> str:
        return f"{self.mode} attribution of {self.answer_id}"


class ExactRun(models.Model):
    """One request for exact attribution of an answer (``apps.provenance.runs``): ``queued``, then
    ``running`` with ``done`` of ``total`` ablation passes, then ``done``, ``cancelled`` or ``failed``.
    A cancel request (``cancel_requested``) is honoured between two passes."""

    QUEUED, RUNNING, DONE, CANCELLED, FAILED = "queued", "running", "done", "cancelled", "failed"
    ACTIVE = (QUEUED, RUNNING)

    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="exact_runs")
    state = models.CharField(max_length=10, default=QUEUED)
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    cancel_requested = models.BooleanField(default=False)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    cancelled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"exact attribution of {self.answer_id}: {self.state} {self.done}/{self.total}"

    @property
    def active(self) -> bool:
        return self.state in self.ACTIVE
