"""The database and vector parts of a backup: written, changed, restored, and the change log's
append-only protection intact afterwards."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import DatabaseError, transaction
from pytest_django.fixtures import Settings

from apps.backup.database import database_dump, database_load
from apps.backup.media import media_dump, media_load
from apps.backup.vectors import vectors_dump, vectors_load, vectors_present
from apps.ledger.maintenance import maintenance
from apps.ledger.models import ChangeEntry
from apps.ledger.services import tree_head
from apps.vectors.registry import vector_registry, vector_registry_reset
from apps.vectors.services import vectors_add
from apps.vectors.store import store_head
from tests.support import renames_append
from tests.unit.vectors.fakes import clustered, items


@pytest.mark.django_db(transaction=True)
def test_the_sqlite_database_round_trips_with_the_change_log_still_append_only(tmp_path: Path) -> None:
    renames_append(3)
    head = tree_head()
    described = database_dump(folder=tmp_path)
    assert described["vendor"] == "sqlite" and (tmp_path / described["file"]).stat().st_size > 0
    renames_append(2)
    assert tree_head() != head

    with maintenance(False):  # loading pages needs no maintenance mode
        database_load(folder=tmp_path, described=described)
    assert ChangeEntry.objects.count() == 3 and tree_head() == head
    with maintenance(False), pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        ChangeEntry.objects.filter(seq=0).update(actor="mallory")
    assert set(ChangeEntry.objects.values_list("actor", flat=True)) == {"curator:ana"}


@pytest.mark.django_db(transaction=True)
def test_the_portable_json_form_loads_in_maintenance_mode_and_leaves_it_off(tmp_path: Path) -> None:
    renames_append(2)
    head = tree_head()
    described = database_dump(folder=tmp_path, portable=True)
    assert described["file"] == "database.json" and "ledger.changeentry" in (tmp_path / "database.json").read_text()
    renames_append(3)
    with maintenance(False):  # flush needs it, and turns it on for that step only
        database_load(folder=tmp_path, described=described)
        assert ChangeEntry.objects.count() == 2 and tree_head() == head
        with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
            ChangeEntry.objects.filter(seq=1).delete()
    assert ChangeEntry.objects.count() == 2


@pytest.mark.django_db(transaction=True)
def test_vectors_travel_in_the_database_part_and_a_restore_gives_every_host_a_new_epoch(
    tmp_path: Path, settings: Settings
) -> None:
    settings.VECTORS_DIR = tmp_path / "vectors"
    settings.VECTORS_TEXT_DIM, settings.VECTORS_TEXT_MODEL, settings.VECTORS_TEXT_INDEX = 32, "fake-model", "flat"
    vector_registry_reset()
    vectors_add(space="text", items=items(0, 8), vectors=clustered(8, 32))
    vectors_add(space="text", items=items(8, 10), vectors=clustered(2, 32, seed=1))
    backup = tmp_path / "backup"
    backup.mkdir()
    assert vectors_dump(folder=backup) == {"text": 10} and list(backup.iterdir()) == []
    described = database_dump(folder=backup)
    vectors_add(space="text", items=items(10, 15), vectors=clustered(5, 32))
    assert vector_registry().get("text").count == 15
    epoch = store_head("text").epoch

    with maintenance(False):
        database_load(folder=backup, described=described)
    assert vectors_load(folder=backup) == {"text": 10}
    assert store_head("text").epoch != epoch and vectors_present()
    assert vector_registry().get("text").count == 10  # this process's copy built again
    vector_registry_reset()


def test_media_files_are_copied_and_put_back(tmp_path: Path, settings: Settings) -> None:
    settings.MEDIA_ROOT = tmp_path / "media"
    (tmp_path / "media" / "images" / "ab").mkdir(parents=True)
    (tmp_path / "media" / "images" / "ab" / "abcd.png").write_bytes(b"png bytes")
    assert media_dump(folder=tmp_path / "backup") == {"files": 1, "bytes": 9}
    (tmp_path / "media" / "images" / "ab" / "abcd.png").unlink()
    assert media_load(folder=tmp_path / "backup") == 1
    assert (tmp_path / "media" / "images" / "ab" / "abcd.png").read_bytes() == b"png bytes"
