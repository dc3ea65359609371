"""The change log's canonical entry bytes: stable, key-order independent, and refusing what has no canonical form."""

from __future__ import annotations

import hashlib

import pytest

from apps.ledger.canonical import CanonicalError, Entry, canonical_bytes, entry_bytes
from apps.ledger.merkle import leaf_hash

ENTRY = Entry(
    seq=7,
    time="2026-11-29T18:01:15.123456Z",
    actor="curator:ana",
    action="entity.renamed",
    subject_kind="Entity",
    subject_id="e:Zürich",
    before=hashlib.sha256(b"Zurich").hexdigest(),
    after=hashlib.sha256(b"Z\xc3\xbcrich").hexdigest(),
)


def test_an_entry_has_one_byte_form_written_in_the_spec() -> None:
    expected = (
        '{"action":"entity.renamed","actor":"curator:ana","after":"'
        + hashlib.sha256("Zürich".encode()).hexdigest()
        + '","before":"'
        + hashlib.sha256(b"Zurich").hexdigest()
        + '","seq":7,"subject":{"id":"e:Zürich","kind":"Entity"},"time":"2026-11-29T18:01:15.123456Z","v":1}'
    ).encode()
    assert entry_bytes(ENTRY) == expected
    assert len(leaf_hash(entry_bytes(ENTRY))) == 32


def test_key_order_does_not_change_the_bytes_and_none_is_null() -> None:
    assert canonical_bytes({"b": 1, "a": [None, True, "x"]}) == b'{"a":[null,true,"x"],"b":1}'
    assert canonical_bytes({"a": [None, True, "x"], "b": 1}) == canonical_bytes({"b": 1, "a": [None, True, "x"]})


@pytest.mark.parametrize("value", [{"x": 1.5}, {1: "a"}, {"x": [b"bytes"]}, {"x": float("nan")}])
def test_values_without_a_canonical_form_are_refused(value: object) -> None:
    with pytest.raises(CanonicalError):
        canonical_bytes(value)


def test_unknown_actions_and_negative_sequence_numbers_are_refused() -> None:
    with pytest.raises(CanonicalError, match="unknown action"):
        entry_bytes(Entry(0, ENTRY.time, "a", "entity.teleported", "Entity", "e", None, None))
    with pytest.raises(CanonicalError, match="start at 0"):
        entry_bytes(Entry(-1, ENTRY.time, "a", "entity.created", "Entity", "e", None, None))
