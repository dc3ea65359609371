"""The GPU search path (over-fetch, filter, translate positions to ids), run here with a CPU stand-in."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from apps.vectors import gpu
from apps.vectors._faiss import faiss
from apps.vectors.filtering import overfetch_search
from apps.vectors.ids import vector_id
from apps.vectors.index import VectorIndex
from apps.vectors.types import Ids
from tests.unit.vectors.fakes import clustered, items, node_id, space


class FakeGpuFaiss:
    """faiss as faiss-gpu with one GPU looks to apps.vectors.gpu; 'GPU' copies are CPU clones."""

    def __init__(self) -> None:
        self.copies: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(faiss, name)

    class StandardGpuResources:
        pass

    GpuClonerOptions = type("GpuClonerOptions", (), {"useFloat16": False})  # faiss's own spelling

    def get_num_gpus(self) -> int:
        return 1

    def index_cpu_to_gpu(self, resources: Any, device: int, index: Any, options: Any) -> Any:
        assert isinstance(resources, self.StandardGpuResources) and device == 0 and options.useFloat16
        self.copies.append(type(faiss.downcast_index(index)).__name__)
        return faiss.clone_index(index)


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGpuFaiss]:
    fake = FakeGpuFaiss()
    monkeypatch.setattr(gpu, "faiss", fake)
    gpu.gpu_available.cache_clear()
    yield fake
    gpu.gpu_available.cache_clear()


@pytest.mark.parametrize("index_type", ["flat", "ivfpq"])
def test_gpu_path_answers_like_the_cpu_path(fake_gpu: FakeGpuFaiss, index_type: str) -> None:
    data = clustered(300, 32)
    cpu = VectorIndex(space(index_type))
    on_gpu = VectorIndex(space(index_type, use_gpu=True))
    for index in (cpu, on_gpu):
        index.add(items(0, 150, collection="a") + items(150, 300, collection="b"), data)
    assert on_gpu.describe()["gpu"] is True and cpu.describe()["gpu"] is False
    queries = clustered(8, 32, seed=5)
    if index_type == "flat":
        assert on_gpu.search(queries, 5) == cpu.search(queries, 5)
    b_ids = {vector_id(node_id(i)) for i in range(150, 300)}
    for row in on_gpu.search(data[:8], 10, collections={"b"}):
        assert len(row) == 10 and {hit.id for hit in row} <= b_ids
    # one copy, reused until the index changes; a trained IVF index goes whole, a flat one out of its id map
    assert fake_gpu.copies == ["IndexIVFPQ" if index_type == "ivfpq" else "IndexFlatIP"]
    on_gpu.remove([vector_id(node_id(0))])
    assert vector_id(node_id(0)) not in {hit.id for hit in on_gpu.search(data[:1], 5)[0]}
    assert len(fake_gpu.copies) == 2


def test_hnsw_stays_on_the_cpu(fake_gpu: FakeGpuFaiss) -> None:
    index = VectorIndex(space("hnsw", use_gpu=True))
    index.add(items(0, 20), clustered(20, 32))
    index.search(clustered(1, 32), 3)
    assert fake_gpu.copies == [] and index.describe()["gpu"] is False


def test_each_thread_gets_its_own_gpu_resources(fake_gpu: FakeGpuFaiss) -> None:
    mine = gpu.thread_resources()
    assert gpu.thread_resources() is mine
    theirs: list[Any] = []
    thread = threading.Thread(target=lambda: theirs.append(gpu.thread_resources()))
    thread.start()
    thread.join()
    assert theirs and theirs[0] is not mine


def test_without_gpu_support_the_cpu_path_is_used() -> None:
    assert gpu.gpu_available() is False  # faiss-cpu here
    index = VectorIndex(space("flat", use_gpu=True))
    assert index.describe()["gpu"] is False


def test_overfetch_doubles_until_enough_allowed_ids_are_found() -> None:
    labels = np.arange(100, dtype=np.int64)[None, :]
    calls: list[int] = []

    def search(queries: np.ndarray, k: int) -> tuple[np.ndarray, Ids]:
        calls.append(k)
        return -np.arange(k, dtype=np.float32)[None, :], labels[:, :k]

    allowed = np.array([50, 60, 70, 80], dtype=np.int64)
    distances, found = overfetch_search(search, np.zeros((1, 4), np.float32), 3, allowed, total=100)
    assert found.tolist() == [[50, 60, 70]] and distances.tolist() == [[-50.0, -60.0, -70.0]]
    assert calls == [12, 24, 48, 96]
    _, found = overfetch_search(search, np.zeros((1, 4), np.float32), 3, np.array([5], np.int64), total=100)
    assert found.tolist() == [[5, -1, -1]]
