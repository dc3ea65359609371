"""Upload limits and the type allow-list: a refused request is a clear 400 and stores nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from pytest_django.fixtures import Settings as SettingsWrapper

from apps.accounts.models import Collection
from apps.ingest.models import IngestJob
from apps.ingest.parsing import MIME_TYPES, SUPPORTED_EXTENSIONS
from apps.ingest.parsing.formats import FORMATS
from apps.ingest.uploads import UploadLimits, UploadRefused, content_type_check, uploads_check, uploads_submit
from apps.vectors.spaces import collection_spaces, settled_spaces

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32
GOOD = [
    ("notes.txt", b"Ada Lovelace wrote the first program."),
    ("notes.md", b"# Title\n\ntext"),
    ("page.html", b"<html><body>hi</body></html>"),
    ("paper.pdf", b"%PDF-1.7\n..."),
    ("photo.png", PNG),
    ("photo.jpg", b"\xff\xd8\xff\xe0" + b"\x00" * 16),
    ("anim.gif", b"GIF89a" + b"\x00" * 16),
    ("pic.webp", b"RIFF\x10\x00\x00\x00WEBPVP8 "),
    ("table.csv", b"a,b\n1,2\n"),
    ("table.tsv", b"a\tb\n1\t2\n"),
    ("book.xlsx", b"PK\x03\x04" + b"\x00" * 16),
    ("bundle.zip", b"PK\x03\x04" + b"\x00" * 16),
    ("utf16.txt", b"\xff\xfeA\x00d\x00a\x00"),
]
BAD = [
    ("program.exe", b"MZ\x90\x00", "“.exe” files are not accepted"),
    ("noextension", b"text", "Files without an extension are not accepted"),
    ("fake.pdf", b"<html>not a pdf</html>", "the content is not a PDF file"),
    ("fake.png", b"GIF89a....", "the content is not a PNG file"),
    ("fake.webp", b"RIFF\x10\x00\x00\x00AVI ", "the content is not a WEBP file"),
    ("binary.txt", b"\x7fELF\x02\x01\x01\x00\x00", "the content is not a TXT file"),
    ("fake.xlsx", b"%PDF-1.7", "the content is not a XLSX file"),
    ("empty.csv", b"", "the file is empty"),
]
LIMITS = UploadLimits(max_file_bytes=100, max_request_bytes=150, max_files=3)


@pytest.mark.parametrize(("name", "data"), GOOD)
def test_the_parsed_types_are_accepted(name: str, data: bytes) -> None:
    content_type_check(name=name, head=data)


@pytest.mark.parametrize(("name", "data", "message"), BAD)
def test_other_types_and_mismatched_content_are_refused(name: str, data: bytes, message: str) -> None:
    with pytest.raises(UploadRefused, match=message):
        content_type_check(name=name, head=data)


def _file(name: str, size: int) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, b"x" * size)


def test_a_file_over_the_per_file_limit_is_refused() -> None:
    with pytest.raises(UploadRefused, match=r"big.txt: the file is 0.0 MB, over the limit of 0.0 MB per file"):
        uploads_check([_file("ok.txt", 10), _file("big.txt", 101)], LIMITS)


def test_files_over_the_request_total_are_refused() -> None:
    with pytest.raises(UploadRefused, match="per upload; upload them in several parts"):
        uploads_check([_file("a.txt", 80), _file("b.txt", 80)], LIMITS)


def test_too_many_files_are_refused() -> None:
    with pytest.raises(UploadRefused, match=r"At most 3 files per upload \(4 chosen\)"):
        uploads_check([_file(f"{n}.txt", 1) for n in range(4)], LIMITS)


def test_no_file_is_refused() -> None:
    with pytest.raises(UploadRefused, match="Choose at least one file"):
        uploads_check([], LIMITS)


def test_files_within_the_limits_pass_and_can_be_read_again() -> None:
    files = [_file("a.txt", 100), _file("b.txt", 50)]
    uploads_check(files, LIMITS)
    assert [f.read() for f in files] == [b"x" * 100, b"x" * 50]


def test_the_limits_come_from_settings(settings: SettingsWrapper) -> None:
    settings.UPLOAD_MAX_BYTES, settings.UPLOAD_MAX_REQUEST_BYTES, settings.UPLOAD_MAX_FILES = 5, 6, 7
    assert UploadLimits.from_settings() == UploadLimits(5, 6, 7)


@pytest.mark.django_db
def test_a_refused_submit_stores_nothing(settings: SettingsWrapper, tmp_path: Path) -> None:
    settings.UPLOAD_DIR = tmp_path / "uploads"
    user = User.objects.create_user("ulla")
    with pytest.raises(UploadRefused, match=r"fake\.pdf"):
        uploads_submit(
            user=user,
            collection="fresh",
            files=[SimpleUploadedFile("a.txt", b"fine"), SimpleUploadedFile("fake.pdf", b"nope")],
        )
    assert not IngestJob.objects.exists()
    assert not Collection.objects.filter(name="fresh").exists()
    assert not (tmp_path / "uploads").exists() or not any((tmp_path / "uploads").iterdir())


@pytest.mark.django_db
def test_a_submit_creates_the_job_owned_and_logged_by_the_uploader(settings: SettingsWrapper, tmp_path: Path) -> None:
    settings.UPLOAD_DIR = tmp_path
    user = User.objects.create_user("ulla")
    job = uploads_submit(user=user, collection="fresh", files=[SimpleUploadedFile("a.txt", b"Ada Lovelace")])
    assert (job.collection, job.actor, job.state) == ("fresh", "user:ulla", "queued")
    assert Collection.objects.get(name="fresh").owner == user
    assert Path(job.files[0]["stored"]).read_bytes() == b"Ada Lovelace"


@pytest.mark.django_db
def test_a_new_collection_gets_the_text_space_chosen_and_an_existing_one_keeps_its_own(
    admin_client: Client, settings: SettingsWrapper, tmp_path: Path
) -> None:
    settings.UPLOAD_DIR = tmp_path
    form = {"collection": "", "new_collection": "wenzhang", "new_collection_space": "mtext"}
    uploaded = admin_client.post("/curation/documents/upload/", {**form, "files": [SimpleUploadedFile("a.txt", b"x")]})
    assert uploaded.status_code == 302
    assert collection_spaces(["wenzhang"]) == {"wenzhang": "mtext"}
    again = {"collection": "wenzhang", "new_collection_space": "text", "files": [SimpleUploadedFile("b.txt", b"y")]}
    assert admin_client.post("/curation/documents/upload/", again).status_code == 302
    assert collection_spaces(["wenzhang"]) == {"wenzhang": "mtext"}  # chosen once, at creation
    user = User.objects.create_user("ulla")
    uploads_submit(user=user, collection="later", files=[SimpleUploadedFile("c.txt", b"z")])
    assert settled_spaces(["later"]) == {}  # auto: its first documents decide
    page = admin_client.get("/curation/documents/").content.decode()
    assert 'name="new_collection_space"' in page and "multilingual" in page


@pytest.mark.django_db
def test_a_collection_the_uploader_cannot_read_is_refused() -> None:
    Collection.objects.create(name="secret", owner=User.objects.create_user("owner"))
    with pytest.raises(UploadRefused, match="The collection name “secret” is not available to you"):
        uploads_submit(
            user=User.objects.create_user("ulla"), collection="secret", files=[SimpleUploadedFile("a.txt", b"x")]
        )
    assert not IngestJob.objects.exists()


@pytest.mark.django_db
def test_the_upload_refuses_a_bad_type_with_a_400(admin_client: Client) -> None:
    response = admin_client.post(
        "/curation/documents/upload/",
        {"files": [SimpleUploadedFile("a.txt", b"fine"), SimpleUploadedFile("run.exe", b"MZ")], "collection": "kept"},
    )
    content = response.content.decode()
    assert response.status_code == 400
    assert "run.exe: “.exe” files are not accepted" in content
    assert 'value="kept"' in content  # the collection typed is not lost
    assert not IngestJob.objects.exists()


@pytest.mark.django_db
def test_the_upload_refuses_a_file_over_the_limit(admin_client: Client, settings: SettingsWrapper) -> None:
    settings.UPLOAD_MAX_BYTES = 10
    response = admin_client.post(
        "/curation/documents/upload/", {"files": [SimpleUploadedFile("a.txt", b"x" * 11)], "collection": "c"}
    )
    assert response.status_code == 400
    assert "a.txt: the file is" in response.content.decode()
    assert not IngestJob.objects.exists()


@pytest.mark.parametrize("extension", SUPPORTED_EXTENSIONS)
def test_every_parsed_format_is_checked_by_its_first_bytes(extension: str) -> None:
    """One table of formats: every extension parsing takes has a check, so junk is refused by name (never
    a missing table entry, which would be a 500)."""
    with pytest.raises(UploadRefused, match=f"the content is not a {extension[1:].upper()} file"):
        content_type_check(name=f"junk{extension}", head=b"\x00\x01\x02junk" * 8)
    assert FORMATS[extension].parser is not None or extension == ".zip"
    assert MIME_TYPES[extension] == FORMATS[extension].mime
