"""Saving and loading: round trips, atomicity under a crash, corrupt and missing files, model changes."""

from __future__ import annotations

import dataclasses
import json
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from apps.core.files import file_sha256
from apps.vectors.errors import IndexCorrupt, IndexMismatch, IndexMissing
from apps.vectors.ids import vector_id
from apps.vectors.index import VectorIndex
from apps.vectors.types import HnswParams
from tests.support import BASE_DIR
from tests.unit.vectors.fakes import clustered, items, node_id, space


def saved(directory: Path, index_type: str = "flat", n: int = 200) -> VectorIndex:
    index = VectorIndex(space(index_type))
    index.add(items(0, n), clustered(n, 32))
    index.save(directory)
    return index


@pytest.mark.parametrize("index_type", ["flat", "hnsw", "ivfpq"])
def test_a_saved_index_loads_with_the_same_answers(tmp_path: Path, index_type: str) -> None:
    index = saved(tmp_path, index_type)
    index.remove([vector_id(node_id(3))])  # HNSW: a tombstone, saved with the index
    index.save(tmp_path)
    loaded = VectorIndex.load(tmp_path, space(index_type))
    queries = clustered(5, 32, seed=1)
    assert loaded.search(queries, 5) == index.search(queries, 5)
    assert (loaded.count, loaded.tombstones, loaded.version) == (index.count, index.tombstones, 2)
    assert loaded.trained == (index_type == "ivfpq")
    assert loaded.entries([vector_id(node_id(4))]) == index.entries([vector_id(node_id(4))])


def test_the_manifest_describes_the_snapshot(tmp_path: Path) -> None:
    saved(tmp_path, "hnsw")
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["dimension"] == 32 and manifest["index_type"] == "hnsw" and manifest["model"] == "fake-model"
    assert manifest["count"] == 200 and manifest["version"] == 1 and len(manifest["index_sha256"]) == 64
    assert (tmp_path / manifest["index_file"]).exists() and (tmp_path / manifest["sidecar_file"]).exists()


def test_only_the_current_and_previous_snapshots_are_kept(tmp_path: Path) -> None:
    index = saved(tmp_path)
    for _ in range(3):
        index.save(tmp_path)
    names = sorted(path.name for path in tmp_path.iterdir())
    assert names == ["index.3.faiss", "index.4.faiss", "manifest.json", "sidecar.3.npz", "sidecar.4.npz"]


def test_a_crash_between_writing_and_renaming_leaves_the_previous_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = saved(tmp_path)
    index.add(items(200, 300), clustered(100, 32, seed=2))
    real_replace = Path.replace

    def crash_on_manifest(self: Path, target: Path) -> Path:
        if Path(target).name == "manifest.json":
            raise OSError("simulated crash before the manifest is renamed")
        return real_replace(self, target)

    monkeypatch.setattr(Path, "replace", crash_on_manifest)
    with pytest.raises(OSError, match="simulated crash"):
        index.save(tmp_path)
    monkeypatch.undo()
    loaded = VectorIndex.load(tmp_path, space("flat"))
    assert (loaded.version, loaded.count) == (1, 200)


CHILD = """
import os, signal, sys
from pathlib import Path
sys.path.insert(0, {base!r})
from apps.vectors import persistence
from apps.vectors.index import VectorIndex
from tests.unit.vectors.fakes import clustered, items, space

directory, victim = Path({directory!r}), {victim!r}
index = VectorIndex.load(directory, space("hnsw"))
index.add(items(200, 400), clustered(200, 32, seed=3))
real_fsync = persistence.fsync_path

def fsync_then_die(path):
    real_fsync(path)
    if path.name.startswith("." + victim):  # the temporary file is complete and synced: die before the rename
        os.kill(os.getpid(), signal.SIGKILL)

persistence.fsync_path = fsync_then_die
index.save(directory)
"""


@pytest.mark.parametrize("victim", ["index.", "sidecar.", "manifest.json"])
def test_a_writer_killed_mid_save_leaves_the_previous_version_loadable(tmp_path: Path, victim: str) -> None:
    saved(tmp_path, "hnsw")
    script = CHILD.format(base=str(BASE_DIR), directory=str(tmp_path), victim=victim)
    child = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert any(path.name.endswith(".tmp") for path in tmp_path.iterdir())  # what the killed writer left
    loaded = VectorIndex.load(tmp_path, space("hnsw"))
    assert (loaded.version, loaded.count) == (1, 200)
    loaded.save(tmp_path)  # the next save clears the leftovers
    assert not any(path.name.endswith(".tmp") for path in tmp_path.iterdir())


LOOP = """
import sys
from pathlib import Path
sys.path.insert(0, {base!r})
from apps.vectors.index import VectorIndex
from tests.unit.vectors.fakes import clustered, items, space

directory = Path({directory!r})
index = VectorIndex.load(directory, space("flat", dim=256))
for round in range(1000):
    index.add(items(20_000 + round * 500, 20_500 + round * 500), clustered(500, 256, seed=round))
    index.save(directory)
    print(round, flush=True)
"""


