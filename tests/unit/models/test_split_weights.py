"""Weights shipped in chunks: joined in order into one file checked against its pinned sha256, and
the decoding guards of the generator (no repeated n-gram of the answer, stop texts)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import cast

import pytest
from transformers import PreTrainedTokenizerBase

from apps.models import packages
from apps.models.generator import OFFLINE_GENERATORS, _answer_ngram_block, answer_cut, banned_next_tokens
from apps.models.packages import SplitGGUF, WeightsCorrupt, split_assemble

CHUNKS = [b"GGUF-part-one|", b"part-two|", b"three"]


def split_of(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunks: list[bytes], pinned: bytes) -> SplitGGUF:
    for index, chunk in enumerate(chunks, start=1):
        folder = tmp_path / "site" / f"fake_part{index}" / "data"
        folder.mkdir(parents=True)
        (folder / f"part{index:02d}.bin").write_bytes(chunk)
    monkeypatch.setattr(packages, "package_dir", lambda module: tmp_path / "site" / module)
    digest = hashlib.sha256(pinned).hexdigest()
    return SplitGGUF("model.gguf", "fake_part", "fake-part", len(chunks), "1.0", digest, len(pinned))


def test_the_chunks_join_in_order_into_the_pinned_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    weights = split_of(tmp_path, monkeypatch, CHUNKS, b"".join(CHUNKS))
    joined = split_assemble(weights, tmp_path / "gguf")
    assert joined.read_bytes() == b"".join(CHUNKS)
    assert split_assemble(weights, tmp_path / "gguf") == joined  # the second call reuses the file
    assert sorted(p.name for p in (tmp_path / "gguf").iterdir()) == ["model.gguf"]


def test_chunks_that_do_not_give_the_pinned_file_are_refused_and_leave_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    weights = split_of(tmp_path, monkeypatch, CHUNKS, b"something else entirely")
    with pytest.raises(WeightsCorrupt, match="fake-partN packages"):
        split_assemble(weights, tmp_path / "gguf")
    assert list((tmp_path / "gguf").iterdir()) == []


def test_a_missing_chunk_package_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    weights = split_of(tmp_path, monkeypatch, CHUNKS, b"".join(CHUNKS))
    (tmp_path / "site" / "fake_part2" / "data" / "part02.bin").unlink()
    with pytest.raises(packages.ModelPackageMissing, match="fake-part2"):
        split_assemble(weights, tmp_path / "gguf")


def test_every_offline_generator_is_pinned() -> None:
    assert set(OFFLINE_GENERATORS) == {"qwen2.5-1.5b", "qwen2.5-0.5b", "smollm2"}
    for model in OFFLINE_GENERATORS.values():
        if isinstance(model.weights, SplitGGUF):
            assert len(model.weights.sha256) == 64 and model.weights.size > 100_000_000
        assert model.licence == "Apache-2.0"


def test_an_ngram_the_answer_already_wrote_cannot_be_written_again() -> None:
    # "1) The Visit 2) The" -> " Visit" would repeat the 3-gram ") The Visit" ... with size 3
    answer = [1, 9, 5, 7, 2, 9, 5]
    assert banned_next_tokens(answer, 3) == {7}
    assert banned_next_tokens(answer, 4) == set()  # "2) The" was never followed before
    assert banned_next_tokens([4, 4], 2) == {4}
    assert banned_next_tokens([1, 2], 3) == set()


def test_the_supporting_sentence_may_repeat_the_short_answer_once() -> None:
    # "Gwendolyn Pryce \n Its president was Gwendolyn" -> " Pryce" is allowed: the first line is left out
    first_line = [11, 12, 0]  # 0: the line break
    answer = [*first_line, 21, 22, 11]
    assert banned_next_tokens(answer, 2) == {12}
    assert banned_next_tokens(answer, 2, after=len(first_line)) == set()
    assert banned_next_tokens([*answer, 12, 23, 11], 2, after=len(first_line)) == {12}  # a second time: a loop


def test_the_answer_ends_at_a_blank_line_or_echoed_scaffolding() -> None:
    assert answer_cut("Leeds\nShe was born in Leeds.\n\nQuestion: more?") == "Leeds\nShe was born in Leeds."
    assert answer_cut("Paris\nIt is in France.\nSources:\n[1]") == "Paris\nIt is in France."
    assert answer_cut("  1889  ") == "1889"
    # a leading blank line is no stop
    assert answer_cut("\n\nLeeds\nShe was born there.") == "Leeds\nShe was born there."


class Pieces:
    """A tokenizer stand-in: token 0 is a line break, every other id a word."""

    def decode(self, ids: list[int]) -> str:
        return "\n" if ids == [0] else f" w{ids[0]}"


def test_the_answers_first_word_can_be_kept_from_yes_and_no() -> None:
    import torch

    block = _answer_ngram_block(2, 4, cast(PreTrainedTokenizerBase, Pieces()), frozenset({5, 6}))
    first = block(torch.tensor([[9, 9]]), torch.zeros((1, 8)))  # the prompt alone: the first word is next
    assert first[0, 5] == first[0, 6] == -float("inf") and first[0, 7] == 0
    later = block(torch.tensor([[9, 9, 7]]), torch.zeros((1, 8)))  # "Yes" may come later in the answer
    assert later[0, 5] == 0
