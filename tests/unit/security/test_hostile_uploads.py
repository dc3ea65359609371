"""Hostile uploads: file names that try to leave the upload folder, and zip archives that try to
write outside it (zip slip), link elsewhere (symlinks) or exhaust memory (zip bombs).

Uploads are stored as ``UPLOAD_DIR/<job id>/<00000 number>`` whatever their name, and archives are
read in memory, never extracted to disk; these tests hold the app to that."""

from __future__ import annotations

import io
import stat
import zipfile
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client
from pytest_django.fixtures import Settings

from apps.accounts.roles import CURATOR
from apps.accounts.services import role_set
from apps.ingest.models import IngestJob
from apps.ingest.parsing import parse_upload
from apps.ingest.types import CORRUPT_FILE, TOO_LARGE, TOO_MANY_MEMBERS, UNSAFE_ARCHIVE_PATH, IngestError, Limits

BOUNDARY = "hostileboundary"
HOSTILE_NAMES = [
    "../../etc/passwd.txt",
    "/etc/passwd.txt",
    "..\\..\\windows\\win.txt",
    "C:\\evil.txt",
    "a\x00b.txt",
    "%2e%2e%2fencoded.txt",
    "&#46;&#46;/entity.txt",
    "x" * 5000 + ".txt",
    "<script>alert(1)</script>.txt",
]


def multipart(files: list[tuple[str, bytes]], collection: str = "hostile") -> bytes:
    """A multipart body written by hand, so the file names are exactly what an attacker sends."""
    parts = [f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="collection"\r\n\r\n{collection}\r\n'.encode()]
    for name, data in files:
        head = f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="files"; filename="{name}"\r\n'
        parts.append(head.encode("utf-8", "surrogateescape") + b"Content-Type: text/plain\r\n\r\n" + data + b"\r\n")
    return b"".join(parts) + f"--{BOUNDARY}--\r\n".encode()


def tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.fixture
def staff(db: None) -> Client:
    """A curator: uploads go through Curation → Documents."""
    client = Client()
    user = User.objects.create_user("uploader")
    role_set(username=user.username, role=CURATOR)
    client.force_login(user)
    return client


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_a_hostile_file_name_stays_inside_the_upload_folder(
    staff: Client, settings: Settings, tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    uploads = tmp_path / "srv" / "uploads"
    settings.UPLOAD_DIR = uploads
    monkeypatch.chdir(tmp_path / "srv" if (tmp_path / "srv").exists() else tmp_path)
    body = multipart([(name, b"harmless text")])
    response = staff.post("/curation/documents/upload/", body, content_type=f"multipart/form-data; boundary={BOUNDARY}")
    outside = {p for p in tree(tmp_path) if not p.startswith("srv/uploads") and p not in ("srv",)}
    assert outside == set()
    if response.status_code == 302:
        [job] = IngestJob.objects.all()
        [stored] = job.files
        path = Path(stored["stored"]).resolve()
        assert path.is_relative_to(uploads.resolve()) and path.name == "00000"
        assert path.read_bytes() == b"harmless text"
        assert "/" not in stored["name"] and "\\" not in stored["name"] and "\x00" not in stored["name"]
        assert len(stored["name"]) <= 255
    else:
        assert response.status_code == 400
        assert not uploads.exists() or tree(uploads) == set()


def zip_of(*members: tuple[str | zipfile.ZipInfo, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members:
            archive.writestr(name, data)
    return buffer.getvalue()


def parse(data: bytes, limits: Limits | None = None) -> list[str]:
    return [d.path for d in parse_upload(name="upload.zip", data=data, limits=limits or Limits())]


@pytest.fixture
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory two levels down: a zip slip would land in tmp_path."""
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    return tmp_path


@pytest.mark.parametrize("member", ["../x.txt", "../../x.txt", "/x.txt", "/etc/cron.d/x.txt", "C:/x.txt", "..\\x.txt"])
def test_a_zip_slip_member_is_refused_and_nothing_is_written(sandbox: Path, member: str) -> None:
    before = tree(sandbox)
    with pytest.raises(IngestError) as raised:
        parse(zip_of(("ok.txt", b"fine"), (member, b"pwned")))
    assert raised.value.code == UNSAFE_ARCHIVE_PATH and "points outside the archive" in raised.value.message
    assert tree(sandbox) == before


def test_dot_dot_that_stays_inside_is_normalised(sandbox: Path) -> None:
    assert parse(zip_of(("docs/../notes.txt", b"fine"))) == ["notes.txt"]
    assert tree(sandbox) == {"a", "a/b"}


def test_a_symlink_member_is_skipped_not_followed(sandbox: Path) -> None:
    link = zipfile.ZipInfo("passwd.txt")
    link.create_system = 3
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    names = parse(zip_of((link, b"/etc/passwd"), ("real.txt", b"real text")))
    assert names == ["real.txt"]
    assert tree(sandbox) == {"a", "a/b"}


def test_a_zip_bomb_is_refused_by_its_declared_size() -> None:
    bomb = zip_of(*((f"zeros{n}.txt", b"0" * 2_000_000) for n in range(3)))
    with pytest.raises(IngestError) as raised:
        parse(bomb, Limits(max_zip_total_bytes=5_000_000))
    assert raised.value.code == TOO_LARGE and "unpacks to at least" in raised.value.message


def forge_declared_sizes(data: bytes, size: int) -> bytes:
    """The archive with every member's declared uncompressed size set to ``size`` (a lying header)."""
    out = bytearray(data)
    for signature, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        start = 0
        while (at := out.find(signature, start)) >= 0:
            out[at + offset : at + offset + 4] = size.to_bytes(4, "little")
            start = at + 4
    return bytes(out)


def test_a_zip_bomb_with_lying_headers_is_stopped_while_inflating() -> None:
    bomb = forge_declared_sizes(zip_of(("zeros.txt", b"0" * 3_000_000)), 10)
    with pytest.raises(IngestError) as raised:
        parse(bomb, Limits(max_zip_total_bytes=1_000_000, max_file_bytes=10_000_000))
    assert raised.value.code in (TOO_LARGE, CORRUPT_FILE)


def test_too_many_members_are_refused() -> None:
    with pytest.raises(IngestError) as raised:
        parse(zip_of(*((f"f{n}.txt", b"x") for n in range(30))), Limits(max_zip_members=20))
    assert raised.value.code == TOO_MANY_MEMBERS


def test_nested_zips_count_against_the_same_budget_and_stop_at_depth_two() -> None:
    inner = zip_of(("inner.txt", b"inner text"))
    middle = zip_of(("middle.txt", b"middle text"), ("deeper.zip", inner))
    names = parse(zip_of(("outer.txt", b"outer"), ("middle.zip", middle)))
    assert names == ["outer.txt", "middle.zip/middle.txt"]
    nested_bomb = zip_of(("bomb.zip", zip_of(*((f"z{n}.txt", b"0" * 400_000) for n in range(5)))))
    with pytest.raises(IngestError) as raised:
        parse(nested_bomb, Limits(max_zip_total_bytes=1_000_000))
    assert raised.value.code == TOO_LARGE


def test_a_member_name_with_a_nul_is_cut_there_and_a_very_long_one_is_kept_as_text(sandbox: Path) -> None:
    long_name = "d/" * 500 + "x" * 300 + ".txt"
    # zipfile ends a name at its first NUL: "a\x00b.txt" is read as "a", which has no supported type.
    assert parse(zip_of(("a\x00b.txt", b"nul"), (long_name, b"long"))) == [long_name]
    assert tree(sandbox) == {"a", "a/b"}
