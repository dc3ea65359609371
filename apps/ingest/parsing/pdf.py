"""PDF files (pypdf): the text of every page and the embedded images.

``text`` is the pages' text joined with a blank line ("\\n\\n"); ``pages`` gives
each page's span of it (empty pages get an empty span). When no page has any
text, ``text`` is "" and ``pages`` is empty. Embedded images are kept when
Pillow can open them; images in formats that cannot be stored as they are
(JPEG 2000, TIFF, raw bitmaps) are re-encoded as PNG, and images whose
declared size exceeds the pixel limit are skipped without being decoded.
"""

from __future__ import annotations

import io
import re
from typing import Any

from PIL import Image
from pypdf import PageObject, PasswordType, PdfReader

from apps.ingest.parsing.images import inspect_image, sniff_format
from apps.ingest.parsing.pdf_pages import render_pages
from apps.ingest.parsing.text import clean_title, file_stem, normalise_newlines, sha256_hex
from apps.ingest.types import (
    CORRUPT_FILE,
    EMPTY_FILE,
    IngestError,
    Limits,
    PageSpan,
    ParsedDocument,
    ParsedImage,
)

PDF_MIME = "application/pdf"
PAGE_SEPARATOR = "\n\n"
# Control characters that broken font encodings leave in extracted text (tab and newline stay).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_PNG_MODES = frozenset({"1", "L", "LA", "P", "RGB", "RGBA", "I", "I;16"})
_EXTENSIONS = {"PNG": "png", "JPEG": "jpg", "WEBP": "webp", "GIF": "gif"}


def parse_pdf(path: str, data: bytes, limits: Limits) -> ParsedDocument:
    reader = _open(data)
    pages = _pages(reader)
    texts = [_page_text(page, number) for number, page in enumerate(pages, start=1)]
    images = [image for number, page in enumerate(pages, start=1) for image in _page_images(page, number, limits)]
    text, spans = join_pages(texts)
    if not text and not images:
        raise IngestError(EMPTY_FILE, "the PDF has no text or images (a scanned PDF needs OCR)")
    return ParsedDocument(
        path=path,
        mime=PDF_MIME,
        sha256=sha256_hex(data),
        size=len(data),
        text=text,
        pages=spans,
        images=tuple(images),
        title=_metadata_title(reader) or file_stem(path),
        page_renders=render_pages(data),
    )


def join_pages(texts: list[str]) -> tuple[str, tuple[PageSpan, ...]]:
    """The page texts joined by PAGE_SEPARATOR, with each page's span; ("", ()) when all are empty."""
    if not any(texts):
        return "", ()
    spans: list[PageSpan] = []
    start = 0
    for number, text in enumerate(texts, start=1):
        spans.append(PageSpan(number=number, start=start, end=start + len(text)))
        start += len(text) + len(PAGE_SEPARATOR)
    return PAGE_SEPARATOR.join(texts), tuple(spans)


def _open(data: bytes) -> PdfReader:
    try:
        reader = PdfReader(io.BytesIO(data))
        encrypted = reader.is_encrypted
    except Exception as exc:  # pypdf raises many kinds of error on malformed files
        raise IngestError(CORRUPT_FILE, f"the PDF cannot be read: {exc}") from exc
    if encrypted:
        try:
            result = reader.decrypt("")
        except Exception as exc:
            raise IngestError(CORRUPT_FILE, f"the PDF is encrypted in a way that cannot be opened: {exc}") from exc
        if result == PasswordType.NOT_DECRYPTED:
            raise IngestError(CORRUPT_FILE, "the PDF is encrypted and needs a password; upload an unprotected copy")
    return reader


def _pages(reader: PdfReader) -> list[PageObject]:
    try:
        pages = list(reader.pages)
    except Exception as exc:
        raise IngestError(CORRUPT_FILE, f"the PDF's pages cannot be read: {exc}") from exc
    if not pages:
        raise IngestError(EMPTY_FILE, "the PDF has no pages")
    return pages


def _page_text(page: PageObject, number: int) -> str:
    try:
        raw = page.extract_text()
    except Exception as exc:
        raise IngestError(CORRUPT_FILE, f"the text of page {number} cannot be extracted: {exc}") from exc
    return _CONTROL.sub("", normalise_newlines(raw)).strip()


def _metadata_title(reader: PdfReader) -> str:
    try:
        metadata = reader.metadata
        return clean_title(str(metadata.title or "")) if metadata is not None else ""
    except Exception:  # a broken /Info dictionary only costs the title
        return ""


# -- images --------------------------------------------------------------------


def _page_images(page: PageObject, number: int, limits: Limits) -> list[ParsedImage]:
    """The page's images that can be opened; the others are skipped."""
    try:
        image_ids = page.images.keys()
    except Exception:  # broken resources: the text is still worth having
        return []
    images: list[ParsedImage] = []
    for image_id in image_ids:
        if _declared_pixels(page, image_id) > limits.max_image_pixels:
            continue
        name = f"page-{number}-image-{len(images) + 1}"
        image = _extract(page, image_id, name, number, limits)
        if image is not None:
            images.append(image)
    return images


def _declared_pixels(page: PageObject, image_id: str | list[str]) -> int:
    """Width x height from the image's dictionary, read without decoding the image (0 if unknown)."""
    path = [image_id] if isinstance(image_id, str) else list(image_id)
    if path[0].startswith("~"):
        return 0  # inline images are small and pypdf has already decoded them
    try:
        holder: Any = page
        for key in path:
            holder = holder["/Resources"]["/XObject"][key]
        return int(holder.get("/Width", 0)) * int(holder.get("/Height", 0))
    except Exception:
        return 0


def _extract(page: PageObject, image_id: str | list[str], name: str, number: int, limits: Limits) -> ParsedImage | None:
    try:
        image_file = page.images[image_id]
    except Exception:
        return None
    data = image_file.data if sniff_format(image_file.data) else _as_png(image_file.image)
    if data is None:
        return None
    image_format = sniff_format(data) or "PNG"
    try:
        return inspect_image(data, name=f"{name}.{_EXTENSIONS[image_format]}", limits=limits, page=number)
    except IngestError:
        return None


def _as_png(image: Image.Image | None) -> bytes | None:
    """The decoded image re-encoded as PNG, for formats that are not stored as they are."""
    if image is None:
        return None
    try:
        if image.mode not in _PNG_MODES:
            image = image.convert("RGBA" if "A" in image.mode else "RGB")
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
    except (OSError, ValueError, Image.DecompressionBombError):
        return None
    return buffer.getvalue()
