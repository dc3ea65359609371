"""The per-process registry and the service functions: lazy loading, readers reloading, one writer."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from apps.vectors.config import space_config
from apps.vectors.errors import IndexMismatch
from apps.vectors.ids import vector_id
from apps.vectors.index import VectorIndex
from apps.vectors.registry import VectorRegistry
from apps.vectors.services import vectors_add, vectors_info, vectors_remove, vectors_search
from tests.unit.vectors.fakes import clustered, items, node_id, space


def registry(root: Path, index_type: str = "flat") -> VectorRegistry:
    return VectorRegistry(root, lambda name: space(index_type))


def test_nothing_saved_yet_gives_an_empty_index(tmp_path: Path) -> None:
    index = registry(tmp_path).get("text")
    assert index.count == 0 and index.version == 0
    assert index.search(clustered(1, 32), 3) == [[]]


def test_a_reader_reloads_when_a_writer_saves_a_new_version(tmp_path: Path) -> None:
    writer, reader = registry(tmp_path), registry(tmp_path)  # as if in two processes
    with writer.writing("text") as index:
        index.add(items(0, 10), clustered(10, 32))
        writer.save("text", index)
    first = reader.get("text")
    assert (first.count, first.version) == (10, 1)
    assert reader.get("text") is first  # unchanged on disk: the same object, one stat
    with writer.writing("text") as index:
        index.add(items(10, 30), clustered(20, 32, seed=1))
        writer.save("text", index)
    second = reader.get("text")
    assert second is not first and (second.count, second.version) == (30, 2)


def test_a_writer_starts_from_the_latest_save_of_another_process(tmp_path: Path) -> None:
    one, two = registry(tmp_path), registry(tmp_path)
    with one.writing("text") as index:
        index.add(items(0, 5), clustered(5, 32))
        one.save("text", index)
    with two.writing("text") as index:
        index.add(items(5, 8), clustered(3, 32, seed=1))
        two.save("text", index)
    with one.writing("text") as index:
        assert index.count == 8 and index.version == 2


def test_a_reader_keeps_its_index_when_the_new_version_is_broken(tmp_path: Path) -> None:
    writer, reader = registry(tmp_path), registry(tmp_path)
    with writer.writing("text") as index:
        index.add(items(0, 10), clustered(10, 32))
        writer.save("text", index)
        first = reader.get("text")
        index.add(items(10, 20), clustered(10, 32, seed=1))
        writer.save("text", index)
    (tmp_path / "text" / "index.2.faiss").write_bytes(b"broken")
    assert reader.get("text") is first


def test_a_reader_thread_keeps_searching_while_another_reloads(tmp_path: Path) -> None:
    writer, reader = registry(tmp_path), registry(tmp_path)
    with writer.writing("text") as index:
        index.add(items(0, 10), clustered(10, 32))
        writer.save("text", index)
    first = reader.get("text")
    index.add(items(10, 20), clustered(10, 32, seed=1))
    writer.save("text", index)
    lock = reader._lock("text")
    lock.acquire()  # another thread is loading the new version
    try:
        got: list[VectorIndex] = []
        thread = threading.Thread(target=lambda: got.append(reader.get("text")))
        thread.start()
        thread.join(timeout=5)
        assert got == [first]
    finally:
        lock.release()
    assert reader.get("text").version == 2


def test_a_model_change_stops_the_reader_with_the_fix(tmp_path: Path) -> None:
    with registry(tmp_path).writing("text") as index:
        index.add(items(0, 3), clustered(3, 32))
        index.save(tmp_path / "text")
    changed = VectorRegistry(tmp_path, lambda name: space("flat", model="new-model"))
    with pytest.raises(IndexMismatch, match=r"manage\.py vectors rebuild"):
        changed.get("text")


def test_services_add_search_remove(vectors_dir: Path) -> None:
    data = clustered(40, 32)
    vectors_add(space="text", items=items(0, 20, collection="a") + items(20, 40, collection="b"), vectors=data)
    [matches] = vectors_search(space="text", queries=data[25], k=3, collections={"b"})
    assert matches[0][:3] == (node_id(25), "Chunk", "b") and matches[0].score == pytest.approx(1.0, abs=1e-5)
    assert all(match.collection == "b" for match in matches)
    assert vectors_remove(space="text", node_ids=[node_id(25), "unknown-node"]) == 1
    [matches] = vectors_search(space="text", queries=data[25], k=3)
    assert node_id(25) not in {match.node_id for match in matches}
    assert VectorIndex.load(vectors_dir / "text", space_config("text")).count == 40  # the snapshot: v1
    saved = VectorRegistry(vectors_dir, space_config).get("text")  # v1 and its journal
    assert saved.count == 39 and saved.version == 1


def test_services_info(vectors_dir: Path) -> None:
    vectors_add(space="text", items=items(0, 4, collection="a", label="Row"), vectors=clustered(4, 32))
    info = vectors_info(space="text")
    assert info["count"] == 4 and info["index_type"] == "flat" and info["collections"] == {"a": 4}
    assert info["labels"] == {"Row": 4} and info["saved"]["version"] == 1 and info["gpu"] is False


def test_unknown_spaces_are_refused(vectors_dir: Path) -> None:
    with pytest.raises(ValueError, match="unknown embedding space"):
        vectors_search(space="audio", queries=clustered(1, 32), k=1)


def test_vector_ids_in_services_follow_node_ids(vectors_dir: Path) -> None:
    vectors_add(space="text", items=items(0, 2), vectors=clustered(2, 32))
    index = VectorIndex.load(vectors_dir / "text", space_config("text"))
    assert index.ids().tolist() == sorted([vector_id(node_id(0)), vector_id(node_id(1))])
