"""Zip archives: one document per supported member, parsed in memory.

Before anything is extracted from an archive, every entry name is checked
(absolute paths, drive letters and ``..`` escaping the root are refused), the
number of files is checked against ``limits.max_zip_members`` and the declared
uncompressed sizes against ``limits.max_zip_total_bytes``. The bytes actually
inflated are counted against the same limit while reading, so a forged header
cannot smuggle a zip bomb past it. Both limits cover nested archives too.

Directories, symbolic links, macOS metadata (``__MACOSX/``, ``.DS_Store``, ``._*``) and members
of unsupported types are skipped. Zips inside the zip are opened as well (one
level deep: a zip in a zip in a zip is skipped). An error in a member is
raised with the member's path in front of the message.
"""

from __future__ import annotations

import io
import re
import stat
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field

from apps.ingest.parsing.text import file_name, suffix_of
from apps.ingest.types import (
    CORRUPT_FILE,
    EMPTY_FILE,
    TOO_LARGE,
    TOO_MANY_MEMBERS,
    UNSAFE_ARCHIVE_PATH,
    IngestError,
    Limits,
    ParsedDocument,
)

ZIP_MIME = "application/zip"
MAX_DEPTH = 2  # the uploaded zip is depth 1, a zip inside it depth 2
_CHUNK = 1 << 16
_DRIVE = re.compile(r"^[A-Za-z]:")
_ENCRYPTED_FLAG = 0x1

FileParser = Callable[[str, bytes, Limits], ParsedDocument]
Supports = Callable[[str], bool]


@dataclass
class _Budget:
    """Members and inflated bytes used so far, across nested archives."""

    limits: Limits
    members: int = 0
    inflated: int = 0

    def add_members(self, count: int) -> None:
        self.members += count
        if self.members > self.limits.max_zip_members:
            raise IngestError(
                TOO_MANY_MEMBERS,
                f"the archive has {self.members:,} files, over the limit of {self.limits.max_zip_members:,}",
            )

    def check_declared(self, declared: int) -> None:
        if self.inflated + declared > self.limits.max_zip_total_bytes:
            raise IngestError(TOO_LARGE, self._over_message(self.inflated + declared))

    def add_inflated(self, count: int) -> None:
        self.inflated += count
        if self.inflated > self.limits.max_zip_total_bytes:
            raise IngestError(TOO_LARGE, self._over_message(self.inflated))

    def _over_message(self, size: int) -> str:
        return (
            f"the archive unpacks to at least {size:,} bytes, "
            f"over the limit of {self.limits.max_zip_total_bytes:,} bytes"
        )


@dataclass(frozen=True)
class _Member:
    info: zipfile.ZipInfo
    path: str  # normalised, relative to the uploaded archive


def parse_zip(*, data: bytes, limits: Limits, parse_file: FileParser, supports: Supports) -> list[ParsedDocument]:
    """The documents of every supported member; [] when none is supported.

    ``parse_file(path, data, limits)`` parses one member; ``supports(path)``
    says whether it would. Raises EMPTY_FILE for an archive without files.
    """
    reader = _ArchiveReader(limits=limits, parse_file=parse_file, supports=supports)
    return reader.read(data, prefix="", depth=1)


