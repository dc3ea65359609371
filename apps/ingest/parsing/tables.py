"""CSV, TSV and XLSX files: one ParsedTable per CSV/TSV file or per non-empty sheet.

The first row is the header. Table documents carry no text; rendering rows
as text is the chunker's job.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from openpyxl import load_workbook

from apps.ingest.parsing.text import collapse_whitespace, decode_text, file_stem, sha256_hex, suffix_of
from apps.ingest.types import (
    CORRUPT_FILE,
    EMPTY_FILE,
    RAGGED_TABLE,
    TOO_LARGE,
    IngestError,
    Limits,
    ParsedDocument,
    ParsedTable,
)

CSV_MIME = "text/csv"
TSV_MIME = "text/tab-separated-values"
XLSX_MIME = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
_FLOAT_AS_INT_LIMIT = 2**53


def unique_columns(header: Sequence[str]) -> tuple[str, ...]:
    """Header names made non-empty ("column 3") and unique ("name (2)")."""
    names: list[str] = []
    seen: set[str] = set()
    for number, raw in enumerate(header, start=1):
        base = collapse_whitespace(raw) or f"column {number}"
        name, copy = base, 2
        while name in seen:
            name, copy = f"{base} ({copy})", copy + 1
        seen.add(name)
        names.append(name)
    return tuple(names)


def build_table(name: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> ParsedTable:
    """A table whose rows are padded to the widest of the header and the rows."""
    width = max([len(header), *(len(row) for row in rows)])
    padding = [""] * width
    return ParsedTable(
        name=name,
        columns=unique_columns([*header, *padding[len(header) :]]),
        rows=tuple((*row, *padding[len(row) :]) for row in rows),
    )


def check_row_count(count: int, limits: Limits, table: str) -> None:
    if count > limits.max_table_rows:
        raise IngestError(TOO_LARGE, f"{table} has more than {limits.max_table_rows:,} rows")


def _is_blank(row: Sequence[str]) -> bool:
    return all(not cell.strip() for cell in row)


# -- CSV / TSV ---------------------------------------------------------------


def parse_delimited(path: str, data: bytes, limits: Limits) -> ParsedDocument:
    """A .csv or .tsv file (decoded like text), as one table named "table 1"."""
    tsv = suffix_of(path) == ".tsv"
    text = decode_text(data)
    if not text.strip():
        raise IngestError(EMPTY_FILE, "the file contains only whitespace")
    header, rows = _read_delimited(text, "\t" if tsv else ",", limits)
    return ParsedDocument(
        path=path,
        mime=TSV_MIME if tsv else CSV_MIME,
        sha256=sha256_hex(data),
        size=len(data),
        tables=(build_table("table 1", header, rows),),
        title=file_stem(path),
    )


def _read_delimited(text: str, delimiter: str, limits: Limits) -> tuple[list[str], list[list[str]]]:
    """Header and rows, read in the first dialect that fits the file.

    A TSV is first read without quoting, as the IANA format defines it (a field
    may then start with a quote); a CSV first with standard quoting, strictly,
    so any valid RFC 4180 file is read exactly, then, if it contains \\", with
    backslash escapes (as some exporters write quotes inside quoted fields).
    Last comes standard quoting, leniently: its errors (a ragged row) are the
    ones reported.
    """
    if delimiter == "\t":
        attempts = [_Dialect(quoted=False)]
    else:
        attempts = [_Dialect(strict=True)]
        if '\\"' in text:
            attempts.append(_Dialect(escapechar="\\"))
    for dialect in attempts:
        try:
            return _rectangular(_csv_rows(text, delimiter, dialect), limits)
        except IngestError as error:
            if error.code == TOO_LARGE:
                raise
    return _rectangular(_csv_rows(text, delimiter, _Dialect()), limits)


@dataclass(frozen=True)
class _Dialect:
    escapechar: str | None = None
    quoted: bool = True
    strict: bool = False


def _csv_rows(text: str, delimiter: str, dialect: _Dialect) -> Iterator[list[str]]:
    reader = csv.reader(
        io.StringIO(text, newline=""),
        delimiter=delimiter,
        escapechar=dialect.escapechar,
        quoting=csv.QUOTE_MINIMAL if dialect.quoted else csv.QUOTE_NONE,
        strict=dialect.strict,
    )
    try:
        yield from reader
    except csv.Error as exc:
        raise IngestError(CORRUPT_FILE, f"line {reader.line_num} cannot be read: {exc}") from exc


def _rectangular(records: Iterable[list[str]], limits: Limits) -> tuple[list[str], list[list[str]]]:
    """The header and the data rows; every row must have as many cells as the header.

    Blank lines before the header and after the last row are ignored.
    """
    header: list[str] | None = None
    header_number = 0
    rows: list[list[str]] = []
    blank_tail: list[tuple[int, list[str]]] = []
    for number, record in enumerate(records, start=1):
        if header is None:
            if not _is_blank(record):
                header, header_number = record, number
            continue
        if _is_blank(record):
            blank_tail.append((number, record))
            continue
        for row_number, row in [*blank_tail, (number, record)]:
            _check_width(row_number - header_number + 1, row, header)
            rows.append(row)
        blank_tail.clear()
        check_row_count(len(rows), limits, "the table")
    if header is None:
        raise IngestError(EMPTY_FILE, "the table has no header row")
    return header, rows


def _check_width(number: int, row: Sequence[str], header: Sequence[str]) -> None:
    if len(row) != len(header):
        raise IngestError(RAGGED_TABLE, f"row {number} has {len(row)} cells, the header has {len(header)}")


# -- XLSX ----------------------------------------------------------------------


def parse_xlsx(path: str, data: bytes, limits: Limits) -> ParsedDocument:
    """An .xlsx workbook: one table per non-empty worksheet, named after it (chart sheets are ignored)."""
    _check_unpacked_size(data, limits)
    tables = _read_workbook(data, limits)
    if not tables:
        raise IngestError(EMPTY_FILE, "the workbook has no sheet with data")
    return ParsedDocument(
        path=path,
        mime=XLSX_MIME,
        sha256=sha256_hex(data),
        size=len(data),
        tables=tuple(tables),
        title=file_stem(path),
    )


def _check_unpacked_size(data: bytes, limits: Limits) -> None:
    """An .xlsx is a zip: refuse one that would unpack to more than the archive limit."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            declared = sum(info.file_size for info in archive.infolist())
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise IngestError(CORRUPT_FILE, f"not a valid .xlsx workbook (not a zip archive: {exc})") from exc
    if declared > limits.max_zip_total_bytes:
        raise IngestError(
            TOO_LARGE,
            f"the workbook unpacks to {declared:,} bytes, over the limit of {limits.max_zip_total_bytes:,} bytes",
        )


