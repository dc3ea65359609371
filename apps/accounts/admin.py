"""Collections in the admin, with who may read each one (grants to users and groups inline)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin

from apps.accounts.models import Collection, CollectionGrant

if TYPE_CHECKING:
    ModelAdmin = admin.ModelAdmin[Any]
    TabularInline = admin.TabularInline[Any, Any]
else:  # not subscriptable at run time (no django_stubs_ext monkeypatch here)
    ModelAdmin = admin.ModelAdmin
    TabularInline = admin.TabularInline


class CollectionGrantInline(TabularInline):
    model = CollectionGrant
    extra = 1
    autocomplete_fields = ["user", "group"]


@admin.register(Collection)
class CollectionAdmin(ModelAdmin):
    list_display = ["name", "title", "public", "owner", "created_at"]
    list_filter = ["public"]
    search_fields = ["name", "title"]
    autocomplete_fields = ["owner"]
    inlines = [CollectionGrantInline]
