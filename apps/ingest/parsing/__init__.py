"""Uploaded bytes -> ParsedDocument, chosen by the file's extension.

Pure Python and in memory: nothing here touches Django, the graph or the disk.
Every problem with the input is raised as ``IngestError`` (codes in
``apps.ingest.types``); no other exception escapes for bad input.
"""

from __future__ import annotations

from apps.ingest.parsing.archive import parse_zip
from apps.ingest.parsing.formats import FORMATS, Parser
from apps.ingest.parsing.text import suffix_of
from apps.ingest.types import EMPTY_FILE, TOO_LARGE, UNSUPPORTED_TYPE, IngestError, Limits, ParsedDocument

__all__ = ["MIME_TYPES", "SUPPORTED_EXTENSIONS", "is_supported", "parse_upload"]

# Derived from the one table of formats (apps/ingest/parsing/formats.py).
_PARSERS: dict[str, Parser] = {ext: f.parser for ext, f in FORMATS.items() if f.parser is not None}
MIME_TYPES: dict[str, str] = {ext: f.mime for ext, f in FORMATS.items()}
SUPPORTED_EXTENSIONS: tuple[str, ...] = tuple(sorted(FORMATS))


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
