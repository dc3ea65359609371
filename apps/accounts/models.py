"""Collections and who may read them.

A collection is the name that documents carry (``Document.collection``, the ``collection``
property of graph nodes and FAISS ids' metadata). It is readable by everyone (visitors included)
when public, else by its owner, by the users and groups it is granted to, and by admins.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models
from django.db.models import Q


class Collection(models.Model):
    name = models.CharField(primary_key=True, max_length=100)
    title = models.CharField(max_length=300, blank=True)
    public = models.BooleanField(default=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class CollectionGrant(models.Model):
    """Read access to a collection for one user or one group."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="grants")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE)
    group = models.ForeignKey(Group, null=True, blank=True, on_delete=models.CASCADE)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(user__isnull=False, group__isnull=True) | Q(user__isnull=True, group__isnull=False),
                name="grant_to_one_user_or_group",
            ),
            models.UniqueConstraint(fields=["collection", "user"], name="grant_unique_user"),
            models.UniqueConstraint(fields=["collection", "group"], name="grant_unique_group"),
        ]

    def __str__(self) -> str:
        return f"{self.collection_id} → {self.user or self.group}"


class ApiKey(models.Model):
    """A user's key for scripts and clients (``Authorization: Bearer KEY``), stored hashed.

    The key reads ``rkg_<key_id>_<secret>``: ``key_id`` is public (listed, revoked by it), the
    whole key is kept only as its SHA-256 (a random 256-bit secret needs no slow hash). A key acts as
    its user: the same collections and roles, wherever a logged-in session would.
    """

    key_id = models.CharField(primary_key=True, max_length=16)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100, blank=True)
    digest = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.key_id} ({self.name or 'unnamed'})"
