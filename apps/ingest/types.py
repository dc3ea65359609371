"""Typed values passed between the ingestion steps.

parse (bytes -> ParsedDocument) -> chunk (text -> TextChunk) -> extract
(texts -> Extraction) -> write (graph). Offsets are character offsets into
``ParsedDocument.text`` unless a field says otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class IngestError(Exception):
    """Input that cannot be ingested; ``code`` is stable, ``message`` is for people."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


# IngestError codes.
UNSUPPORTED_TYPE = "unsupported_type"
EMPTY_FILE = "empty_file"
TOO_LARGE = "too_large"
CORRUPT_FILE = "corrupt_file"
IMAGE_TOO_MANY_PIXELS = "image_too_many_pixels"
UNDECODABLE_TEXT = "undecodable_text"
RAGGED_TABLE = "ragged_table"
UNSAFE_ARCHIVE_PATH = "unsafe_archive_path"
TOO_MANY_MEMBERS = "too_many_members"


@dataclass(frozen=True)
class Limits:
    """Bounds on what one upload may contain (from settings)."""

    max_file_bytes: int = 50 * 1024 * 1024
    max_image_pixels: int = 40_000_000
    max_zip_members: int = 2_000
    max_zip_total_bytes: int = 500 * 1024 * 1024
    max_table_rows: int = 200_000


@dataclass(frozen=True)
class PageSpan:
    """Page ``number`` (1-based) covers ``text[start:end]``."""

    number: int
    start: int
    end: int


@dataclass(frozen=True)
class ParsedTable:
    name: str  # sheet name, or "table N" for HTML / CSV
    columns: tuple[str, ...]  # unique, non-empty header names
    rows: tuple[tuple[str, ...], ...]  # one value per column, as text


@dataclass(frozen=True)
class ParsedImage:
    name: str  # file name, or "page-3-image-1.png" for images inside a PDF
    data: bytes  # the original bytes (re-encoded only if the source format cannot be stored)
    format: str  # PNG, JPEG, WEBP, GIF, ...
    width: int
    height: int
    page: int | None = None


@dataclass(frozen=True)
class ParsedDocument:
    path: str  # the name given, or the path inside a zip ("folder/file.csv")
    mime: str
    sha256: str  # of the original bytes
    size: int  # bytes
    text: str = ""
    pages: tuple[PageSpan, ...] = ()
    tables: tuple[ParsedTable, ...] = ()
    images: tuple[ParsedImage, ...] = ()
    title: str = ""
    page_renders: tuple[bytes, ...] = ()  # a PDF's pages as JPEG (the document viewer's page pictures)


@dataclass(frozen=True)
class TextChunk:
    ord: int
    text: str
    start: int  # offset of text[0] in the document text
    end: int
    sentences: tuple[tuple[int, int], ...]  # sentence (start, end) offsets inside ``text``
    page: int | None = None


@dataclass(frozen=True)
class Mention:
    start: int  # offsets inside the analysed text
    end: int
    text: str  # surface form
    label: str  # entity type (PERSON, ORG, GPE, ...)
    key: str  # normalised identity: same key = same entity across documents


@dataclass(frozen=True)
class Relation:
    source: int  # index into Extraction.mentions
    target: int
    predicate: str | None  # from a dependency pattern, else None (plain co-occurrence)
    sentence: int  # index of the sentence in which they co-occur


@dataclass(frozen=True)
class Extraction:
    mentions: tuple[Mention, ...] = ()
    relations: tuple[Relation, ...] = ()
    sentences: tuple[tuple[int, int], ...] = field(default=())
