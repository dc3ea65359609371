"""The change log in the admin: to look, never to touch (the log is append-only, the anchors are
the anchoring task's, the deployments the deploy command's)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.db.models import Model
from django.http import HttpRequest

from apps.ledger.models import Anchor, ChangeEntry, Deployment, GraphChange, Snapshot

if TYPE_CHECKING:
    ModelAdmin = admin.ModelAdmin[Any]
else:  # not subscriptable at run time (no django_stubs_ext monkeypatch here)
    ModelAdmin = admin.ModelAdmin


class ReadOnlyAdmin(ModelAdmin):
    """No adding, changing or deleting, for anyone; viewing for who may view."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


@admin.register(ChangeEntry)
class ChangeEntryAdmin(ReadOnlyAdmin):
    list_display = ["seq", "time", "actor", "action", "subject_kind", "subject_id", "ref"]
    list_filter = ["action", "subject_kind"]
    search_fields = ["subject_id", "actor", "ref"]
    ordering = ["-seq"]


@admin.register(Snapshot)
class SnapshotAdmin(ReadOnlyAdmin):
    list_display = ["sha256"]
    search_fields = ["sha256"]


@admin.register(GraphChange)
class GraphChangeAdmin(ReadOnlyAdmin):
    list_display = ["entry", "applied_at", "attempts", "error"]
    list_filter = [("applied_at", admin.EmptyFieldListFilter)]
    search_fields = ["entry__subject_id", "entry__actor"]
    list_select_related = ["entry"]


@admin.register(Anchor)
class AnchorAdmin(ReadOnlyAdmin):
    list_display = [
        "tree_size",
        "state",
        "chain_id",
        "tx_hash",
        "block_number",
        "confirmations",
        "attempts",
        "created_at",
    ]
    list_filter = ["state", "chain_id"]
    search_fields = ["root", "tx_hash"]


@admin.register(Deployment)
class DeploymentAdmin(ReadOnlyAdmin):
    list_display = ["address", "chain_id", "tx_hash", "created_at"]
    search_fields = ["address", "tx_hash"]