def _read_workbook(data: bytes, limits: Limits) -> list[ParsedTable]:
    try:
        workbook = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises many kinds of error on bad input
        raise IngestError(CORRUPT_FILE, f"not a valid .xlsx workbook: {exc}") from exc
    try:
        tables: list[ParsedTable] = []
        for sheet in workbook.worksheets:
            table = _read_sheet(sheet, limits)
            if table is not None:
                tables.append(table)
        return tables
    except IngestError:
        raise
    except Exception as exc:
        raise IngestError(CORRUPT_FILE, f"the workbook cannot be read: {exc}") from exc
    finally:
        workbook.close()


def _read_sheet(sheet: Any, limits: Limits) -> ParsedTable | None:
    """The sheet as a table, or None when it holds no values.

    Trailing empty cells are dropped from every row, and empty rows are dropped.
    """
    name = str(sheet.title)
    sheet.reset_dimensions()  # ignore the declared size: a forged one would pad every row
    rows: list[list[str]] = []
    for values in sheet.iter_rows(values_only=True):
        row = _trim([cell_text(value) for value in values])
        if row:
            rows.append(row)
            check_row_count(len(rows) - 1, limits, f"sheet {name!r}")
    if not rows:
        return None
    return build_table(name, rows[0], rows[1:])


def _trim(row: list[str]) -> list[str]:
    end = len(row)
    while end and not row[end - 1].strip():
        end -= 1
    return row[:end]


def cell_text(value: object) -> str:
    """A spreadsheet value as text: whole floats without ".0", dates and times in ISO 8601."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < _FLOAT_AS_INT_LIMIT:
            return str(int(value))
        return repr(value)
    if isinstance(value, dt.datetime):
        if value.time() == dt.time(0) and value.tzinfo is None:
            return value.date().isoformat()
        return value.isoformat()
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, Decimal):
        return format(value, "f")
    return str(value)
