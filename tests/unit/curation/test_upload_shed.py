"""An upload while the ingestion queue is full: a 503 with Retry-After, and nothing stored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from pytest_django.fixtures import Settings as SettingsWrapper

from apps.accounts.models import Collection
from apps.core import admission
from apps.ingest.models import IngestJob

pytestmark = pytest.mark.django_db


class FullQueue:
    def pipeline(self, transaction: bool = True) -> Any:
        class Pipe:
            names: list[str] = []

            def llen(self, name: str) -> None:
                self.names.append(name)

            def execute(self) -> list[int]:
                return [30 if name == "ingest" else 0 for name in self.names]

        return Pipe()


def test_an_upload_into_a_full_ingestion_queue_is_shed_and_stores_nothing(
    curator: Client, settings: SettingsWrapper, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.UPLOAD_DIR = tmp_path
    settings.MAX_INGEST_QUEUE = 20
    monkeypatch.setattr(admission, "broker_client", FullQueue)
    response = curator.post(
        "/curation/documents/upload/", {"files": [SimpleUploadedFile("notes.txt", b"Ada")], "collection": "mine"}
    )
    assert response.status_code == 503 and response["Retry-After"] == "10"
    assert "ingestion queue full" in response.content.decode()
    assert not IngestJob.objects.exists() and not Collection.objects.filter(name="mine").exists()
    assert not any(tmp_path.iterdir())
