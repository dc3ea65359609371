"""Which language a text is in, and its words, whatever the script.

``detect_language`` is langid.py's naive Bayes decision (its model ships inside the package).
``words`` splits a text into the words a lexical index and a coverage test compare: runs of letters
and digits for scripts written with spaces, and, for Chinese (and other text written without spaces
between words, Japanese kana and Korean included), the words rjieba's dictionary finds in a run of
Han characters (jieba's dictionary and HMM compiled into the wheel), each longer word also as the
dictionary words inside it (``cut_for_search``), so that 重排序 and 排序 both match.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

import numpy as np

UNDETERMINED = "und"
CJK_MAJORITY = 0.5  # a text whose letters are at least this share CJK is written in a CJK script
# Han ideographs (with extensions A and the compatibility block), kana, Hangul syllables.
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_CJK_CHAR = re.compile(f"[{_CJK}]")
_CJK_RUN = re.compile(f"[{_CJK}]+")
_PIECE = re.compile(rf"[{_CJK}]+|(?:(?![{_CJK}])\w)+")
_LETTER = re.compile(r"[^\W\d_]")


@functools.cache
def _langid() -> Any:
    """langid.py's identifier, loaded once."""
    from langid import langid

    if langid.identifier is None:
        langid.load_model()
    return langid.identifier


def detect_language(text: str) -> str:
    """ISO 639-1 code of ``text``'s language ("und" for text without letters). ``langid.classify``
    multiplies the whole feature vector (about 7,500 entries, nearly all zero for one line) with its
    7,500 x 97 table; the few non-zero rows give the same argmax in a few hundredths of the time."""
    if not _LETTER.search(text):
        return UNDETERMINED
    identifier = _langid()
    features = identifier.instance2fv(text)
    present = np.flatnonzero(features)
    scores = features[present].astype(np.float64) @ identifier.nb_ptc[present] + identifier.nb_pc
    return str(identifier.nb_classes[int(np.argmax(scores))])


def cjk_share(text: str) -> float:
    """The share of ``text``'s letters that are Han, kana or Hangul (0 for text without letters)."""
    letters = len(_LETTER.findall(text))
    return len(_CJK_CHAR.findall(text)) / letters if letters else 0.0


def written_in_cjk(text: str) -> bool:
    """Whether most of ``text``'s letters are Chinese, Japanese or Korean characters."""
    return cjk_share(text) >= CJK_MAJORITY


def same_script(first: str, second: str) -> bool:
    """Whether two texts are written the same way: both mostly in CJK characters, or both not."""
    return written_in_cjk(first) == written_in_cjk(second)


def has_cjk(text: str) -> bool:
    return _CJK_CHAR.search(text) is not None


def main_language(pieces: Iterable[tuple[str, int]]) -> str:
    """The language of most of a document's text: ``(language, characters)`` per piece (chunk), the
    undetermined ones left out ("und" when every piece is)."""
    weights: Counter[str] = Counter()
    for language, size in pieces:
        if language != UNDETERMINED:
            weights[language] += size
    return weights.most_common(1)[0][0] if weights else UNDETERMINED


@functools.cache
def _segmenter() -> Any:
    import rjieba

    return rjieba


def _cjk_words(run: str) -> list[str]:
    return [word for word in _segmenter().cut_for_search(run) if word.strip()]


# rjieba's part-of-speech tags that name things: people, places, organisations.
NAME_TAGS = {"nr": "PERSON", "nrfg": "PERSON", "nrt": "PERSON", "ns": "GPE", "nt": "ORG"}
MIN_NAME_CHARS = 2  # one-character "names" are mostly mis-tagged words


def chinese_names(text: str) -> list[tuple[int, int, str, str]]:
    """(start, end, name, label) of the names rjieba tags in a Chinese ``text`` (its words cover the
    text in order, so their offsets add up)."""
    names = []
    offset = 0
    for word, tag in _segmenter().tag(text):
        start, offset = offset, offset + len(word)
        label = NAME_TAGS.get(tag)
        if label and len(word.strip()) >= MIN_NAME_CHARS:
            names.append((start, offset, word, label))
    return names


def words(text: str) -> list[str]:
    """``text``'s words in order, case-folded: Chinese runs segmented by rjieba (see the module)."""
    found: list[str] = []
    for piece in _PIECE.findall(text):
        if _CJK_RUN.fullmatch(piece):
            found.extend(_cjk_words(piece))
        else:
            found.append(piece.casefold())
    return found
