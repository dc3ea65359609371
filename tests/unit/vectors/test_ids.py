"""Vector ids: stable, positive int64, derived from the graph node id."""

from __future__ import annotations

import numpy as np

from apps.graph.identity import content_id
from apps.vectors.ids import vector_id, vector_ids


def test_a_content_hash_id_maps_to_its_first_63_bits() -> None:
    node = "0123456789abcdef0123456789abcdef"
    assert vector_id(node) == 0x0123456789ABCDEF >> 1


def test_the_mapping_is_stable_across_calls_and_processes() -> None:
    # A fixed value: changing the mapping would orphan every saved index.
    assert vector_id(content_id("chunk", "doc", "0", "Ada Lovelace")) == vector_id(
        content_id("chunk", "doc", "0", "Ada Lovelace")
    )
    assert vector_id("ffffffffffffffffffffffffffffffff") == 2**63 - 1
    assert vector_id("not a hash id") == 7979497032962618416


def test_ids_are_positive_int64_and_distinct() -> None:
    nodes = [content_id("chunk", str(i)) for i in range(20_000)]
    ids = vector_ids(nodes)
    assert ids.dtype == np.int64
    assert (ids >= 0).all()
    assert len(np.unique(ids)) == len(nodes)
    assert vector_id("ABCDEF0123456789ABCDEF0123456789") != vector_id("abcdef0123456789abcdef0123456789")
