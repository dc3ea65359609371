"""Plain text and Markdown, plus the helpers every parser shares.

Decoding order: a byte-order mark (UTF-8/16/32) or valid UTF-8; otherwise the
legacy encodings that charset-normalizer proposes, preferring Windows-1252
whenever it reads at least as cleanly as the detector's best guess (short
Western texts are otherwise often mistaken for Central European or DOS code
pages). Text that still looks binary afterwards is rejected.
"""

from __future__ import annotations

import codecs
import hashlib
import re
from pathlib import PurePosixPath

import charset_normalizer
from charset_normalizer.md import mess_ratio

from apps.ingest.types import EMPTY_FILE, UNDECODABLE_TEXT, IngestError, Limits, ParsedDocument

MAX_TITLE_CHARS = 200
_TITLE_SEARCH_CHARS = 65_536
# Longer texts are judged on evenly spaced samples of this many characters.
_SAMPLE_CHARS = 50_000
_SAMPLES = 4
_DETECT_BYTES = 1 << 20
# charset-normalizer's own default: above this "mess" ratio a decoding is noise.
_MAX_MESS = 0.2
# More control characters than this share of the text means binary data.
_MAX_CONTROL_SHARE = 0.02
# C0/C1 control characters other than tab, newlines, vertical tab and form feed.
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x9f]")
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_MIME_BY_SUFFIX = {".md": "text/markdown", ".txt": "text/plain"}
_ATX_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$", re.MULTILINE)
_SETEXT_HEADING = re.compile(r"^ {0,3}(\S[^\n]*)\n {0,3}=+[ \t]*$", re.MULTILINE)
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n.*?\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_WHITESPACE = re.compile(r"\s+")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_name(path: str) -> str:
    """The last component of ``path`` (``/`` or ``\\`` separated)."""
    return PurePosixPath(path.replace("\\", "/")).name


def file_stem(path: str) -> str:
    name = file_name(path)
    return PurePosixPath(name).stem or name


def suffix_of(path: str) -> str:
    """The lower-cased extension of ``path`` with its dot (``""`` when it has none)."""
    return PurePosixPath(file_name(path)).suffix.lower()


def collapse_whitespace(text: str) -> str:
    return _WHITESPACE.sub(" ", text).strip()


def clean_title(text: str) -> str:
    """One line, at most ``MAX_TITLE_CHARS`` characters."""
    return collapse_whitespace(text)[:MAX_TITLE_CHARS].rstrip()


def normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def decode_text(data: bytes, *, declared: str | None = None) -> str:
    """Decode ``data`` as text with ``\\n`` newlines, or raise UNDECODABLE_TEXT.

    ``declared`` is an encoding named by the content itself (an HTML ``<meta charset>``);
    it is tried after BOMs and UTF-8 and before detection.
    """
    text = _decode_unicode(data)
    if text is None and declared:
        text = _decode_declared(data, declared)
    if text is None:
        text = _decode_legacy(data)
    if _looks_binary(text):
        raise IngestError(UNDECODABLE_TEXT, "the file looks like binary data, not text")
    return normalise_newlines(text)


def _decode_unicode(data: bytes) -> str | None:
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                return data.decode(encoding)
            except UnicodeDecodeError:
                continue  # a UTF-16 mark also starts the UTF-32 one
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _decode_declared(data: bytes, encoding: str) -> str | None:
    try:
        return data.decode(encoding)
    except (LookupError, UnicodeDecodeError):
        return None


def _decode_legacy(data: bytes) -> str:
    """Decode non-Unicode text: Windows-1252 if it reads cleanly, else the detector's guess."""
    best = _detected(data)
    western = _cp1252(data)
    if western is not None:
        mess = max(mess_ratio(sample, _MAX_MESS) for sample in _samples(western))
        if mess <= _MAX_MESS and (best is None or mess <= best[1]):
            return western
    if best is None:
        raise IngestError(
            UNDECODABLE_TEXT,
            "the text is neither UTF-8 nor in an encoding that could be detected; save it as UTF-8 and retry",
        )
    return best[0]


def _detected(data: bytes) -> tuple[str, float] | None:
    """charset-normalizer's best decoding and its mess ratio; UTF-16/32 without a BOM are not trusted.

    A long file is judged on its first lines (about a megabyte), then decoded whole.
    """
    sample = data
    if len(data) > _DETECT_BYTES:
        sample = data[: data.rfind(b"\n", 0, _DETECT_BYTES) + 1 or _DETECT_BYTES]
    for match in charset_normalizer.from_bytes(sample):
        if match.encoding.startswith(("utf_16", "utf_32")):
            continue
        try:
            return data.decode(match.encoding), match.chaos
        except (LookupError, UnicodeDecodeError):
            continue
    return None


def _samples(text: str) -> list[str]:
    if len(text) <= _SAMPLE_CHARS * _SAMPLES:
        return [text]
    step = (len(text) - _SAMPLE_CHARS) // (_SAMPLES - 1)
    return [text[start : start + _SAMPLE_CHARS] for start in range(0, step * _SAMPLES, step)]


def _cp1252(data: bytes) -> str | None:
    try:
        return data.decode("cp1252")
    except UnicodeDecodeError:
        return None


def _looks_binary(text: str) -> bool:
    if not text:
        return False
    return "\x00" in text or len(_CONTROL.findall(text)) > _MAX_CONTROL_SHARE * len(text)


def text_title(text: str, *, markdown: bool) -> str:
    """The first Markdown heading (when ``markdown``), else the first non-empty line.

    Only the beginning of the text is searched: a heading further down is no title.
    """
    head = text[:_TITLE_SEARCH_CHARS]
    if markdown:
        front_matter = _FRONT_MATTER.match(head)
        head = head[front_matter.end() :] if front_matter else head
        heading = _first_heading(head)
        if heading:
            return heading
    for line in head.split("\n"):
        if line.strip():
            return clean_title(line)
    return ""


def _first_heading(text: str) -> str:
    candidates = [match for match in (_ATX_HEADING.search(text), _SETEXT_HEADING.search(text)) if match]
    if not candidates:
        return ""
    first = min(candidates, key=lambda match: match.start())
    return clean_title(first.group(1))


def parse_text(path: str, data: bytes, limits: Limits) -> ParsedDocument:
    """A .txt or .md file: the whole decoded text, titled by its first heading or line."""
    del limits  # the size limit is checked before dispatch
    text = decode_text(data)
    if not text.strip():
        raise IngestError(EMPTY_FILE, "the file contains only whitespace")
    suffix = suffix_of(path)
    return ParsedDocument(
        path=path,
        mime=_MIME_BY_SUFFIX.get(suffix, "text/plain"),
        sha256=sha256_hex(data),
        size=len(data),
        text=text,
        title=text_title(text, markdown=suffix == ".md") or file_stem(path),
    )
