"""VectorIndex per index type: add, remove, replace, search, collection filters, IVF-PQ training."""

from __future__ import annotations

import numpy as np
import pytest

from apps.vectors._faiss import faiss
from apps.vectors.errors import IdCollision
from apps.vectors.ids import vector_id
from apps.vectors.index import SMALL_BATCH, VectorIndex
from apps.vectors.types import VectorItem
from tests.unit.vectors.fakes import clustered, items, node_id, space

TYPES = ["flat", "hnsw", "ivfpq"]


def filled(index_type: str, n: int = 300) -> tuple[VectorIndex, np.ndarray]:
    index = VectorIndex(space(index_type))
    data = clustered(n, 32)
    index.add(items(0, n // 2, collection="a") + items(n // 2, n, collection="b"), data)
    return index, data


def top_ids(
    index: VectorIndex, queries: np.ndarray, k: int = 5, collections: set[str] | None = None
) -> list[list[int]]:
    return [[hit.id for hit in hits] for hits in index.search(queries, k, collections=collections)]


@pytest.mark.parametrize("index_type", TYPES)
def test_each_vector_finds_itself_first(index_type: str) -> None:
    index, data = filled(index_type)
    hits = index.search(data[:20], 3)
    found = sum(row[0].id == vector_id(node_id(i)) for i, row in enumerate(hits))
    assert found >= (20 if index_type != "ivfpq" else 16)  # IVF-PQ is lossy
    assert index.count == 300
    assert all(row[0].score >= row[1].score >= row[2].score for row in hits)
    if index_type != "ivfpq":  # scores are cosine similarities (HNSW's vectors are float16: within 1e-3)
        tolerance = 1e-3 if index_type == "hnsw" else 1e-5
        assert all(row[0].score == pytest.approx(1.0, abs=tolerance) for row in hits)


@pytest.mark.parametrize("index_type", TYPES)
def test_removed_vectors_are_never_returned(index_type: str) -> None:
    index, data = filled(index_type)
    gone = [vector_id(node_id(i)) for i in range(0, 300, 3)]
    assert index.remove([*gone, 12345]) == 100
    assert index.count == 200
    returned = {hit for row in top_ids(index, data[:60], k=20) for hit in row}
    assert returned and not returned & set(gone)
    assert index.entries([gone[0]]) == [None]
    assert index.remove(gone) == 0
    kept = [i for i in range(300) if i % 3][:30]  # the ids that remain still name their own vectors
    found = sum(vector_id(node_id(i)) in row for i, row in zip(kept, top_ids(index, data[kept], k=5), strict=True))
    assert found >= 27


@pytest.mark.parametrize("index_type", TYPES)
def test_adding_a_known_node_again_replaces_its_vector(index_type: str) -> None:
    index, data = filled(index_type)
    index.add([VectorItem(node_id(7), "Chunk", "b")], data[200:201])
    assert index.count == 300
    assert index.entries([vector_id(node_id(7))]) == [VectorItem(node_id(7), "Chunk", "b")]
    hits = top_ids(index, data[200:201], k=2)[0]
    assert vector_id(node_id(7)) in hits
    if index_type != "ivfpq":  # exact copies: 7 now sits exactly where 200 is; its old place is empty
        assert top_ids(index, data[7:8], k=1)[0] != [vector_id(node_id(7))]


@pytest.mark.parametrize("index_type", TYPES)
def test_collection_filter_returns_only_those_collections(index_type: str) -> None:
    index, data = filled(index_type)
    b_ids = {vector_id(node_id(i)) for i in range(150, 300)}
    for row in top_ids(index, data[:10], k=10, collections={"b"}):  # queries from "a", answers only from "b"
        assert len(row) == 10 and set(row) <= b_ids
    assert top_ids(index, data[:3], collections={"nowhere"}) == [[], [], []]
    assert len(top_ids(index, data[:1], k=10, collections={"a", "b"})[0]) == 10


@pytest.mark.parametrize("index_type", TYPES)
def test_a_small_collection_is_found_completely(index_type: str) -> None:
    index, data = filled(index_type)
    index.add(items(1000, 1005, collection="tiny"), clustered(5, 32, seed=9))
    rows = top_ids(index, data[:4], k=10, collections={"tiny"})
    assert all(sorted(row) == sorted(vector_id(node_id(i)) for i in range(1000, 1005)) for row in rows)


def test_hnsw_tombstones_are_hidden_then_compacted() -> None:
    index, data = filled("hnsw")  # rebuilds once removed vectors pass half of the graph
    index.remove(vector_id(node_id(i)) for i in range(100))
    assert index.tombstones == 100 and index.count == 200
    assert not {hit for row in top_ids(index, data[:100], k=10) for hit in row} & {
        vector_id(node_id(i)) for i in range(100)
    }
    hidden = {vector_id(node_id(i)) for i in range(100)}
    assert not {hit for row in top_ids(index, data[:20], k=10, collections={"a"}) for hit in row} & hidden
    index.remove(vector_id(node_id(i)) for i in range(100, 160))
    assert index.tombstones == 0 and index.count == 140
    assert top_ids(index, data[200:201], k=1) == [[vector_id(node_id(200))]]


def test_hnsw_readds_a_removed_node() -> None:
    index, data = filled("hnsw")
    index.remove([vector_id(node_id(5))])
    index.add(items(5, 6), data[5:6])
    assert index.tombstones == 0
    assert top_ids(index, data[5:6], k=1) == [[vector_id(node_id(5))]]


def test_ivfpq_is_exact_until_trained_then_migrates() -> None:
    index = VectorIndex(space("ivfpq"))
    data = clustered(400, 32)
    index.add(items(0, 150), data[:150])
    assert index.describe()["trained"] is False
    assert top_ids(index, data[:150], k=1) == [[vector_id(node_id(i))] for i in range(150)]  # exact
    index.add(items(150, 400), data[150:])
    assert index.trained and index.count == 400
    hits = top_ids(index, data[:100], k=10)
    assert sum(vector_id(node_id(i)) in row for i, row in enumerate(hits)) >= 90
    assert index.remove([vector_id(node_id(i)) for i in range(50)]) == 50
    assert index.count == 350 and index.trained


def test_k_beyond_the_count_returns_what_there_is() -> None:
    index = VectorIndex(space("hnsw"))
    assert index.search(clustered(2, 32), 5) == [[], []]
    index.add(items(0, 3), clustered(3, 32))
    assert [len(row) for row in index.search(clustered(2, 32, seed=4), 10)] == [3, 3]


def test_bad_input_is_refused() -> None:
    index = VectorIndex(space("flat"))
    with pytest.raises(ValueError, match="dimension 32"):
        index.add(items(0, 2), np.ones((2, 16), np.float32))
    with pytest.raises(ValueError, match="2 items but 3 vectors"):
        index.add(items(0, 2), clustered(3, 32))
    with pytest.raises(ValueError, match="NaN"):
        index.add(items(0, 1), np.full((1, 32), np.nan, np.float32))
    with pytest.raises(ValueError, match="unknown node labels"):
        index.add([VectorItem(node_id(0), "Entity", "a")], clustered(1, 32))
    with pytest.raises(ValueError, match="k must be"):
        index.search(clustered(1, 32), 0)


def test_two_nodes_with_one_vector_id_are_refused() -> None:
    index = VectorIndex(space("flat"))
    index.add(items(0, 1), clustered(1, 32))
    twin = node_id(0)[:16] + "f" * 16  # same first 63 bits, another node
    with pytest.raises(IdCollision, match="share vector id"):
        index.add([VectorItem(twin, "Chunk", "a")], clustered(1, 32))
    with pytest.raises(IdCollision):
        index.add(
            [VectorItem(node_id(1), "Chunk", "a"), VectorItem(node_id(1)[:16] + "0" * 16, "Row", "a")], clustered(2, 32)
        )


def test_small_batches_run_faiss_on_one_thread_and_restore_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []
    index = VectorIndex(space("flat"))
    index.add(items(0, 10), clustered(10, 32))
    real_search = index._index.search

    def spy(*args: object, **kwargs: object) -> object:
        seen.append(faiss.omp_get_max_threads())
        return real_search(*args, **kwargs)

    monkeypatch.setattr(index._index, "search", spy)
    faiss.omp_set_num_threads(2)
    index.search(clustered(1, 32), 3)
    index.search(clustered(SMALL_BATCH, 32), 3)
    assert seen == [1, 2] and faiss.omp_get_max_threads() == 2
