from __future__ import annotations

import io
import signal
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apps.ingest import extraction_pool
from apps.ingest.extraction import SpacyExtractor
from apps.ingest.extraction_pool import (
    ExtractionFailed,
    ExtractorPool,
    extraction_submit,
    receive_message,
    send_message,
    split_evenly,
)

TEXTS = [
    "Steven Spielberg directed Jaws. Jaws was released by Universal Pictures in 1975.",
    "",
    "Barack Obama was born in Hawaii. He met Angela Merkel in Berlin.",
    "Paris is the capital of France.",
    "   ",
    "Marie Curie worked in Paris with Pierre Curie at the University of Paris.",
]


@pytest.fixture(scope="module")
def pool() -> Iterator[ExtractorPool]:
    extractor = ExtractorPool(processes=2)
    yield extractor
    extractor.close()


def test_the_pool_gives_what_the_extractor_gives_in_process(pool: ExtractorPool) -> None:
    assert pool.extract(TEXTS) == SpacyExtractor().extract(TEXTS)


def test_a_submitted_batch_runs_in_the_background_until_collected(pool: ExtractorPool) -> None:
    pending = extraction_submit(pool, TEXTS[:3])
    assert [len(item.mentions) > 0 for item in pending.result()] == [True, False, True]
    assert pool.extract([]) == []


def test_an_in_process_extractor_is_submitted_synchronously() -> None:
    (result,) = extraction_submit(SpacyExtractor(), ["Paris is the capital of France."]).result()
    assert {mention.text for mention in result.mentions} == {"Paris", "France"}


def test_a_killed_helper_fails_the_batch_and_the_pool_recovers(pool: ExtractorPool) -> None:
    pool.extract(["warm up"])
    pending = pool.submit(TEXTS * 20)
    pool._helpers[0].process.send_signal(signal.SIGKILL)
    with pytest.raises(ExtractionFailed, match="exited with status"):
        pending.result()
    assert not pool._helpers  # stopped; the next submit starts fresh helpers
    assert pool.extract(TEXTS) == SpacyExtractor().extract(TEXTS)


def test_an_interrupted_collection_frees_the_pool_once(pool: ExtractorPool, monkeypatch: pytest.MonkeyPatch) -> None:
    pool.extract(["warm up"])
    pending = pool.submit(TEXTS)

    def interrupted() -> list[object]:
        raise KeyboardInterrupt

    monkeypatch.setattr(pool._helpers[0], "receive", interrupted)
    with pytest.raises(KeyboardInterrupt):
        pending.result()
    with pytest.raises(ExtractionFailed, match="interrupted"):
        pending.result()  # collecting it again (an abandoned batch) neither hangs nor releases twice
    assert not pool._helpers
    assert pool.extract(TEXTS) == SpacyExtractor().extract(TEXTS)


def test_a_request_behind_an_uncollected_one_fails_instead_of_hanging(
    pool: ExtractorPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(extraction_pool, "BUSY_WAIT_SECONDS", 0.2)
    pending = pool.submit(TEXTS)
    with pytest.raises(ExtractionFailed, match="still taken by an earlier request"):
        pool.submit(TEXTS)
    assert pending.result() == SpacyExtractor().extract(TEXTS)  # the first one is unharmed
    assert pool.extract(TEXTS[:1]) == SpacyExtractor().extract(TEXTS[:1])


def test_messages_round_trip_and_a_cut_stream_is_an_eof() -> None:
    stream = io.BytesIO()
    send_message(stream, ["a", "b"])
    data = stream.getvalue()
    assert receive_message(io.BytesIO(data)) == ["a", "b"]
    with pytest.raises(EOFError):
        receive_message(io.BytesIO(data[:-1]))
    with pytest.raises(EOFError):
        receive_message(io.BytesIO(b""))


@given(st.lists(st.text(max_size=30), max_size=40), st.integers(min_value=1, max_value=4))
def test_split_evenly_keeps_every_text_in_order(texts: list[str], parts: int) -> None:
    slices = split_evenly(texts, parts)
    assert [text for part in slices for text in part] == texts
    assert len(slices) <= parts
    assert all(slices)


def test_split_evenly_balances_characters() -> None:
    slices = split_evenly(["x" * 10] * 10, 2)
    assert [len(part) for part in slices] == [5, 5]
