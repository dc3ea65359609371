"""The four role groups, and a (private, unowned) collection row for every collection that already
holds documents, so an admin can grant or publish it (``manage.py grant``)."""

from __future__ import annotations

from typing import Any

from django.db import migrations

ROLES = ("viewer", "curator", "auditor", "admin")


def forwards(apps: Any, schema_editor: Any) -> None:
    Group = apps.get_model("auth", "Group")
    for role in ROLES:
        Group.objects.get_or_create(name=role)
    Collection = apps.get_model("accounts", "Collection")
    Document = apps.get_model("ingest", "Document")
    IngestJob = apps.get_model("ingest", "IngestJob")
    names = set(Document.objects.values_list("collection", flat=True))
    names |= set(IngestJob.objects.values_list("collection", flat=True))
    for name in sorted(names):
        Collection.objects.get_or_create(name=name)


class Migration(migrations.Migration):

    dependencies = [
        ("accounts", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("ingest", "0001_initial"),
    ]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
