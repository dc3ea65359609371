"""The file formats ragkg takes, in one table: per extension its MIME type, its parser and how its
first bytes are recognised. Parsing (``apps.ingest.parsing``) and the upload checks
(``apps.ingest.uploads``) both read it, so a format cannot be parsed without being checked, or
checked without being parsed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from apps.ingest.parsing.archive import ZIP_MIME
from apps.ingest.parsing.html import HTML_MIME, parse_html
from apps.ingest.parsing.images import parse_image
from apps.ingest.parsing.pdf import PDF_MIME, parse_pdf
from apps.ingest.parsing.tables import CSV_MIME, TSV_MIME, XLSX_MIME, parse_delimited, parse_xlsx
from apps.ingest.parsing.text import parse_text
from apps.ingest.types import Limits, ParsedDocument

Parser = Callable[[str, bytes, Limits], ParsedDocument]
Sniff = Callable[[bytes], bool]  # whether a file's first bytes fit the format

UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
ZIP_SIGNATURES = (b"PK\x03\x04", b"PK\x05\x06")


def _starts(*signatures: bytes) -> Sniff:
    return lambda head: head.startswith(signatures)


def _text(head: bytes) -> bool:
    """Text: no NUL byte, unless a UTF-16 byte-order mark explains it."""
    return b"\x00" not in head or head.startswith(UTF16_BOMS)


def _webp(head: bytes) -> bool:
    return head[:4] == b"RIFF" and head[8:12] == b"WEBP"


@dataclass(frozen=True)
class FileFormat:
    extension: str  # with its dot, lower case
    mime: str  # what a file of this extension is expected to be (an image's actual type wins)
    parser: Parser | None  # None: an archive, opened member by member by ``parse_upload``
    sniff: Sniff


_JPEG = _starts(b"\xff\xd8\xff")
FORMATS: dict[str, FileFormat] = {
    f.extension: f
    for f in (
        FileFormat(".txt", "text/plain", parse_text, _text),
        FileFormat(".md", "text/markdown", parse_text, _text),
        FileFormat(".html", HTML_MIME, parse_html, _text),
        FileFormat(".htm", HTML_MIME, parse_html, _text),
        FileFormat(".pdf", PDF_MIME, parse_pdf, _starts(b"%PDF-")),
        FileFormat(".png", "image/png", parse_image, _starts(b"\x89PNG\r\n\x1a\n")),
        FileFormat(".jpg", "image/jpeg", parse_image, _JPEG),
        FileFormat(".jpeg", "image/jpeg", parse_image, _JPEG),
        FileFormat(".webp", "image/webp", parse_image, _webp),
        FileFormat(".gif", "image/gif", parse_image, _starts(b"GIF87a", b"GIF89a")),
        FileFormat(".csv", CSV_MIME, parse_delimited, _text),
        FileFormat(".tsv", TSV_MIME, parse_delimited, _text),
        FileFormat(".xlsx", XLSX_MIME, parse_xlsx, _starts(*ZIP_SIGNATURES)),
        FileFormat(".zip", ZIP_MIME, None, _starts(*ZIP_SIGNATURES)),
    )
}


def accepted_media_types() -> list[str]:
    """The MIME types of the formats ragkg takes, each once, sorted."""
    return sorted({f.mime for f in FORMATS.values()})
