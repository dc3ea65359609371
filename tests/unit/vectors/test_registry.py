"""Each process's copy follows the shared store's feed: hosts with their own folders, snapshots that
shorten a restart, epochs that force a rebuild, a database that cannot be reached; and the service
functions on top."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest
from django.db import OperationalError

from apps.vectors import registry as registry_module
from apps.vectors.errors import IdCollision, IndexMismatch, StoreUnavailable
from apps.vectors.ids import vector_ids
from apps.vectors.index import VectorIndex
from apps.vectors.persistence import manifest_read
from apps.vectors.registry import SyncPolicy, VectorRegistry
from apps.vectors.services import vectors_add, vectors_info, vectors_remove, vectors_search
from apps.vectors.store import (
    store_add,
    store_changes,
    store_clear,
    store_head,
    store_prune,
    store_remove,
    store_renew,
)
from apps.vectors.types import HnswParams, VectorItem
from tests.unit.vectors.fakes import clustered, items, node_id, space

pytestmark = pytest.mark.django_db

CONFIG = space("flat")


def host(
    root: Path, *, interval: float = 0.0, min_vectors: int = 2048, index_type: str = "flat", **config: object
) -> VectorRegistry:
    """A registry as one process of one host would have it: its own folder for snapshots."""
    policy = SyncPolicy(interval=interval, stale_max=5.0, fraction=0.0, min_vectors=min_vectors)
    return VectorRegistry(root, lambda name: space(index_type, **config), policy)  # type: ignore[arg-type]


def write(start: int, stop: int, *, seed: int = 0, collection: str = "a") -> None:
    batch = items(start, stop, collection=collection)
    store_add(CONFIG, vector_ids(item.node_id for item in batch), batch, clustered(stop - start, 32, seed=seed))


def remove(*indices: int) -> int:
    return store_remove(CONFIG, vector_ids(node_id(i) for i in indices))


def test_nothing_stored_yet_gives_an_empty_copy(tmp_path: Path) -> None:
    index = host(tmp_path).get("text")
    assert index.count == 0
    assert index.search(clustered(1, 32), 3) == [[]]


def test_two_hosts_follow_one_feed_additions_replacements_and_removals(tmp_path: Path) -> None:
    a, b = host(tmp_path / "a"), host(tmp_path / "b")
    assert a.get("text").count == 0
    write(0, 10)
    assert a.get("text").count == 10 and b.get("text").count == 10
    write(5, 12, seed=1)  # five replaced, two new
    assert remove(0, 1, 99) == 2
    for copy in (a.get("text"), b.get("text")):
        assert copy.count == 10
        assert node_id(0) not in {entry.node_id for entry in copy.entries(copy.ids().tolist()) if entry}
    data = clustered(7, 32, seed=1)
    [hits] = a.get("text").search(data[:1], 1)
    assert a.get("text").entries([hits[0].id])[0] == VectorItem(node_id(5), "Chunk", "a")
    assert a.position("text") == b.position("text") == (store_head("text").epoch, 3)


def test_a_copy_looks_at_the_feed_once_per_interval(tmp_path: Path) -> None:
    reader = host(tmp_path, interval=3600)
    assert reader.get("text").count == 0
    write(0, 4)
    assert reader.get("text").count == 0  # looked less than an interval ago
    reader.changed("text")  # a write of this process: look at once
    assert reader.get("text").count == 4


def test_a_restart_starts_from_the_local_snapshot_and_applies_only_what_follows(tmp_path: Path) -> None:
    first = host(tmp_path, min_vectors=5)
    write(0, 8)
    assert first.get("text").count == 8  # 8 changed vectors >= 5: a snapshot at change 1
    saved = manifest_read(tmp_path / "text")
    assert (saved.seq, saved.count, saved.epoch) == (1, 8, store_head("text").epoch)
    write(8, 10)
    remove(0)
    restarted = host(tmp_path, min_vectors=5)
    index = restarted.get("text")
    assert index.version == saved.version  # loaded from the snapshot, then changes 2 and 3 applied
    assert index.count == 9 and restarted.position("text") == (saved.epoch, 3)


def test_a_new_epoch_or_a_pruned_feed_rebuilds_the_copy_from_the_store(tmp_path: Path) -> None:
    first = host(tmp_path, min_vectors=1)
    write(0, 6)
    assert first.get("text").count == 6
    store_renew()  # a restored database: the local snapshot is not trusted
    write(6, 7)
    fresh = host(tmp_path, min_vectors=10**6)
    assert fresh.get("text").count == 7 and fresh.get("text").version == 0  # built from the rows
    assert first.get("text").count == 7 and first.position("text") == fresh.position("text")

    behind = host(tmp_path / "behind")
    assert behind.get("text").count == 7
    remove(6)
    write(10, 11)
    store_prune("text", below=store_head("text").seq)  # the removal's tombstone is gone
    assert behind.get("text").count == 7 and node_id(6) not in {
        e.node_id for e in behind.get("text").entries(behind.get("text").ids().tolist()) if e
    }

    store_clear(CONFIG)  # a rebuild empties the store under a new epoch
    assert first.get("text").count == 0


def test_an_unreachable_database_is_tolerated_for_stale_max_then_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reader = host(tmp_path)
    write(0, 3)
    assert reader.get("text").count == 3

    def down(space: str) -> None:
        raise OperationalError("connection refused")

    monkeypatch.setattr(registry_module, "store_head", down)
    assert reader.get("text").count == 3  # within stale_max: the copy as it is
    clock = time.monotonic() + 60
    monkeypatch.setattr(time, "monotonic", lambda: clock)
    with pytest.raises(StoreUnavailable, match="cannot be reached"):
        reader.get("text")


def test_a_thread_keeps_searching_while_another_applies_changes(tmp_path: Path) -> None:
    reader = host(tmp_path)
    write(0, 10)
    first = reader.get("text")
    write(10, 12)
    lock = reader._lock("text")
    lock.acquire()  # another thread is applying the feed
    try:
        got: list[VectorIndex] = []
        thread = threading.Thread(target=lambda: got.append(reader.get("text")))
        thread.start()
        thread.join(timeout=5)
        assert got == [first] and first.count == 10
    finally:
        lock.release()
    assert reader.get("text").count == 12


def test_a_model_change_is_refused_with_the_fix(tmp_path: Path) -> None:
    write(0, 3)
    changed = host(tmp_path, model="new-model")
    with pytest.raises(IndexMismatch, match=r"manage\.py vectors rebuild"):
        changed.get("text")
    with pytest.raises(IndexMismatch, match=r"manage\.py vectors rebuild"):
        store_add(space("flat", model="new-model"), vector_ids([node_id(5)]), items(5, 6), clustered(1, 32))
    assert store_head("text").seq == 1  # the refused write took no sequence number


def test_services_add_search_remove(vectors_dir: Path) -> None:
    data = clustered(40, 32)
    vectors_add(space="text", items=items(0, 20, collection="a") + items(20, 40, collection="b"), vectors=data)
    [matches] = vectors_search(space="text", queries=data[25], k=3, collections={"b"})
    assert matches[0][:3] == (node_id(25), "Chunk", "b") and matches[0].score == pytest.approx(1.0, abs=1e-5)
    assert all(match.collection == "b" for match in matches)
    assert vectors_remove(space="text", node_ids=[node_id(25), "unknown-node"]) == 1
    [matches] = vectors_search(space="text", queries=data[25], k=3)
    assert node_id(25) not in {match.node_id for match in matches}
    assert vectors_remove(space="text", node_ids=[node_id(25)]) == 0
    assert store_head("text").seq == 2  # nothing removed, no change


def test_services_refuse_two_nodes_with_one_vector_id(vectors_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    vectors_add(space="text", items=items(0, 1), vectors=clustered(1, 32))
    monkeypatch.setattr("apps.vectors.services.vector_ids", lambda ids: np.array([vector_ids([node_id(0)])[0]]))
    with pytest.raises(IdCollision, match="share vector id"):
        vectors_add(space="text", items=items(1, 2), vectors=clustered(1, 32))


def test_services_info(vectors_dir: Path) -> None:
    vectors_add(space="text", items=items(0, 4, collection="a", label="Row"), vectors=clustered(4, 32))
    info = vectors_info(space="text")
    assert info["count"] == 4 and info["index_type"] == "flat" and info["collections"] == {"a": 4}
    assert info["labels"] == {"Row": 4} and info["gpu"] is False
    assert info["feed"]["seq"] == 1 and info["feed"]["stored"] == 4 and info["copy_seq"] == 1


def test_unknown_spaces_are_refused(vectors_dir: Path) -> None:
    with pytest.raises(ValueError, match="unknown embedding space"):
        vectors_search(space="audio", queries=clustered(1, 32), k=1)


def test_long_id_lists_are_read_and_removed_in_chunks(vectors_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("apps.vectors.store.IN_CHUNK", 3)
    vectors_add(space="text", items=items(0, 10), vectors=clustered(10, 32))
    assert vectors_remove(space="text", node_ids=[node_id(i) for i in range(8)]) == 8
    assert store_head("text").seq == 2 and vectors_search(space="text", queries=clustered(1, 32), k=5)[0]
    assert {match.node_id for match in vectors_search(space="text", queries=clustered(10, 32), k=10)[0]} == {
        node_id(8),
        node_id(9),
    }


def test_a_prune_while_a_copy_catches_up_makes_it_build_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reader = host(tmp_path)
    write(0, 4)
    assert reader.get("text").count == 4  # at change 1
    remove(0)
    write(4, 5)
    real = store_changes

    def pruned_meanwhile(space: str, **kwargs: object) -> object:
        batches = list(real(space, **kwargs))  # type: ignore[arg-type]
        store_prune("text", below=store_head("text").seq)  # another process prunes during the read
        return iter(batches)

    monkeypatch.setattr(registry_module, "store_changes", pruned_meanwhile)
    reader.get("text")
    assert reader.position("text") == (store_head("text").epoch, -1)  # marked to build again
    monkeypatch.setattr(registry_module, "store_changes", real)
    index = reader.get("text")
    assert index.count == 4 and node_id(0) not in {e.node_id for e in index.entries(index.ids().tolist()) if e}


def test_the_feed_is_read_in_change_order_a_page_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("apps.vectors.store.FETCH_ROWS", 3)
    write(0, 5)  # change 1
    write(5, 12, seed=1)  # change 2
    remove(1, 6)  # change 3
    write(0, 1, seed=2)  # change 4: node 0 written again
    batches = list(store_changes("text", after=0, upto=store_head("text").seq))
    assert all(len(batch.ids) + len(batch.removed) <= 3 for batch in batches)
    seen = [vid for batch in batches for vid in [*batch.ids.tolist(), *batch.removed.tolist()]]
    assert sorted(seen) == sorted(vector_ids(node_id(i) for i in range(12)).tolist())  # each row once
    removed = {vid for batch in batches for vid in batch.removed.tolist()}
    assert removed == set(vector_ids([node_id(1), node_id(6)]).tolist())
    assert batches[-1].ids.tolist()[-1] == vector_ids([node_id(0)])[0]  # change 4 comes last
    later = list(store_changes("text", after=2, upto=3))  # only change 3's rows
    assert [vid for batch in later for vid in batch.removed.tolist()] and not any(b.ids.size for b in later)


def test_a_snapshot_of_another_hnsw_storage_is_saved_again_as_configured_on_start(tmp_path: Path) -> None:
    def hnsw(storage: str) -> HnswParams:
        return HnswParams(m=16, ef_construction=40, ef_search=32, storage=storage)

    host(tmp_path, min_vectors=5, index_type="hnsw", hnsw=hnsw("flat")).get("text")
    write(0, 8)
    host(tmp_path, min_vectors=5, index_type="hnsw", hnsw=hnsw("flat")).get("text")  # a float32 snapshot
    saved = manifest_read(tmp_path / "text")
    index = host(tmp_path, min_vectors=5, index_type="hnsw", hnsw=hnsw("fp16")).get("text")
    assert index.converted and index.describe()["storage"] == "fp16" and index.count == 8
    again = manifest_read(tmp_path / "text")
    assert again.version == saved.version + 1 and again.seq == saved.seq
    reloaded = VectorIndex.load(tmp_path / "text", space("hnsw", hnsw=hnsw("fp16")))
    assert not reloaded.converted and reloaded.describe()["storage"] == "fp16"