@dataclass
class _ArchiveReader:
    limits: Limits
    parse_file: FileParser
    supports: Supports
    budget: _Budget = field(init=False)

    def __post_init__(self) -> None:
        self.budget = _Budget(self.limits)

    def read(self, data: bytes, *, prefix: str, depth: int) -> list[ParsedDocument]:
        with _open_zip(data, prefix) as archive:
            members = self._members(archive, prefix)
            if not members and depth == 1:
                raise IngestError(EMPTY_FILE, "the zip archive contains no files")
            documents: list[ParsedDocument] = []
            for member in members:
                documents.extend(self._parse_member(archive, member, depth))
            return documents

    def _members(self, archive: zipfile.ZipFile, prefix: str) -> list[_Member]:
        """The files worth parsing, after checking every entry's name and the declared sizes."""
        infos = archive.infolist()
        files = [info for info in infos if not _is_directory(info)]
        self.budget.add_members(len(files))
        paths = [safe_member_path(info.filename, prefix) for info in infos]
        self.budget.check_declared(sum(info.file_size for info in files))
        return [
            _Member(info, prefix + path)
            for info, path in zip(infos, paths, strict=True)
            if path and not _is_directory(info) and not _is_symlink(info) and not is_junk(path)
        ]

    def _parse_member(self, archive: zipfile.ZipFile, member: _Member, depth: int) -> list[ParsedDocument]:
        if suffix_of(member.path) == ".zip":
            if depth >= MAX_DEPTH:
                return []
            return self.read(self._extract(archive, member), prefix=member.path + "/", depth=depth + 1)
        if not self.supports(member.path):
            return []
        data = self._extract(archive, member)
        try:
            return [self.parse_file(member.path, data, self.limits)]
        except IngestError as error:
            raise IngestError(error.code, f"{member.path}: {error.message}") from error

    def _extract(self, archive: zipfile.ZipFile, member: _Member) -> bytes:
        """The member's bytes, counted against the limits while they are inflated."""
        info, limit = member.info, self.limits.max_file_bytes
        if info.flag_bits & _ENCRYPTED_FLAG:
            raise IngestError(
                CORRUPT_FILE, f"{member.path}: the file is encrypted (password-protected zips are not supported)"
            )
        if info.file_size > limit:
            raise IngestError(
                TOO_LARGE, f"{member.path}: the file is {info.file_size:,} bytes, over the limit of {limit:,} bytes"
            )
        chunks: list[bytes] = []
        size = 0
        try:
            with archive.open(info) as stream:
                while chunk := stream.read(_CHUNK):
                    size += len(chunk)
                    self.budget.add_inflated(len(chunk))
                    if size > limit:
                        raise IngestError(TOO_LARGE, f"{member.path}: the file is over the limit of {limit:,} bytes")
                    chunks.append(chunk)
        except IngestError:
            raise
        except Exception as exc:  # zipfile raises BadZipFile, zlib.error, NotImplementedError, EOFError, ...
            raise IngestError(CORRUPT_FILE, f"{member.path}: the file cannot be extracted: {exc}") from exc
        return b"".join(chunks)


def _open_zip(data: bytes, prefix: str) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(io.BytesIO(data))
    except Exception as exc:  # BadZipFile, but also ValueError/OSError/EOFError on some damage
        where = f"{prefix.rstrip('/')}: " if prefix else ""
        raise IngestError(CORRUPT_FILE, f"{where}not a valid zip archive: {exc}") from exc


def _is_directory(info: zipfile.ZipInfo) -> bool:
    return info.is_dir() or info.filename.endswith("\\")


def _is_symlink(info: zipfile.ZipInfo) -> bool:
    """A Unix symbolic link stored in the archive (its bytes are the link's target, not a file)."""
    return stat.S_ISLNK(info.external_attr >> 16)


def safe_member_path(name: str, prefix: str = "") -> str:
    """``name`` with "/" separators and no "." or ".." parts; UNSAFE_ARCHIVE_PATH if it leaves the root."""
    parts: list[str] = []
    unsafe = name.startswith(("/", "\\")) or bool(_DRIVE.match(name))
    for part in name.replace("\\", "/").split("/"):
        if part == "..":
            unsafe = unsafe or not parts
            if parts:
                parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    if unsafe:
        raise IngestError(
            UNSAFE_ARCHIVE_PATH,
            f"the archive member {prefix + name!r} points outside the archive (an absolute path, a drive or '..')",
        )
    return "/".join(parts)


def is_junk(path: str) -> bool:
    """macOS metadata that archivers add next to the real files."""
    name = file_name(path)
    return "__MACOSX" in path.split("/") or name == ".DS_Store" or name.startswith("._")
