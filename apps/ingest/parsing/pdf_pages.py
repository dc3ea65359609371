"""PDF pages rendered as images (PDFium through pypdfium2) for the document viewer: each page a JPEG
``RENDER_WIDTH`` pixels wide, the first ``RENDER_PAGES`` pages of a document. A PDF that PDFium cannot
render still ingests (its text and images come from pypdf): it just has no page pictures."""

from __future__ import annotations

import io
import logging

import pypdfium2 as pdfium

logger = logging.getLogger(__name__)

RENDER_PAGES = 200
RENDER_WIDTH = 900  # pixels
JPEG_QUALITY = 80


def render_pages(data: bytes, *, limit: int = RENDER_PAGES, width: int = RENDER_WIDTH) -> tuple[bytes, ...]:
    """The first ``limit`` pages as JPEG bytes; () when PDFium cannot open or render the file."""
    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        logger.warning("the PDF's pages cannot be rendered: %s", exc)
        return ()
    renders: list[bytes] = []
    try:
        for index in range(min(len(document), limit)):
            page = document[index]
            try:
                scale = width / max(1.0, float(page.get_width()))
                image = page.render(scale=scale).to_pil().convert("RGB")
                out = io.BytesIO()
                image.save(out, format="JPEG", quality=JPEG_QUALITY, optimize=True)
                renders.append(out.getvalue())
            finally:
                page.close()
    except pdfium.PdfiumError as exc:
        logger.warning("page %d of the PDF cannot be rendered: %s", len(renders) + 1, exc)
    finally:
        document.close()
    return tuple(renders)
