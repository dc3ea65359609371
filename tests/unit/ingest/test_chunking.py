from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apps.ingest.chunking import chunk_text, split_sentences
from apps.ingest.types import PageSpan, TextChunk

PROPERTY = settings(max_examples=200, deadline=None)

# Words and marks that exercise every rule: abbreviations, initials, decimals, ellipses,
# quotes, CJK marks, headings, list items, blank lines and long unbroken words.
_TOKENS = st.sampled_from(
    [
        "word", "Word", "the", "U.S.", "Dr.", "e.g.", "J.", "3.14", "1999.", "...", "…", ".", "!", "?",
        '"', "'", ")", "。", "\uff01", "\uff1f", "东京", "- ", "1. ", "# ", " ", "  ", "\n", "\n\n", "\t",
        "Introduction To Things", "x" * 30,
    ]
)  # fmt: skip
TEXTS = st.lists(st.one_of(_TOKENS, st.text(max_size=6)), max_size=40).map("".join)


def sentences_of(text: str) -> list[str]:
    return [text[start:end] for start, end in split_sentences(text)]


def assert_partition(text: str, spans: list[tuple[int, int]]) -> None:
    """Ordered, non-overlapping, stripped spans covering every non-whitespace character."""
    covered: set[int] = set()
    previous_end = 0
    for start, end in spans:
        assert previous_end <= start < end <= len(text)
        assert not text[start].isspace() and not text[end - 1].isspace()
        covered.update(range(start, end))
        previous_end = end
    assert {i for i, char in enumerate(text) if not char.isspace()} <= covered


@PROPERTY
@given(TEXTS)
def test_sentences_partition_the_text(text: str) -> None:
    assert_partition(text, split_sentences(text))


def assert_chunks(text: str, chunks: list[TextChunk], size: int, overlap: int) -> None:
    for number, chunk in enumerate(chunks):
        assert chunk.ord == number
        assert text[chunk.start : chunk.end] == chunk.text
        assert 0 < len(chunk.text) <= size
        assert chunk.sentences[0][0] == 0 and chunk.sentences[-1][1] == len(chunk.text)
        assert_partition(chunk.text, list(chunk.sentences))
    for before, after in itertools.pairwise(chunks):
        assert before.start < after.start and before.end < after.end  # always progress
        assert before.end - after.start <= overlap  # shared text is bounded
    covered = {i for chunk in chunks for i in range(chunk.start, chunk.end)}
    assert {i for i, char in enumerate(text) if not char.isspace()} <= covered


@PROPERTY
@given(TEXTS, st.integers(min_value=1, max_value=80), st.data())
def test_chunk_invariants(text: str, size: int, data: st.DataObject) -> None:
    overlap = data.draw(st.integers(min_value=0, max_value=size - 1))
    chunks = chunk_text(text, size=size, overlap=overlap)
    assert_chunks(text, chunks, size, overlap)
    assert all(chunk.page is None for chunk in chunks)


