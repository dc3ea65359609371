"""Answers: each question asked, its evidence, its answer and how long each stage took."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models


class Answer(models.Model):
    RETRIEVED = "retrieved"  # evidence ready, generation queued
    GENERATING = "generating"
    DONE = "done"
    # "Not found in your documents": an answer, not a fault. The evidence could not support one
    # (apps/answers/support.py), or nothing matched at all; ``answer`` says so in the question's
    # language, ``reason`` says why, and what the generator wrote, if it ran, is kept in ``generated``.
    NOT_FOUND = "not_found"
    FAILED = "failed"
    STATES = [
        (RETRIEVED, "retrieved"),
        (GENERATING, "generating"),
        (DONE, "done"),
        (NOT_FOUND, "not found"),
        (FAILED, "failed"),
    ]
    FINISHED = (DONE, NOT_FOUND)  # answered: with an answer, or with "not found"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    question = models.TextField()
    collections = models.JSONField(null=True, blank=True)  # None: every collection
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    mode = models.CharField(max_length=10, default="graph")
    generate = models.BooleanField(default=True)
    state = models.CharField(max_length=12, choices=STATES, default=RETRIEVED, db_index=True)
    answer = models.TextField(blank=True)  # with citations [n] derived from token attribution
    generated = models.TextField(blank=True)  # the model's text as generated (its own markers included)
    citations = models.JSONField(default=list)  # per sentence: start, end, sources, marker offsets, at, width
    error = models.TextField(blank=True)  # why it failed, or a note on a finished answer (a time limit met)
    reason = models.TextField(blank=True)  # why it is "not found" (state NOT_FOUND)
    analysis = models.JSONField(default=dict)
    sources = models.JSONField(default=list)
    prompt_system = models.TextField(blank=True)
    prompt_user = models.TextField(blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    timings_ms = models.JSONField(default=dict)
    stats = models.JSONField(default=dict)
    seeds = models.JSONField(default=list)  # the FAISS hits the expansion started from: id, label, score, space
    model_names = models.JSONField(default=dict)
    generation = models.JSONField(default=dict)  # tokens, seconds, first_token_ms, tokens_per_second
    # The change log when the answer was given: tree_size, and per source document the entry
    # (seq, leaf_hash) that put it in the knowledge base (apps.ledger.services.knowledge_stand).
    ledger = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # the answer cache (apps/answers/cache.py): what the answer depends on besides the knowledge, and
    # the change-log position read before its retrieval (null: not to be served from the cache)
    cache_key = models.CharField(max_length=64, blank=True, db_index=True)
    log_position = models.PositiveBigIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.id}: {self.question[:60]}"

    @property
    def not_found(self) -> bool:
        return self.state == self.NOT_FOUND


class Feedback(models.Model):
    """A reader's verdict on an answer: thumbs up or down and an optional note; one per answer and
    reader (an anonymous asker's answer has at most one, from the browser session that asked)."""

    UP = "up"
    DOWN = "down"
    VOTES = [(UP, "helpful"), (DOWN, "not helpful")]
    NOTE_CHARS = 1000

    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="feedback")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    vote = models.CharField(max_length=4, choices=VOTES)
    note = models.TextField(blank=True, max_length=NOTE_CHARS)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True, db_index=True)

    class Meta:
        ordering = ["-updated_at"]

    def __str__(self) -> str:
        return f"{self.vote} on {self.answer_id}"
