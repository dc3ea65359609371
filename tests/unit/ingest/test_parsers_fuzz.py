"""Property tests: parse_upload either returns documents or raises IngestError, and offsets are sound.

Inputs are arbitrary bytes, mutations of valid files of every format, and
generated text, tables, HTML and PDFs. Bounded so the module runs in seconds.
"""

from __future__ import annotations

import csv
import functools
import io

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.ingest.parsing import SUPPORTED_EXTENSIONS, parse_upload
from apps.ingest.types import IngestError, Limits, ParsedDocument
from tests.unit.ingest.test_parsers import image_bytes, image_pdf, parse_one, text_pdf, xlsx_bytes, zip_bytes

# Small limits keep every example cheap, and exercise the limit checks too.
LIMITS = Limits(
    max_file_bytes=200_000,
    max_image_pixels=250_000,
    max_zip_members=50,
    max_zip_total_bytes=1_000_000,
    max_table_rows=500,
)
FUZZ = settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
SMALL_FUZZ = settings(FUZZ, max_examples=60)


def parse_or_reject(name: str, data: bytes) -> list[ParsedDocument]:
    """parse_upload's documents, or [] when it raised IngestError; any other exception fails the test."""
    try:
        documents = parse_upload(name=name, data=data, limits=LIMITS)
    except IngestError as error:
        assert error.code and error.message
        return []
    assert documents
    for document in documents:
        check_document(document)
    return documents


def check_document(document: ParsedDocument) -> None:
    """Invariants every document keeps, whatever its type."""
    assert len(document.sha256) == 64 and document.size >= 0
    assert "\r" not in document.text
    previous_end = 0
    for number, span in enumerate(document.pages, start=1):
        assert span.number == number
        assert previous_end <= span.start <= span.end <= len(document.text)
        previous_end = span.end
    if document.pages:
        assert document.pages[0].start == 0 and document.pages[-1].end == len(document.text)
    for table in document.tables:
        assert all(table.columns) and len(set(table.columns)) == len(table.columns)
        assert all(len(row) == len(table.columns) for row in table.rows)
    for image in document.images:
        assert image.width * image.height <= LIMITS.max_image_pixels
        assert image.format in {"PNG", "JPEG", "WEBP", "GIF"}


@functools.cache
def seeds() -> dict[str, bytes]:
    """One small valid file per format, for mutation."""
    return {
        ".pdf": text_pdf(["first page", "second (page)"]),
        ".png": image_bytes("PNG", (8, 6)),
        ".jpg": image_bytes("JPEG", (8, 6)),
        ".webp": image_bytes("WEBP", (8, 6)),
        ".gif": image_bytes("GIF", (8, 6)),
        ".xlsx": xlsx_bytes({"S": [["a", "b"], [1, 2.5]]}),
        ".zip": zip_bytes({"a.txt": b"hello", "t.csv": b"x,y\n1,2\n", "i.png": image_bytes("PNG", (4, 4))}),
        ".html": b"<html><head><title>T</title></head><body><p>x</p><table><tr><th>a</th></tr></table></body></html>",
        ".csv": b'a,b\n"1,5",2\n',
        ".tsv": b"a\tb\n1\t2\n",
        ".txt": "plain café\n".encode(),
        ".md": b"# Title\n\nbody\n",
    }


SUFFIXES = st.sampled_from(sorted(SUPPORTED_EXTENSIONS))


@FUZZ
@given(suffix=SUFFIXES, data=st.binary(max_size=2048))
def test_arbitrary_bytes(suffix: str, data: bytes) -> None:
    parse_or_reject(f"upload{suffix}", data)


@FUZZ
@given(suffix=st.sampled_from(sorted(seeds())), edits=st.data())
def test_mutated_valid_files(suffix: str, edits: st.DataObject) -> None:
    data = bytearray(seeds()[suffix])
    for _ in range(edits.draw(st.integers(min_value=1, max_value=4))):
        position = edits.draw(st.integers(min_value=0, max_value=len(data) - 1))
        action = edits.draw(st.sampled_from(["flip", "cut", "insert"]))
        if action == "flip":
            data[position] ^= edits.draw(st.integers(min_value=1, max_value=255))
        elif action == "cut":
            del data[position : position + edits.draw(st.integers(min_value=1, max_value=64))]
        else:
            data[position:position] = edits.draw(st.binary(min_size=1, max_size=16))
        if not data:
            break
    parse_or_reject(f"mutant{suffix}", bytes(data))