@PROPERTY
@given(TEXTS, st.integers(min_value=1, max_value=80))
def test_chunk_sentences_are_whole_sentences_or_pieces_of_long_ones(text: str, size: int) -> None:
    sentences = split_sentences(text)
    for chunk in chunk_text(text, size=size, overlap=size // 3):
        for start, end in chunk.sentences:
            absolute = (chunk.start + start, chunk.start + end)
            holder = next((s, e) for s, e in sentences if s <= absolute[0] and absolute[1] <= e)
            assert holder == absolute or holder[1] - holder[0] > size


@PROPERTY
@given(TEXTS, st.lists(st.integers(min_value=1, max_value=30), min_size=1, max_size=6))
def test_chunk_page_holds_its_start(text: str, page_lengths: list[int]) -> None:
    pages, offset = [], 0
    for number, length in enumerate(page_lengths, start=1):
        pages.append(PageSpan(number, offset, offset + length))
        offset += length
    for chunk in chunk_text(text, size=40, overlap=10, pages=pages):
        expected = next((page.number for page in pages if page.start <= chunk.start < page.end), pages[-1].number)
        assert chunk.page == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Mr. Smith met Dr. Jones. They talked.", ["Mr. Smith met Dr. Jones.", "They talked."]),
        ("J. R. R. Tolkien wrote books. He died.", ["J. R. R. Tolkien wrote books.", "He died."]),
        ("He moved to the U.S. in 1950. It rained.", ["He moved to the U.S. in 1950.", "It rained."]),
        ("Cats, e.g. tabbies, sleep. Dogs i.e. hounds bark.", ["Cats, e.g. tabbies, sleep.", "Dogs i.e. hounds bark."]),
        ("Pi is 3.14 roughly. Yes.", ["Pi is 3.14 roughly.", "Yes."]),
        ("Wait... then go. Now!", ["Wait... then go.", "Now!"]),
        ("See No. 5 today. I said no. Then left.", ["See No. 5 today.", "I said no.", "Then left."]),
        ('She said "Stop." Then he left.', ['She said "Stop."', "Then he left."]),
        ("Is it? yes it is.", ["Is it? yes it is."]),
        ("It ended in 1999. 2000 began.", ["It ended in 1999.", "2000 began."]),
        ("Ermengarde (d. 851) was queen. She died.", ["Ermengarde (d. 851) was queen.", "She died."]),
        ("东京是首都。大阪很大\uff01真的吗\uff1f是的", ["东京是首都。", "大阪很大\uff01", "真的吗\uff1f", "是的"]),
        ("First para\n\nsecond para", ["First para", "second para"]),
        ("Results And Discussion\nThe data show a rise.", ["Results And Discussion", "The data show a rise."]),
        ("## Methods\nWe sampled.", ["## Methods", "We sampled."]),
        ("Items:\n- one\n- two\n1. three", ["Items:", "- one", "- two", "1. three"]),
        ("a wrapped line that goes\non and on.", ["a wrapped line that goes\non and on."]),
        ("  \n\t ", []),
        ("", []),
    ],
)
def test_split_examples(text: str, expected: list[str]) -> None:
    assert sentences_of(text) == expected


def test_chunks_pack_whole_sentences_with_overlap() -> None:
    text = "One two three. Four five six. Seven eight nine. Ten eleven."
    chunks = chunk_text(text, size=35, overlap=17)
    assert [chunk.text for chunk in chunks] == [
        "One two three. Four five six.",
        "Four five six. Seven eight nine.",
        "Seven eight nine. Ten eleven.",
    ]
    assert chunks[1].sentences == ((0, 14), (15, 32))
    assert [chunk.ord for chunk in chunks] == [0, 1, 2]


def test_overlap_zero_shares_nothing() -> None:
    text = "One two three. Four five six. Seven eight nine."
    chunks = chunk_text(text, size=30, overlap=0)
    assert [chunk.text for chunk in chunks] == ["One two three. Four five six.", "Seven eight nine."]


def test_overlap_never_crowds_out_the_next_sentence() -> None:
    text = "Short one. Another short. " + "A much longer sentence follows here."
    chunks = chunk_text(text, size=40, overlap=30)
    assert chunks[-1].text == "A much longer sentence follows here."


def test_long_sentence_is_cut_at_whitespace_and_hard_when_needed() -> None:
    text = "alpha beta gamma delta epsilon " + "z" * 25
    chunks = chunk_text(text, size=12, overlap=0)
    assert [chunk.text for chunk in chunks] == ["alpha beta", "gamma delta", "epsilon", "z" * 12, "z" * 12, "z"]


def test_pages_follow_chunk_starts() -> None:
    text = "Page one text. " * 3 + "Page two text. " * 3
    pages = [PageSpan(1, 0, 45), PageSpan(2, 45, len(text))]
    chunks = chunk_text(text, size=30, overlap=0, pages=pages)
    assert [(chunk.start, chunk.page) for chunk in chunks] == [(0, 1), (30, 1), (60, 2)]


def test_offsets_point_into_the_document() -> None:
    text = "\n\n  Leading space. Then more.  \n"
    (chunk,) = chunk_text(text, size=100, overlap=10)
    assert (chunk.start, chunk.end, chunk.text) == (4, 29, "Leading space. Then more.")


@pytest.mark.parametrize(("size", "overlap"), [(0, 0), (10, 10), (10, -1)])
def test_bad_sizes_are_rejected(size: int, overlap: int) -> None:
    with pytest.raises(ValueError, match="chunk"):
        chunk_text("Some text.", size=size, overlap=overlap)


def test_blank_text_gives_no_chunks() -> None:
    assert chunk_text(" \n\t", size=10, overlap=2) == []
