"""parse_upload on real, generated files of every supported type, and every error code.

Fixtures are built in memory (Pillow, openpyxl, pypdf, zipfile and a tiny
hand-written PDF with text); the shared evaluation data (../shared/data)
provides real tables and photos.
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import io
import json
import struct
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from openpyxl import Workbook
from PIL import Image
from pypdf import PdfReader, PdfWriter

from apps.ingest.parsing import MIME_TYPES, SUPPORTED_EXTENSIONS, is_supported, parse_upload
from apps.ingest.types import (
    CORRUPT_FILE,
    EMPTY_FILE,
    IMAGE_TOO_MANY_PIXELS,
    RAGGED_TABLE,
    TOO_LARGE,
    TOO_MANY_MEMBERS,
    UNDECODABLE_TEXT,
    UNSAFE_ARCHIVE_PATH,
    UNSUPPORTED_TYPE,
    IngestError,
    Limits,
    ParsedDocument,
)

LIMITS = Limits()
DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data"
IMAGES = DATA / "images"
WTQ = DATA / "tables" / "wtq" / "csv"


# -- helpers (also used by test_parsers_fuzz) ----------------------------------------------------


def parse_one(name: str, data: bytes, limits: Limits = LIMITS) -> ParsedDocument:
    documents = parse_upload(name=name, data=data, limits=limits)
    assert len(documents) == 1
    return documents[0]


def parse_error(name: str, data: bytes, limits: Limits = LIMITS) -> IngestError:
    with pytest.raises(IngestError) as caught:
        parse_upload(name=name, data=data, limits=limits)
    return caught.value


def _pdf_string(line: str) -> str:
    return "(" + line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ")"


def text_pdf(pages: list[str]) -> bytes:
    """A minimal PDF with one Helvetica text page per item (lines split on "\\n")."""
    objects: list[bytes] = [b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    pages_ref = 1 + 2 * len(pages) + 1
    for text in pages:
        lines = " ".join(f"{_pdf_string(line)} Tj T*" for line in text.split("\n"))
        stream = f"BT /F1 12 Tf 14 TL 72 720 Td {lines} ET".encode("latin-1")
        objects.append(b"<< /Length %d >>\nstream\n%b\nendstream" % (len(stream), stream))
        objects.append(
            b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
            b"/Resources << /Font << /F1 1 0 R >> >> >>" % (pages_ref, len(objects))
        )
    kids = b" ".join(b"%d 0 R" % (3 + 2 * index) for index in range(len(pages)))
    objects.append(b"<< /Type /Pages /Kids [%b] /Count %d >>" % (kids, len(pages)))
    objects.append(b"<< /Type /Catalog /Pages %d 0 R >>" % pages_ref)
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%b\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, len(objects), xref)
    return bytes(out)


def image_bytes(
    image_format: str, size: tuple[int, int] = (32, 24), color: tuple[int, int, int] = (200, 30, 30)
) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, format=image_format)
    return buffer.getvalue()


def image_pdf() -> bytes:
    """A PDF whose only content is one image (Pillow's PDF writer)."""
    return image_bytes("PDF", (40, 30))


def pdf_from(write: Callable[[PdfWriter], None]) -> bytes:
    writer = PdfWriter()
    write(writer)
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def zip_bytes(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def xlsx_bytes(sheets: dict[str, list[list[object]]]) -> bytes:
    workbook = Workbook()
    workbook.remove(workbook.active)
    for title, rows in sheets.items():
        sheet = workbook.create_sheet(title)
        for row in rows:
            sheet.append(row)
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def png_header_only(width: int, height: int) -> bytes:
    """A well-formed PNG that claims ``width`` x ``height`` but carries almost no pixel data."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")
    )


# -- dispatch and common fields ------------------------------------------------------------------


def test_common_fields() -> None:
    data = b"Hello world\n"
    document = parse_one("notes/Hello.TXT", data)
    assert document.path == "notes/Hello.TXT"
    assert document.mime == "text/plain"
    assert document.sha256 == hashlib.sha256(data).hexdigest()
    assert document.size == len(data)
    assert (document.pages, document.tables, document.images) == ((), (), ())


def test_unsupported_type_lists_the_supported_ones() -> None:
    error = parse_error("report.xyz", b"data")
    assert error.code == UNSUPPORTED_TYPE
    assert ".xyz is not supported; supported: " in error.message
    assert ".pdf" in error.message and ".zip" in error.message
    assert parse_error("README", b"data").code == UNSUPPORTED_TYPE


def test_supported_extensions() -> None:
    assert set(SUPPORTED_EXTENSIONS) == set(MIME_TYPES)
    assert is_supported("A.JPEG") and is_supported("x/y.md") and not is_supported("x.docx")


def test_size_is_checked_first() -> None:
    small = Limits(max_file_bytes=10)
    for name in ("big.txt", "big.xyz", "big.zip"):
        error = parse_error(name, b"x" * 11, small)
        assert error.code == TOO_LARGE
        assert "11 bytes" in error.message and "10 bytes" in error.message
    assert parse_one("ok.txt", b"x" * 10, small).text == "x" * 10


@pytest.mark.parametrize("suffix", sorted(set(SUPPORTED_EXTENSIONS)))
def test_empty_files(suffix: str) -> None:
    assert parse_error(f"empty{suffix}", b"").code == EMPTY_FILE


@pytest.mark.parametrize("suffix", [".txt", ".md", ".csv", ".tsv", ".html"])
def test_whitespace_only_text_is_empty(suffix: str) -> None:
    assert parse_error(f"blank{suffix}", b" \r\n\t \n").code == EMPTY_FILE


# -- text and markdown ---------------------------------------------------------------------------


def test_text_newlines_and_title() -> None:
    document = parse_one("a.txt", b"\r\n  First line  \r\nsecond\rthird\n")
    assert document.text == "\n  First line  \nsecond\nthird\n"
    assert document.title == "First line"


def test_markdown_title_is_the_first_heading() -> None:
    markdown = "---\ntitle: x\n# not a heading\n---\nIntro line\n\n## The *real*   title ##\n\n# Later\n"
    document = parse_one("doc.md", markdown.encode())
    assert document.mime == "text/markdown"
    assert document.title == "The *real* title"
    assert parse_one("s.md", b"Setext title\n===\nbody\n").title == "Setext title"
    assert parse_one("plain.md", b"\n\nno headings here\n").title == "no headings here"


def test_title_is_capped() -> None:
    assert len(parse_one("long.txt", b"word " * 100).title) <= 200


def test_utf8_bom_and_utf16() -> None:
    assert parse_one("bom.txt", "\ufeffcafé".encode()).text == "café"
    assert parse_one("u16.txt", "naïve ☃ text".encode("utf-16")).text == "naïve ☃ text"


def test_latin1_text() -> None:
    text = (
        "Le café était très agréable. Nous avons mangé des crêpes à la française, "
        "où la crème fraîche était délicieuse.\nÀ bientôt, Noël!\n"
    )
    document = parse_one("latin1.txt", text.encode("latin-1"))
    assert document.text == text
    assert parse_one("short.txt", "café".encode("cp1252")).text == "café"
    assert parse_one("quote.txt", "“Grüße” • München".encode("cp1252")).text == "“Grüße” • München"


def test_cyrillic_legacy_encoding() -> None:
    text = "Привет, как дела? Это тестовый текст на русском языке, он довольно длинный."
    assert parse_one("ru.txt", text.encode("cp1251")).text == text


def test_binary_is_not_text() -> None:
    error = parse_error("binary.txt", bytes(range(256)) * 4)
    assert error.code == UNDECODABLE_TEXT
    assert parse_error("png.md", image_bytes("PNG")).code == UNDECODABLE_TEXT


# -- HTML ----------------------------------------------------------------------------------------

PAGE = b"""<!DOCTYPE html>
<html><head><title>  Quarterly
  report </title><style>p { color: red }</style><script>var hidden = "script text";</script></head>
<body>
<noscript>enable javascript</noscript><template><p>template text</p></template>
<!-- a comment -->
<h1>Results</h1>
<p>Revenue   grew <b>strongly</b>,<br>as expected.</p>
<div hidden>secret</div>
<ul><li>one</li><li>two</li></ul>
<pre>  x = 1
  y = 2</pre>
<table>
  <thead><tr><th>Name</th><th></th><th>Name</th></tr></thead>
  <tbody>
    <tr><td>Alice</td><td>30</td><td>London</td></tr>
    <tr><td>Bob</td><td>25</td><td>Paris<script>x()</script></td></tr>
  </tbody>
</table>
<table><tr><td colspan="2">wide</td><td rowspan="2">tall</td></tr><tr><td>a</td><td>b</td></tr>
<tr><td>c</td><td><table><tr><td>inner</td></tr><tr><td>cell</td></tr></table></td><td>e</td></tr></table>
<script>document.write("no")</script>
</body></html>"""


def test_html_visible_text() -> None:
    document = parse_one("page.html", PAGE)
    assert document.mime == "text/html"
    assert document.title == "Quarterly report"
    lines = document.text.split("\n")
    assert lines[:6] == ["Results", "Revenue grew strongly,", "as expected.", "one", "two", "  x = 1"]
    assert "  y = 2" in lines
    assert "Alice | 30 | London" in lines
    for invisible in ("script text", "color: red", "enable javascript", "template text", "a comment", "secret", "x()"):
        assert invisible not in document.text
    assert "Quarterly" not in document.text


def test_html_tables() -> None:
    tables = parse_one("page.htm", PAGE).tables
    assert [table.name for table in tables] == ["table 1", "table 2", "table 3"]
    first = tables[0]
    assert first.columns == ("Name", "column 2", "Name (2)")
    assert first.rows == (("Alice", "30", "London"), ("Bob", "25", "Paris"))
    spans = tables[1]
    assert spans.columns == ("wide", "wide (2)", "tall")
    assert spans.rows == (("a", "b", "tall"), ("c", "inner cell", "e"))
    assert tables[2].columns == ("inner",)
    assert tables[2].rows == (("cell",),)


def test_html_declared_charset_and_fallback_title() -> None:
    page = '<meta charset="iso-8859-1"><h1>Café</h1><p>crème</p>'.encode("latin-1")
    document = parse_one("fr.html", page)
    assert document.title == "Café"
    assert document.text == "Café\ncrème"
    assert parse_one("no-title.html", b"<p>just text</p>").title == "no-title"


def test_html_without_visible_text_is_empty() -> None:
    page = b"<html><head><title>t</title></head><body><script>x</script><!-- c --></body></html>"
    assert parse_error("blank.html", page).code == EMPTY_FILE


def test_deeply_nested_html() -> None:
    document = parse_one("deep.html", b"<div>" * 3000 + b"deep" + b"</div>" * 3000)
    assert document.text == "deep"


def test_html_table_row_limit() -> None:
    rows = "".join(f"<tr><td>{index}</td></tr>" for index in range(6))
    error = parse_error("t.html", f"<table>{rows}</table>".encode(), Limits(max_table_rows=4))
    assert error.code == TOO_LARGE


# -- PDF -----------------------------------------------------------------------------------------


def test_pdf_text_and_page_spans() -> None:
    document = parse_one("paper.pdf", text_pdf(["Hello (world)\nsecond line", "", "Page three \\ text"]))
    assert document.mime == "application/pdf"
    assert document.text == "Hello (world)\nsecond line\n\n\n\nPage three \\ text"
    assert [(span.number, span.start, span.end) for span in document.pages] == [(1, 0, 25), (2, 27, 27), (3, 29, 46)]
    assert document.text[29:46] == "Page three \\ text"
    assert document.title == "paper"
    assert document.images == ()


def test_pdf_metadata_title() -> None:
    def write(writer: PdfWriter) -> None:
        writer.append(PdfReader(io.BytesIO(text_pdf(["body"]))))
        writer.add_metadata({"/Title": "  A   Study "})

    assert parse_one("x.pdf", pdf_from(write)).title == "A Study"


def test_pdf_images() -> None:
    document = parse_one("scan.pdf", image_pdf())
    assert document.text == ""
    assert document.pages == ()
    (image,) = document.images
    assert (image.name, image.format, image.width, image.height) == ("page-1-image-1.jpg", "JPEG", 40, 30)
    assert image.page == 1
    Image.open(io.BytesIO(image.data)).verify()


def test_pdf_with_text_and_image() -> None:
    def write(writer: PdfWriter) -> None:
        page = writer.add_page(PdfReader(io.BytesIO(text_pdf(["caption"]))).pages[0])
        page.merge_page(PdfReader(io.BytesIO(image_pdf())).pages[0])

    document = parse_one("both.pdf", pdf_from(write))
    assert document.text == "caption"
    assert [image.page for image in document.images] == [1]


def test_pdf_images_over_the_pixel_limit_are_skipped() -> None:
    document = parse_one("big.pdf", pdf_from(_text_and_image_page), Limits(max_image_pixels=100))
    assert document.text == "caption"
    assert document.images == ()


def _text_and_image_page(writer: PdfWriter) -> None:
    page = writer.add_page(PdfReader(io.BytesIO(text_pdf(["caption"]))).pages[0])
    page.merge_page(PdfReader(io.BytesIO(image_pdf())).pages[0])


def test_pdf_without_text_or_images_needs_ocr() -> None:
    def write(writer: PdfWriter) -> None:
        writer.add_blank_page(200, 200)

    error = parse_error("blank.pdf", pdf_from(write))
    assert error.code == EMPTY_FILE
    assert "no text or images" in error.message and "OCR" in error.message


def test_corrupt_pdfs() -> None:
    for data in (b"%PDF-1.4\nthis is not a pdf", text_pdf(["cut short"])[:80], b"\x00" * 100):
        error = parse_error("bad.pdf", data)
        assert error.code == CORRUPT_FILE
        assert "PDF" in error.message


def test_encrypted_pdfs() -> None:
    def encrypt(user: str) -> Callable[[PdfWriter], None]:
        def write(writer: PdfWriter) -> None:
            writer.append(PdfReader(io.BytesIO(text_pdf(["classified"]))))
            writer.encrypt(user, owner_password="owner", algorithm="AES-128")

        return write

    error = parse_error("locked.pdf", pdf_from(encrypt("secret")))
    assert error.code == CORRUPT_FILE
    assert "encrypted" in error.message and "password" in error.message
    assert parse_one("restricted.pdf", pdf_from(encrypt(""))).text == "classified"


# -- images --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("suffix", "image_format", "mime"),
    [
        (".png", "PNG", "image/png"),
        (".jpg", "JPEG", "image/jpeg"),
        (".jpeg", "JPEG", "image/jpeg"),
        (".webp", "WEBP", "image/webp"),
    ],
)
def test_images_keep_their_bytes(suffix: str, image_format: str, mime: str) -> None:
    data = image_bytes(image_format)
    document = parse_one(f"photos/Pic{suffix.upper()}", data)
    assert (document.mime, document.text, document.title) == (mime, "", "Pic")
    (image,) = document.images
    assert (image.name, image.data, image.format, image.width, image.height, image.page) == (
        f"Pic{suffix.upper()}",
        data,
        image_format,
        32,
        24,
        None,
    )


def test_gif_becomes_its_first_frame_as_png() -> None:
    frames = [Image.new("RGB", (20, 10), color) for color in ((255, 0, 0), (0, 0, 255))]
    buffer = io.BytesIO()
    frames[0].save(buffer, format="GIF", save_all=True, append_images=frames[1:], duration=100)
    document = parse_one("anim.gif", buffer.getvalue())
    assert document.mime == "image/gif"
    (image,) = document.images
    assert (image.format, image.width, image.height) == ("PNG", 20, 10)
    with Image.open(io.BytesIO(image.data)) as first:
        assert first.format == "PNG"
        assert first.convert("RGB").getpixel((0, 0)) == (255, 0, 0)


def test_image_extension_may_lie() -> None:
    document = parse_one("really-a-png.jpg", image_bytes("PNG"))
    assert document.mime == "image/png"
    assert document.images[0].format == "PNG"


def test_decompression_bomb_header_is_refused_before_decoding() -> None:
    error = parse_error("bomb.png", png_header_only(50_000, 50_000))
    assert error.code == IMAGE_TOO_MANY_PIXELS
    assert "2,500,000,000" in error.message and "40,000,000" in error.message


def test_large_real_image_over_a_low_limit() -> None:
    blank = image_bytes("PNG", (3000, 2000), (255, 255, 255))
    error = parse_error("blank.png", blank, Limits(max_image_pixels=5_000_000))
    assert error.code == IMAGE_TOO_MANY_PIXELS
    assert "6,000,000" in error.message


def test_truncated_and_corrupt_images() -> None:
    jpeg = image_bytes("JPEG", (200, 200))
    error = parse_error("cut.jpg", jpeg[: len(jpeg) // 2])
    assert error.code == CORRUPT_FILE
    assert "JPEG" in error.message
    png = image_bytes("PNG", (64, 64))
    assert parse_error("cut.png", png[:-30]).code == CORRUPT_FILE
    assert parse_error("noise.png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 50).code == CORRUPT_FILE
    assert parse_error("text.webp", b"not an image at all").code == CORRUPT_FILE


def _shared_images() -> list[Path]:
    return sorted(path for path in IMAGES.glob("*") if path.suffix.lower() in {".png", ".jpg", ".jpeg"})


@pytest.mark.skipif(not IMAGES.is_dir(), reason="shared evaluation data not present")
def test_every_shared_image_parses() -> None:
    expected = {entry["file"]: entry for entry in json.loads((IMAGES / "captions.json").read_text())["images"]}
    paths = _shared_images()
    assert len(paths) >= 20
    for path in paths:
        data = path.read_bytes()
        (image,) = parse_one(path.name, data).images
        assert image.data == data
        assert (image.width, image.height) == (expected[path.name]["width"], expected[path.name]["height"])


# -- CSV / TSV -----------------------------------------------------------------------------------


def test_csv_table() -> None:
    data = b'name,age,name,\r\n"Smith, J",42,x,\r\n"multi\nline",7,"say ""hi""",z\r\n\r\n\r\n'
    document = parse_one("people.csv", data)
    assert (document.mime, document.text, document.title) == ("text/csv", "", "people")
    (table,) = document.tables
    assert table.name == "table 1"
    assert table.columns == ("name", "age", "name (2)", "column 4")
    assert table.rows == (("Smith, J", "42", "x", ""), ("multi\nline", "7", 'say "hi"', "z"))


def test_tsv_table() -> None:
    document = parse_one("t.tsv", b'a\tb\n"quoted" title\t2\n')
    assert document.mime == "text/tab-separated-values"
    assert document.tables[0].columns == ("a", "b")
    assert document.tables[0].rows == (('"quoted" title', "2"),)


def test_latin1_csv() -> None:
    data = "ville,pays\nMünchen,Deutschland\nSão Paulo,Brésil\n".encode("latin-1")
    assert parse_one("villes.csv", data).tables[0].rows == (("München", "Deutschland"), ("São Paulo", "Brésil"))


def test_ragged_csv() -> None:
    error = parse_error("ragged.csv", b"a,b,c\n1,2,3\n4,5\n")
    assert error.code == RAGGED_TABLE
    assert error.message == "row 3 has 2 cells, the header has 3"
    assert parse_error("wide.tsv", b"a\tb\n1\t2\t3\n").message == "row 2 has 3 cells, the header has 2"
    assert parse_error("gap.csv", b"a,b\n1,2\n\n3,4\n").message == "row 3 has 0 cells, the header has 2"


def test_csv_row_limit() -> None:
    data = b"n\n" + b"".join(b"%d\n" % index for index in range(11))
    assert parse_error("many.csv", data, Limits(max_table_rows=10)).code == TOO_LARGE
    assert len(parse_one("ok.csv", data, Limits(max_table_rows=11)).tables[0].rows) == 11


def test_csv_field_too_large_is_corrupt() -> None:
    error = parse_error("huge.csv", b'a\n"' + b"x" * 200_000 + b'"\n')
    assert error.code == CORRUPT_FILE


def test_csv_with_backslash_escaped_quotes() -> None:
    data = b'"title","notes"\n"A","He said \\"no\\". Then, he left."\n'
    assert parse_one("esc.csv", data).tables[0].rows == (("A", 'He said "no". Then, he left.'),)


def _wtq_pairs() -> list[Path]:
    return sorted(WTQ.glob("*/*.csv"))


@pytest.mark.skipif(not WTQ.is_dir(), reason="shared evaluation data not present")
def test_wtq_tables() -> None:
    table = parse_one("11.csv", (WTQ / "200-csv" / "11.csv").read_bytes()).tables[0]
    assert table.columns == ("Award", "Category", "Nominee", "Result")
    assert table.rows[0] == ("Academy Awards, 1972", "Best Picture", "Phillip D'Antoni", "Won")
    pairs = _wtq_pairs()
    assert len(pairs) >= 50
    for csv_path in pairs:
        from_csv = parse_one(csv_path.name, csv_path.read_bytes()).tables[0]
        tsv_path = csv_path.with_suffix(".tsv")
        from_tsv = parse_one(tsv_path.name, tsv_path.read_bytes()).tables[0]
        lines = tsv_path.read_text(encoding="utf-8").splitlines()
        expected_rows = sum(1 for _ in csv.reader(lines, delimiter="\t", quoting=csv.QUOTE_NONE)) - 1
        assert len(from_csv.rows) == len(from_tsv.rows) == expected_rows, csv_path
        assert len(from_csv.columns) == len(from_tsv.columns), csv_path
        # WikiTableQuestions writes newlines as \n in its TSV files (and | as \p, \ as \\).
        unescaped = tuple(tuple(_wtq_unescape(cell) for cell in row) for row in from_tsv.rows)
        assert from_csv.rows == unescaped, csv_path


def _wtq_unescape(cell: str) -> str:
    return cell.replace("\\n", "\n").replace("\\p", "|").replace("\\\\", "\\").replace("\xa0", " ")


# -- XLSX ----------------------------------------------------------------------------------------


def test_xlsx_sheets() -> None:
    data = xlsx_bytes(
        {
            "People": [
                ["name", "born", "score", "ratio", "active", None, None],
                ["Ada", dt.date(1815, 12, 10), 3.0, 0.25, True, None],
                ["Alan", dt.datetime(1912, 6, 23, 14, 30), 7, 1e20, False],
                [None, None, None],
                [],
            ],
            "Empty": [],
            "Blank cells": [[None, None], [None]],
            "Second": [["x", "", "x"], [1, 2, 3, 4]],
        }
    )
    document = parse_one("book.xlsx", data)
    assert document.mime == "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    assert (document.text, document.title) == ("", "book")
    people, second = document.tables
    assert people.name == "People"
    assert people.columns == ("name", "born", "score", "ratio", "active")
    assert people.rows == (
        ("Ada", "1815-12-10", "3", "0.25", "TRUE"),
        ("Alan", "1912-06-23T14:30:00", "7", "1e+20", "FALSE"),
    )
    assert second.name == "Second"
    assert second.columns == ("x", "column 2", "x (2)", "column 4")
    assert second.rows == (("1", "2", "3", "4"),)


def test_xlsx_errors() -> None:
    assert parse_error("empty.xlsx", xlsx_bytes({"Only": []})).code == EMPTY_FILE
    for data in (b"not a zip", zip_bytes({"hello.txt": b"not a workbook"}), xlsx_bytes({"S": [["a"]]})[:200]):
        error = parse_error("bad.xlsx", data)
        assert error.code == CORRUPT_FILE
        assert ".xlsx" in error.message
    numbers: list[list[object]] = [[index] for index in range(6)]
    rows: list[list[object]] = [["n"], *numbers]
    assert parse_error("long.xlsx", xlsx_bytes({"S": rows}), Limits(max_table_rows=5)).code == TOO_LARGE
    assert parse_error("zipped.xlsx", xlsx_bytes({"S": rows}), Limits(max_zip_total_bytes=100)).code == TOO_LARGE


# -- ZIP -----------------------------------------------------------------------------------------


def test_zip_members() -> None:
    data = zip_bytes(
        {
            "docs/": b"",
            "docs/readme.md": b"# Read me\n",
            "docs/sub/../data.csv": b"a,b\n1,2\n",
            "./pic.PNG": image_bytes("PNG"),
            "__MACOSX/docs/._readme.md": b"junk",
            "docs/.DS_Store": b"junk",
            "docs/notes.docx": b"unsupported, skipped",
        }
    )
    documents = parse_upload(name="upload.zip", data=data, limits=LIMITS)
    assert [(document.path, document.mime) for document in documents] == [
        ("docs/readme.md", "text/markdown"),
        ("docs/data.csv", "text/csv"),
        ("pic.PNG", "image/png"),
    ]
    assert documents[0].sha256 == hashlib.sha256(b"# Read me\n").hexdigest()
    assert documents[0].size == 10
    assert documents[0].title == "Read me"


UNSAFE_NAMES = ["../evil.txt", "docs/../../evil.txt", "/etc/passwd.txt", "C:\\evil.txt", "a\\..\\..\\b.txt"]


@pytest.mark.parametrize("name", UNSAFE_NAMES)
def test_zip_slip_is_refused_before_extracting(name: str) -> None:
    error = parse_error("slip.zip", zip_bytes({"fine.txt": b"ok", name: b"evil"}))
    assert error.code == UNSAFE_ARCHIVE_PATH
    assert repr(name) in error.message


def test_zip_member_limits() -> None:
    members = {f"f{index}.txt": b"text" for index in range(6)}
    error = parse_error("many.zip", zip_bytes(members), Limits(max_zip_members=5))
    assert error.code == TOO_MANY_MEMBERS
    assert "6" in error.message and "5" in error.message
    assert len(parse_upload(name="ok.zip", data=zip_bytes(members), limits=Limits(max_zip_members=6))) == 6


def test_zip_total_size_limit() -> None:
    bomb = zip_bytes({"a.txt": b"a" * 600, "b.txt": b"b" * 600})
    assert len(bomb) < 1000
    error = parse_error("bomb.zip", bomb, Limits(max_zip_total_bytes=1000))
    assert error.code == TOO_LARGE
    assert "1,000" in error.message
    member_limit = parse_error("bomb.zip", bomb, Limits(max_file_bytes=len(bomb), max_zip_total_bytes=10_000))
    assert member_limit.code == TOO_LARGE
    assert member_limit.message.startswith("a.txt: ")


def test_zip_with_forged_sizes_is_not_inflated_past_them() -> None:
    data = bytearray(zip_bytes({"a.txt": b"a" * 5000}))
    for signature, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):  # uncompressed size fields
        position = data.index(signature) + offset
        data[position : position + 4] = struct.pack("<I", 10)
    error = parse_error("forged.zip", bytes(data), Limits(max_zip_total_bytes=100))
    assert error.code == CORRUPT_FILE
    assert error.message.startswith("a.txt: ")


def test_nested_zips() -> None:
    level3 = zip_bytes({"deep.txt": b"too deep"})
    level2 = zip_bytes({"inner.txt": b"inner text", "level3.zip": level3})
    outer = zip_bytes({"top.txt": b"top", "sub/level2.zip": level2})
    documents = parse_upload(name="outer.zip", data=outer, limits=LIMITS)
    assert [(document.path, document.text) for document in documents] == [
        ("top.txt", "top"),
        ("sub/level2.zip/inner.txt", "inner text"),
    ]
    nested = zip_bytes({"n.zip": zip_bytes({f"{index}.txt": b"x" for index in range(4)})})
    assert parse_error("nested.zip", nested, Limits(max_zip_members=4)).code == TOO_MANY_MEMBERS
    slip = zip_bytes({"n.zip": zip_bytes({"../../x.txt": b"x"})})
    assert "n.zip/../../x.txt" in parse_error("nested-slip.zip", slip).message


def test_zip_member_errors_name_the_member() -> None:
    error = parse_error("bad.zip", zip_bytes({"ok.txt": b"fine", "reports/broken.pdf": b"%PDF-1.4 broken"}))
    assert error.code == CORRUPT_FILE
    assert error.message.startswith("reports/broken.pdf: ")
    nested = zip_bytes({"in.zip": zip_bytes({"t.csv": b"a,b\n1\n"})})
    error = parse_error("nested.zip", nested)
    assert (error.code, error.message) == (RAGGED_TABLE, "in.zip/t.csv: row 2 has 1 cells, the header has 2")
    error = parse_error("nested.zip", zip_bytes({"in.zip": b"not a zip"}))
    assert error.code == CORRUPT_FILE
    assert error.message.startswith("in.zip: ")
    assert parse_error("empty-member.zip", zip_bytes({"e.txt": b""})).message.startswith("e.txt: ")


def test_zip_encrypted_member() -> None:
    data = bytearray(zip_bytes({"secret.txt": b"hidden"}))
    for signature, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):  # general purpose flags
        data[data.index(signature) + offset] |= 0x1
    error = parse_error("locked.zip", bytes(data))
    assert error.code == CORRUPT_FILE
    assert error.message.startswith("secret.txt: ") and "encrypted" in error.message


def test_zip_without_supported_members() -> None:
    error = parse_error("odd.zip", zip_bytes({"a.docx": b"x", "b.exe": b"y"}))
    assert error.code == UNSUPPORTED_TYPE
    assert "supported: " in error.message
    assert parse_error("empty.zip", zip_bytes({})).code == EMPTY_FILE
    assert parse_error("junk.zip", zip_bytes({"__MACOSX/._a.txt": b"x", "dir/": b""})).code == EMPTY_FILE
    assert parse_error("broken.zip", b"PK\x03\x04 not really").code == CORRUPT_FILE