@SMALL_FUZZ
@given(pdf=st.sampled_from([image_pdf()]), cut=st.integers(min_value=1, max_value=2000))
def test_truncated_image_pdfs(pdf: bytes, cut: int) -> None:
    parse_or_reject("cut.pdf", pdf[: max(1, len(pdf) - cut)])


TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=300)


@FUZZ
@given(suffix=st.sampled_from([".txt", ".md", ".html", ".csv", ".tsv"]), text=TEXT)
def test_arbitrary_text(suffix: str, text: str) -> None:
    parse_or_reject(f"t{suffix}", text.encode())


@FUZZ
@given(text=TEXT.filter(lambda text: text.strip() and not text.startswith("\ufeff")))
def test_utf8_text_round_trips(text: str) -> None:
    documents = parse_or_reject("t.txt", text.encode())
    if documents:  # rejected only when it looks binary (control characters)
        assert documents[0].text == text.replace("\r\n", "\n").replace("\r", "\n")
        assert len(documents[0].title) <= 200


PAGE_TEXT = st.text(st.sampled_from("abcXYZ019 .,;()\\-"), max_size=40).map(str.strip)


@SMALL_FUZZ
@given(pages=st.lists(PAGE_TEXT, min_size=1, max_size=5))
def test_pdf_page_spans(pages: list[str]) -> None:
    documents = parse_or_reject("gen.pdf", text_pdf(pages))
    if not any(pages):
        assert documents == []
        return
    (document,) = documents
    assert len(document.pages) == len(pages)
    for span, page in zip(document.pages, pages, strict=True):
        assert document.text[span.start : span.end].split() == page.split()
    for before, after in zip(document.pages, document.pages[1:], strict=False):
        assert document.text[before.end : after.start] == "\n\n"


CELL = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs", "Cc"), exclude_characters="\ufeff", include_characters="\n"),
    max_size=12,
)


@FUZZ
@given(width=st.integers(min_value=1, max_value=5), data=st.data())
def test_csv_round_trips(width: int, data: st.DataObject) -> None:
    header = data.draw(st.lists(CELL.filter(str.strip), min_size=width, max_size=width))
    rows = data.draw(st.lists(st.lists(CELL, min_size=width, max_size=width), max_size=8))
    buffer = io.StringIO()
    csv.writer(buffer).writerows([header, *rows])
    (table,) = parse_one("gen.csv", buffer.getvalue().encode(), LIMITS).tables
    while rows and not any(cell.strip() for cell in rows[-1]):
        rows.pop()  # blank trailing rows are ignored
    assert table.rows == tuple(tuple(row) for row in rows)
    assert len(table.columns) == width


TSV_CELL = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zl", "Zp"), exclude_characters="\ufeff"),
    max_size=12,
)


@FUZZ
@given(width=st.integers(min_value=1, max_value=5), data=st.data())
def test_tsv_round_trips(width: int, data: st.DataObject) -> None:
    header = data.draw(st.lists(TSV_CELL.filter(str.strip), min_size=width, max_size=width))
    row = st.lists(TSV_CELL, min_size=width, max_size=width).filter(any)  # an empty line is not a row
    rows = data.draw(st.lists(row, max_size=8))
    text = "\n".join("\t".join(row) for row in [header, *rows]) + "\n"
    (table,) = parse_one("gen.tsv", text.encode(), LIMITS).tables
    while rows and not any(cell.strip() for cell in rows[-1]):
        rows.pop()
    assert table.rows == tuple(tuple(row) for row in rows)


TAGS = ["p", "div", "span", "b", "td", "th", "tr", "table", "li", "ul", "br", "script", "h1", "title", "a"]


def html_tree(depth: int = 3) -> st.SearchStrategy[str]:
    leaf = st.text(st.sampled_from("ab c<&\n\t"), max_size=8).map(lambda text: text.replace("<", "&lt;"))
    if depth == 0:
        return leaf
    child = html_tree(depth - 1)
    element = st.builds(
        lambda tag, attrs, children: f"<{tag}{attrs}>{''.join(children)}</{tag}>",
        st.sampled_from(TAGS),
        st.sampled_from(["", ' colspan="3"', ' rowspan="2"', " hidden", ' colspan="x"']),
        st.lists(child, max_size=4),
    )
    return st.one_of(leaf, element)


@FUZZ
@given(body=st.lists(html_tree(), max_size=5))
def test_generated_html(body: list[str]) -> None:
    for document in parse_or_reject("gen.html", "".join(body).encode()):
        assert all(line and line == line.strip() for line in document.text.split("\n"))