def test_sigkill_at_random_moments_of_repeated_saves_never_breaks_the_index(tmp_path: Path) -> None:
    index = VectorIndex(space("flat", dim=256))
    index.add(items(0, 20_000), clustered(20_000, 256))
    index.save(tmp_path)
    rng = np.random.default_rng(7)
    for _ in range(4):
        child = subprocess.Popen(
            [sys.executable, "-c", LOOP.format(base=str(BASE_DIR), directory=str(tmp_path))],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        child.stdout.readline()  # it has saved at least once: saves are under way
        try:
            child.wait(timeout=float(rng.uniform(0.05, 0.6)))
        except subprocess.TimeoutExpired:
            child.send_signal(signal.SIGKILL)
            child.wait()
        assert child.returncode == -signal.SIGKILL
        loaded = VectorIndex.load(tmp_path, space("flat", dim=256))
        assert loaded.count >= 20_000 and loaded.count % 500 == 0


def test_no_saved_index_is_reported_as_missing(tmp_path: Path) -> None:
    with pytest.raises(IndexMissing, match="no saved vector index"):
        VectorIndex.load(tmp_path / "never-saved", space("flat"))


def test_a_missing_index_file_is_reported(tmp_path: Path) -> None:
    saved(tmp_path)
    (tmp_path / "index.1.faiss").unlink()
    with pytest.raises(IndexCorrupt, match=r"index\.1\.faiss is missing; run `manage.py vectors rebuild`"):
        VectorIndex.load(tmp_path, space("flat"))


def test_a_damaged_index_file_fails_its_checksum(tmp_path: Path) -> None:
    saved(tmp_path)
    path = tmp_path / "index.1.faiss"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(IndexCorrupt, match="fails its checksum"):
        VectorIndex.load(tmp_path, space("flat"))


def test_an_unreadable_file_with_a_matching_checksum_is_corrupt_too(tmp_path: Path) -> None:
    saved(tmp_path)
    path = tmp_path / "index.1.faiss"
    path.write_bytes(b"not a faiss index")
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    manifest["index_sha256"] = file_sha256(path)
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexCorrupt, match="faiss cannot read"):
        VectorIndex.load(tmp_path, space("flat"))


def test_a_damaged_manifest_is_corrupt(tmp_path: Path) -> None:
    saved(tmp_path)
    (tmp_path / "manifest.json").write_text('{"version": ')
    with pytest.raises(IndexCorrupt, match=r"manifest\.json is unreadable"):
        VectorIndex.load(tmp_path, space("flat"))


def test_a_dimension_change_names_the_rebuild_command(tmp_path: Path) -> None:
    saved(tmp_path)
    with pytest.raises(IndexMismatch) as error:
        VectorIndex.load(tmp_path, space("flat", dim=64))
    message = str(error.value)
    assert "32-d vectors" in message and "64-d" in message
    assert "manage.py vectors rebuild --space text" in message


def test_a_model_change_names_the_rebuild_command(tmp_path: Path) -> None:
    saved(tmp_path)
    with pytest.raises(IndexMismatch, match=r"'fake-model'.*'other-model'.*manage\.py vectors rebuild"):
        VectorIndex.load(tmp_path, space("flat", model="other-model"))


def test_an_index_saved_as_another_type_loads_as_saved(tmp_path: Path) -> None:
    saved(tmp_path, "hnsw")
    loaded = VectorIndex.load(tmp_path, space("flat"))
    assert loaded.index_type == "hnsw" and loaded.count == 200


@pytest.mark.parametrize(("saved_as", "wanted"), [("flat", "fp16"), ("fp16", "flat")])
def test_hnsw_saved_with_other_storage_is_converted_on_load_with_the_same_answers(
    tmp_path: Path, saved_as: str, wanted: str
) -> None:
    config = space("hnsw", hnsw=HnswParams(m=16, ef_construction=40, ef_search=32, storage=saved_as))
    index = VectorIndex(config)
    data = clustered(200, 32)
    index.add(items(0, 200), data)
    index.save(tmp_path)
    loaded = VectorIndex.load(
        tmp_path, dataclasses.replace(config, hnsw=dataclasses.replace(config.hnsw, storage=wanted))
    )
    assert (loaded.describe()["storage"], loaded.count) == (wanted, 200)
    before, after = index.search(data[:20], 5), loaded.search(data[:20], 5)
    assert [{hit.id for hit in row} for row in before] == [{hit.id for hit in row} for row in after]  # ties may swap
    assert np.allclose([[h.score for h in row] for row in before], [[h.score for h in row] for row in after], atol=1e-3)
    fp16, flat = (loaded, index) if wanted == "fp16" else (index, loaded)
    assert fp16.memory()["vectors"] * 2 == flat.memory()["vectors"] == 200 * 32 * 4
    loaded.add(items(200, 201), clustered(1, 32, seed=5))  # the converted index takes changes
    loaded.remove([vector_id(node_id(0))])
    assert loaded.count == 200 and loaded.search(clustered(1, 32, seed=5), 1)[0][0].id == vector_id(node_id(200))
