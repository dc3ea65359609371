"""Stored token attributions: one row per answer and mode (fast, exact), compact."""

from __future__ import annotations

from django.db import models

from apps.answers.models import Answer


class AttributionRecord(models.Model):
    """An answer's token attribution. ``payload`` is zlib-compressed JSON (``apps.provenance.storage``):
    the units, the answer tokens' offsets and each token's best units with scores."""

    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="attributions")
    mode = models.CharField(max_length=8)  # fast or exact
    method = models.CharField(max_length=40)
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
