"""Image files on disk: the original (content-addressed) and a thumbnail."""

from __future__ import annotations

import hashlib
import io
import os
import tempfile
from pathlib import Path
from typing import Any

from django.conf import settings
from PIL import Image

from apps.graph.identity import content_id
from apps.ingest.types import ParsedImage

THUMBNAIL_SIZE = (256, 256)


def _write_atomic(path: Path, data: bytes) -> None:
    if path.exists():
        return  # content-addressed: the same name holds the same bytes
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _thumbnail(data: bytes) -> bytes:
    with Image.open(io.BytesIO(data)) as image:
        image.thumbnail(THUMBNAIL_SIZE)
        out = io.BytesIO()
        image.convert("RGBA" if image.mode in ("RGBA", "LA", "P") else "RGB").save(out, format="PNG")
        return out.getvalue()


def page_store(data: bytes) -> dict[str, Any]:
    """Store a rendered PDF page (JPEG) under MEDIA_ROOT, content-addressed; return its path there and
    its size in pixels (the viewer reserves the space before the picture loads)."""
    sha = hashlib.sha256(data).hexdigest()
    relative = Path("pages") / sha[:2] / f"{sha}.jpg"
    _write_atomic(Path(settings.MEDIA_ROOT) / relative, data)
    with Image.open(io.BytesIO(data)) as image:
        width, height = image.size
    return {"path": str(relative), "width": width, "height": height}


def image_store(*, image: ParsedImage, document_id: str) -> dict[str, Any]:
    """Store the image and its thumbnail under MEDIA_ROOT; return its graph row."""
    sha = hashlib.sha256(image.data).hexdigest()
    extension = image.format.lower().replace("jpeg", "jpg")
    original = Path("images") / sha[:2] / f"{sha}.{extension}"
    thumbnail = Path("thumbnails") / sha[:2] / f"{sha}.png"
    media = Path(settings.MEDIA_ROOT)
    _write_atomic(media / original, image.data)
    _write_atomic(media / thumbnail, _thumbnail(image.data))
    return {
        "id": content_id("image", document_id, sha, image.name),
        "path": str(original),
        "thumbnail": str(thumbnail),
        "sha256": sha,
        "width": image.width,
        "height": image.height,
        "format": image.format,
        "page": image.page,
        "name": image.name,
        "text": "",  # labels, descriptions and OCR text: apps.ingest.enrich.images_describe
        "labels": [],
        "label_scores": [],
        "ocr_text": "",
    }
