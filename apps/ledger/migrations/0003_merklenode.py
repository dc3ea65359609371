"""Stored perfect subtrees of the change log's Merkle tree (apps/ledger/subtrees.py), filled in
from the entries already logged. Not append-only: a cache that ``ledger verify`` checks."""

from __future__ import annotations

from typing import Any

from django.db import migrations, models

from apps.ledger.merkle import node_hash


def fill(apps: Any, schema_editor: Any) -> None:
    entry, node = apps.get_model("ledger", "ChangeEntry"), apps.get_model("ledger", "MerkleNode")
    row = [bytes.fromhex(value) for value in entry.objects.order_by("seq").values_list("leaf_hash", flat=True)]
    level = 0
    while len(row) > 1:
        row = [node_hash(row[i], row[i + 1]) for i in range(0, len(row) - 1, 2)]
        level += 1
        node.objects.bulk_create(
            [node(level=level, index=index, hash=value.hex()) for index, value in enumerate(row)], batch_size=2000
        )


class Migration(migrations.Migration):
    dependencies = [("ledger", "0002_append_only")]

    operations = [
        migrations.CreateModel(
            name="MerkleNode",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("level", models.PositiveSmallIntegerField()),
                ("index", models.PositiveBigIntegerField()),
                ("hash", models.CharField(max_length=64)),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("level", "index"), name="merklenode_unique")],
            },
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
