"""What curation remembers besides the change log: merge suggestions a curator dismissed."""

from __future__ import annotations

from django.db import models


class DismissedSuggestion(models.Model):
    """A pair of entities curators said are not one: no longer suggested for a merge (restorable).
    The ids are stored in order (``first`` < ``second``); the names as they were, for the list."""

    first = models.CharField(max_length=64)
    second = models.CharField(max_length=64)
    first_name = models.CharField(max_length=300, blank=True)
    second_name = models.CharField(max_length=300, blank=True)
    actor = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["first", "second"], name="dismissed_suggestion_pair")]

    def __str__(self) -> str:
        return f"{self.first_name} / {self.second_name}"


def pair_key(a: str, b: str) -> tuple[str, str]:
    """The stored order of a pair of entity ids."""
    return (a, b) if a <= b else (b, a)
