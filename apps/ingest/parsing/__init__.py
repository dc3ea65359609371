"""Uploaded bytes -> ParsedDocument, chosen by the file's extension.

Pure Python and in memory: nothing here touches Django, the graph or the disk.
Every problem with the input is raised as ``IngestError`` (codes in
``apps.ingest.types``); no other exception escapes for bad input.
"""

from __future__ import annotations

from collections.abc import Callable

from apps.ingest.parsing.archive import ZIP_MIME, parse_zip
from apps.ingest.parsing.html import HTML_MIME, parse_html
from apps.ingest.parsing.images import parse_image
from apps.ingest.parsing.pdf import PDF_MIME, parse_pdf
from apps.ingest.parsing.tables import CSV_MIME, TSV_MIME, XLSX_MIME, parse_delimited, parse_xlsx
from apps.ingest.parsing.text import parse_text, suffix_of
from apps.ingest.types import EMPTY_FILE, TOO_LARGE, UNSUPPORTED_TYPE, IngestError, Limits, ParsedDocument

__all__ = ["MIME_TYPES", "SUPPORTED_EXTENSIONS", "is_supported", "parse_upload"]

Parser = Callable[[str, bytes, Limits], ParsedDocument]

_PARSERS: dict[str, Parser] = {
    ".txt": parse_text,
    ".md": parse_text,
    ".html": parse_html,
    ".htm": parse_html,
    ".pdf": parse_pdf,
    ".png": parse_image,
    ".jpg": parse_image,
    ".jpeg": parse_image,
    ".webp": parse_image,
    ".gif": parse_image,
    ".csv": parse_delimited,
    ".tsv": parse_delimited,
    ".xlsx": parse_xlsx,
}
# The MIME type each extension is expected to have (an image's actual type wins).
MIME_TYPES: dict[str, str] = {
    ".txt": "text/plain",
    ".md": "text/markdown",
    ".html": HTML_MIME,
    ".htm": HTML_MIME,
    ".pdf": PDF_MIME,
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".webp": "image/webp",
    ".gif": "image/gif",
    ".csv": CSV_MIME,
    ".tsv": TSV_MIME,
    ".xlsx": XLSX_MIME,
    ".zip": ZIP_MIME,
}
SUPPORTED_EXTENSIONS: tuple[str, ...] = tuple(sorted(MIME_TYPES))


def is_supported(name: str) -> bool:
    """Whether ``parse_upload`` accepts a file of this name (by extension, case-insensitive)."""
    return suffix_of(name) in MIME_TYPES


def parse_upload(*, name: str, data: bytes, limits: Limits) -> list[ParsedDocument]:
    """Parse one uploaded file: one document, or one per supported member of a zip.

    Checks, in order: size (TOO_LARGE), extension (UNSUPPORTED_TYPE), emptiness
    (EMPTY_FILE), then the format's own checks.
    """
    _check_size(data, limits)
    suffix = suffix_of(name)
    if suffix != ".zip":
        return [_parse_file(name, data, limits)]
    _check_not_empty(data)
    documents = parse_zip(data=data, limits=limits, parse_file=_parse_file, supports=_is_parsed)
    if not documents:
        raise IngestError(UNSUPPORTED_TYPE, f"the zip archive contains no supported files; supported: {_supported()}")
    return documents


def _parse_file(path: str, data: bytes, limits: Limits) -> ParsedDocument:
    """One file that is not a zip (a zip member, or a whole upload)."""
    _check_size(data, limits)
    parser = _PARSERS.get(suffix_of(path))
    if parser is None:
        raise IngestError(UNSUPPORTED_TYPE, f"{_describe_type(path)} is not supported; supported: {_supported()}")
    _check_not_empty(data)
    return parser(path, data, limits)


def _is_parsed(path: str) -> bool:
    return suffix_of(path) in _PARSERS


def _check_size(data: bytes, limits: Limits) -> None:
    if len(data) > limits.max_file_bytes:
        raise IngestError(
            TOO_LARGE, f"the file is {len(data):,} bytes, over the limit of {limits.max_file_bytes:,} bytes"
        )


def _check_not_empty(data: bytes) -> None:
    if not data:
        raise IngestError(EMPTY_FILE, "the file is empty (0 bytes)")


def _describe_type(path: str) -> str:
    suffix = suffix_of(path)
    return f"the file type {suffix}" if suffix else "a file without an extension"


def _supported() -> str:
    return ", ".join(SUPPORTED_EXTENSIONS)
