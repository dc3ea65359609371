"""PNG, JPEG, WebP and GIF images, checked before their pixels are decoded.

The format is recognised from the file's signature and opened with that one
Pillow plugin, so Pillow never guesses among its other formats and its global
``Image.MAX_IMAGE_PIXELS`` is neither used nor changed: the pixel limit comes
from ``Limits`` and is checked on the size in the header. The image is then
verified and decoded once, which catches truncated and corrupt files.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import IO

from PIL import GifImagePlugin, ImageFile, JpegImagePlugin, PngImagePlugin, WebPImagePlugin

from apps.ingest.parsing.text import file_name, file_stem, sha256_hex
from apps.ingest.types import CORRUPT_FILE, IMAGE_TOO_MANY_PIXELS, IngestError, Limits, ParsedDocument, ParsedImage

_Opener = Callable[[IO[bytes]], ImageFile.ImageFile]
_OPENERS: dict[str, _Opener] = {
    "PNG": PngImagePlugin.PngImageFile,
    "JPEG": JpegImagePlugin.jpeg_factory,
    "WEBP": WebPImagePlugin.WebPImageFile,
    "GIF": GifImagePlugin.GifImageFile,
}
IMAGE_MIMES = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp", "GIF": "image/gif"}


def sniff_format(data: bytes) -> str | None:
    """PNG, JPEG, WEBP or GIF from the file signature, else None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "PNG"
    if data.startswith(b"\xff\xd8\xff"):
        return "JPEG"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "GIF"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "WEBP"
    return None


def inspect_image(data: bytes, *, name: str, limits: Limits, page: int | None = None) -> ParsedImage:
    """Check and describe one image; a GIF is stored as its first frame in PNG.

    Raises CORRUPT_FILE for anything that is not a whole, decodable PNG, JPEG,
    WebP or GIF, and IMAGE_TOO_MANY_PIXELS before decoding an oversized one.
    """
    source_format = sniff_format(data)
    if source_format is None:
        raise IngestError(CORRUPT_FILE, "not a PNG, JPEG, WebP or GIF image")
    width, height = _checked_size(data, source_format, limits)
    try:
        _open(data, source_format).verify()
        with _open(data, source_format) as image:
            image.load()
            stored, stored_format = data, source_format
            if source_format == "GIF":
                stored, stored_format = _first_frame_png(image), "PNG"
    except IngestError:
        raise
    except Exception as exc:  # Pillow raises OSError, SyntaxError, struct.error, ... on bad data
        raise IngestError(CORRUPT_FILE, f"the {source_format} image is truncated or corrupt: {exc}") from exc
    return ParsedImage(name=name, data=stored, format=stored_format, width=width, height=height, page=page)


def _open(data: bytes, image_format: str) -> ImageFile.ImageFile:
    return _OPENERS[image_format](io.BytesIO(data))


def _checked_size(data: bytes, image_format: str, limits: Limits) -> tuple[int, int]:
    """Width and height from the header alone, within ``limits.max_image_pixels``."""
    try:
        with _open(data, image_format) as image:
            width, height = image.size
    except Exception as exc:
        raise IngestError(CORRUPT_FILE, f"the {image_format} image header cannot be read: {exc}") from exc
    pixels = width * height
    if pixels > limits.max_image_pixels:
        raise IngestError(
            IMAGE_TOO_MANY_PIXELS,
            f"the image is {width}x{height} = {pixels:,} pixels, over the limit of {limits.max_image_pixels:,} pixels",
        )
    if pixels == 0:
        raise IngestError(CORRUPT_FILE, f"the {image_format} image has no pixels ({width}x{height})")
    return width, height


def _first_frame_png(image: ImageFile.ImageFile) -> bytes:
    buffer = io.BytesIO()
    image.seek(0)
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def parse_image(path: str, data: bytes, limits: Limits) -> ParsedDocument:
    """An image file as a document with no text and one image."""
    image = inspect_image(data, name=file_name(path), limits=limits)
    source_format = sniff_format(data) or image.format
    return ParsedDocument(
        path=path,
        mime=IMAGE_MIMES.get(source_format, "application/octet-stream"),
        sha256=sha256_hex(data),
        size=len(data),
        images=(image,),
        title=file_stem(path),
    )
